"""Undo run's plain parts without QGIS: comparing two project states, keeping them as JSON, the approval notes."""

from __future__ import annotations

import json
from dataclasses import replace

from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.project_snapshot import (
    EditState,
    LayerState,
    ProjectSnapshot,
    ViewState,
    blocking_changes,
    run_changes,
    soft_changes,
    style_digest,
)
from geogpt_qgis.core.undo_scope import NOT_UNDONE, undo_notes, with_undo_notes

ROADS = LayerState("roads_1", "roads", "aaa", "<style/>", (1, 2), EditState(), "/data/town.gpkg")
PARKS = LayerState("parks_2", "parks", "bbb", "<style/>", (), EditState(), "/data/town.gpkg")
VIEW = ViewState(0.0, 0.0, 1000.0, 500.0, "EPSG:25832")


def tree(*ids: str) -> tuple:
    return ("group", "", True, tuple(("layer", ident, True) for ident in ids))


BEFORE = ProjectSnapshot((ROADS, PARKS), tree("roads_1", "parks_2"), "<tree/>", None, "EPSG:25832", VIEW)


def test_undo_run_lists_each_kind_of_change_a_run_made():
    added = LayerState("buffer_3", "buffer", "ccc", source="/tmp/results.gpkg")
    after = ProjectSnapshot(
        (replace(ROADS, name="streets", style_digest="zzz", selection=(5,), edits=EditState(True, 2, 2)), added),
        tree("buffer_3", "roads_1"),
        crs="EPSG:4326",
        view=replace(VIEW, xmax=2000.0),
    )
    assert run_changes(BEFORE, after) == [
        "added layer 'buffer'",
        "renamed layer 'roads' to 'streets'",
        "changed the style or labels of 'streets'",
        "changed the selection in 'streets'",
        "edited features of 'streets'",
        "removed layer 'parks'",
        "changed the project CRS from EPSG:25832 to EPSG:4326",
        "moved the map",
    ]  # the tree holds the layers both share in the same order: adding and removing is said, not "moved"
    moved = replace(BEFORE, tree=tree("parks_2", "roads_1"))
    assert run_changes(BEFORE, moved) == ["changed the layer tree (order, groups or visibility)"]
    assert run_changes(BEFORE, BEFORE) == []


def test_undo_run_is_blocked_by_what_the_user_changed_since_but_not_by_the_view_or_a_selection():
    panned = replace(BEFORE, view=replace(VIEW, xmin=100.0), layers=(replace(ROADS, selection=(9,)), PARKS))
    assert blocking_changes(BEFORE, panned) == []
    assert soft_changes(BEFORE, panned) == ["the map was moved", "the selection in 'roads' changed"]
    saved = replace(BEFORE, layers=(ROADS, replace(PARKS, edits=EditState(False, 0, 0), style_digest="new")))
    assert blocking_changes(replace(BEFORE, layers=(ROADS, replace(PARKS, edits=EditState(True, 1, 1)))), saved) == [
        "the style or labels of 'parks' changed",
        "the edits of 'parks' changed (saved, discarded or edited further)",
    ]
    assert blocking_changes(BEFORE, replace(BEFORE, tree=tree("parks_2", "roads_1"))) == [
        "the layer tree changed (order, groups or visibility)"
    ]


def test_undo_run_view_compares_within_a_pixel_sized_tolerance():
    assert VIEW.close_to(replace(VIEW, xmax=1000.0 + 1e-7))
    assert not VIEW.close_to(replace(VIEW, xmax=1001.0))
    assert not VIEW.close_to(replace(VIEW, crs="EPSG:4326"))
    assert not VIEW.close_to(None)


def test_undo_run_snapshot_survives_json():
    text = json.dumps(BEFORE.to_dict())
    assert ProjectSnapshot.from_dict(json.loads(text)) == BEFORE


def test_undo_run_notes_for_what_it_cannot_take_back():
    assert undo_notes([Effect.READ, Effect.CHANGE_PROJECT, Effect.EDIT_DATA, Effect.ADD_LAYER]) == []
    assert undo_notes([Effect.WRITE_DATABASE]) == [NOT_UNDONE[Effect.WRITE_DATABASE]]
    assert "database" in NOT_UNDONE[Effect.WRITE_DATABASE] and "Undo run" in NOT_UNDONE[Effect.WRITE_DATABASE]
    both = with_undo_notes(["estimated 3 rows"], [Effect.WRITE_FILE, Effect.WRITE_DATABASE, Effect.WRITE_FILE])
    assert both == ["estimated 3 rows", NOT_UNDONE[Effect.WRITE_FILE], NOT_UNDONE[Effect.WRITE_DATABASE]]
    assert with_undo_notes(both, [Effect.WRITE_FILE, Effect.WRITE_DATABASE]) == both  # previewed again: once each


def test_undo_run_portable_style_digest_ignores_attribute_order_nested_xml_included():
    symbol_a = "&lt;symbol type=&quot;line&quot; alpha=&quot;1&quot;/&gt;"
    symbol_b = "&lt;symbol alpha=&quot;1&quot; type=&quot;line&quot;/&gt;"
    one = f"<!DOCTYPE qgis><qgis a='1' b='2'><x v=\"{symbol_a}\" k='n'>t</x></qgis>"
    two = f"<!DOCTYPE qgis><qgis b='2' a='1'><x k='n' v=\"{symbol_b}\">t</x></qgis>"
    assert style_digest(one, portable=True) == style_digest(two, portable=True)
    assert style_digest(one) != style_digest(two)  # in one process the text itself is compared (fast)
    other = two.replace("alpha=&quot;1&quot;", "alpha=&quot;0.5&quot;")
    assert style_digest(other, portable=True) != style_digest(two, portable=True)
