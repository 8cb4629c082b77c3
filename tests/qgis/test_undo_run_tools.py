"""Undo run after each kind of change, made by the real tools through the toolkit on the demo town.

Each test takes the state before (``RunUndo.start``), runs tool calls as the
agent runs them (``Toolkit.run`` on a worker thread, approved where the tool is
gated), ends the run, undoes it, and checks the project against what was read
before the run: from QGIS for names, tree, styles and selections, and from the
GeoPackage with sqlite3 for saved data, so an undo that only looked right in
QGIS would be caught.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qgis.core import QgsVectorLayer

from geogpt_qgis.agent.toolkit import Toolkit, ToolOutcome
from geogpt_qgis.core.approval import APPROVE, Decision
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.project_snapshot import ProjectSnapshot
from geogpt_qgis.core.undo_scope import NOT_UNDONE
from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.project import run_snapshot
from geogpt_qgis.tools.project.run_undo import RunUndo
from geogpt_qgis.tools.registry import build_families
from tests.support.runs import call_in_thread

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _toolkit(ctx: ToolContext) -> Toolkit:
    return Toolkit([tool for family in build_families(ctx) for tool in family.tools()])


@pytest.fixture
def town(tool_ctx) -> Iterator[tuple[ToolContext, Toolkit]]:
    """The demo town with QGIS's window (``qgis_iface``): edits to files stay in the edit buffer."""
    yield tool_ctx, _toolkit(tool_ctx)
    for layer in tool_ctx.project.mapLayers().values():
        if isinstance(layer, QgsVectorLayer) and layer.isEditable():
            layer.rollBack()


@pytest.fixture
def headless_town(demo_project, bridge) -> tuple[ToolContext, Toolkit]:
    """The demo town without a window: edits are saved at once, as on the command line."""
    ctx = ToolContext(project=demo_project, bridge=bridge, iface=None)
    return ctx, _toolkit(ctx)


def run(toolkit: Toolkit, name: str, args: dict[str, Any]) -> ToolOutcome:
    """One call as the agent makes it; a gated call is approved first, bound to its preview's targets."""

    async def call() -> ToolOutcome:
        request = await toolkit.approval_request("call-1", name, args)
        if isinstance(request, ToolOutcome):
            return request
        decision = Decision(APPROVE) if request is not None else None
        return await toolkit.run(name, args, decision, request)

    outcome = call_in_thread(lambda: asyncio.run(call()))
    assert outcome.ok, outcome.text
    return outcome


def ran(ctx: ToolContext, toolkit: Toolkit, *calls: tuple[str, dict[str, Any]]) -> RunUndo:
    """The undo of a run that made ``calls``; the run is finished (its after-state taken)."""
    canvas = ctx.iface.mapCanvas() if ctx.iface is not None else None
    undo = RunUndo.start(ctx.project, canvas)
    for name, args in calls:
        run(toolkit, name, args)
    assert undo.finish(), "the run changed nothing"
    return undo


def compared(snapshot: ProjectSnapshot) -> tuple[Any, ...]:
    """What an undo must give back exactly (the XML kept only for restoring aside)."""
    layers = tuple((s.ident, s.name, s.style_digest, s.selection, s.edits) for s in snapshot.layers)
    return layers, snapshot.tree, snapshot.custom_order, snapshot.crs


def names_top_down(project) -> list[str]:
    return [layer.name() for layer in project.layerTreeRoot().layerOrder()]


def test_undo_run_removes_a_layer_the_run_added_and_says_its_data_stays(town):
    ctx, toolkit = town
    project = ctx.project
    before = set(project.mapLayers())
    undo = ran(
        ctx,
        toolkit,
        ("run_algorithm", {"algorithm": "native:buffer", "parameters": {"INPUT": "schools", "DISTANCE": 100}}),
    )
    added = [layer for ident, layer in project.mapLayers().items() if ident not in before]
    assert len(added) == 1 and added[0].featureCount() == 31
    name = added[0].name()
    assert undo.changes() == [f"added layer {name!r}"]
    lines = undo.undo()
    assert set(project.mapLayers()) == before
    assert any(line.startswith(f"removed layer {name!r} (added by the run; its data stays in") for line in lines)
    assert compared(run_snapshot.take(project, ctx.iface.mapCanvas())) == compared(undo.before)


def test_undo_run_adds_back_a_removed_layer_where_it_was_with_its_style(town):
    ctx, toolkit = town
    project = ctx.project
    order = names_top_down(project)
    roads = project.mapLayersByName("roads")[0]
    ident, count, style = roads.id(), roads.featureCount(), run_snapshot.style_xml(roads)
    undo = ran(ctx, toolkit, ("set_layer", {"layer": "roads", "remove": True}))
    assert project.mapLayer(ident) is None
    assert undo.changes() == ["removed layer 'roads'"]
    lines = undo.undo()
    back = project.mapLayer(ident)
    assert back is not None and back.isValid() and back.featureCount() == count
    assert run_snapshot.style_xml(back) == style
    assert names_top_down(project) == order
    assert "added layer 'roads' back" in lines
    assert compared(run_snapshot.take(project, ctx.iface.mapCanvas())) == compared(undo.before)


def test_undo_run_gives_a_removed_temporary_layer_its_features_back(town):
    ctx, toolkit = town
    project = ctx.project
    scratch = QgsVectorLayer("Point?crs=EPSG:25832&field=name:string", "scratch", "memory")
    scratch.dataProvider().addFeatures([_point(scratch, name, x) for name, x in (("a", 571000), ("b", 571100))])
    project.addMapLayer(scratch)
    ident = scratch.id()
    undo = ran(ctx, toolkit, ("set_layer", {"layer": "scratch", "remove": True}))
    lines = undo.undo()
    back = project.mapLayer(ident)
    assert sorted(f["name"] for f in back.getFeatures()) == ["a", "b"]
    assert "gave 'scratch' its 2 features back" in lines


def _point(layer: QgsVectorLayer, name: str, x: float):
    from qgis.core import QgsFeature, QgsGeometry, QgsPointXY

    feature = QgsFeature(layer.fields())
    feature.setAttributes([name])
    feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(x, 6641000)))
    return feature


def test_undo_run_renames_moves_and_shows_layers_back_into_place(town):
    ctx, toolkit = town
    project = ctx.project
    order = names_top_down(project)
    undo = ran(
        ctx,
        toolkit,
        ("set_layer", {"layer": "parks", "name": "green_spaces"}),
        ("set_layer", {"layer": "landuse", "move": "top"}),
        ("set_layer", {"layer": "rivers", "group": "water"}),
        ("set_layer", {"layer": "schools", "visible": False}),
    )
    assert names_top_down(project)[0] == "landuse"
    assert [n.name() for n in project.layerTreeRoot().children() if n.name() == "water"] == ["water"]
    changes = undo.changes()
    assert "renamed layer 'parks' to 'green_spaces'" in changes
    assert "changed the layer tree (order, groups or visibility)" in changes
    undo.undo()
    assert names_top_down(project) == order
    assert "water" not in [n.name() for n in project.layerTreeRoot().children()]
    assert project.layerTreeRoot().findLayer(project.mapLayersByName("schools")[0].id()).isVisible()
    assert project.mapLayersByName("parks") and not project.mapLayersByName("green_spaces")
    assert compared(run_snapshot.take(project, ctx.iface.mapCanvas())) == compared(undo.before)


def test_undo_run_puts_styles_and_labels_back(town):
    ctx, toolkit = town
    project = ctx.project
    districts = project.mapLayersByName("districts")[0]
    schools = project.mapLayersByName("schools")[0]
    renderer = districts.renderer().type()
    labelled = schools.labelsEnabled()
    undo = ran(
        ctx,
        toolkit,
        ("style_layer", {"layer": "districts", "method": "quantile", "field": "population", "classes": 4}),
        ("label_layer", {"layer": "schools", "text": "name"}),
    )
    assert districts.renderer().type() == "graduatedSymbol" != renderer
    assert schools.labelsEnabled() and not labelled
    assert sorted(undo.changes()) == [
        "changed the style or labels of 'districts'",
        "changed the style or labels of 'schools'",
    ]
    undo.undo()
    assert districts.renderer().type() == renderer
    assert schools.labelsEnabled() == labelled
    assert compared(run_snapshot.take(project, ctx.iface.mapCanvas())) == compared(undo.before)


def test_undo_run_puts_the_selection_and_the_map_view_back(town):
    ctx, toolkit = town
    project = ctx.project
    canvas = ctx.iface.mapCanvas()
    schools = project.mapLayersByName("schools")[0]
    schools.selectByIds([1, 2])
    start = run_snapshot.view_state(project, canvas)
    undo = ran(
        ctx,
        toolkit,
        ("select_features", {"layer": "schools", "expression": "\"type\" = 'primary'"}),
        ("set_layer", {"layer": "hospitals", "zoom": True}),
    )
    assert schools.selectedFeatureCount() == 16
    assert not start.close_to(run_snapshot.view_state(project, canvas))
    assert {"changed the selection in 'schools'", "moved the map"} <= set(undo.changes())
    undo.undo()
    assert sorted(schools.selectedFeatureIds()) == [1, 2]
    assert start.close_to(run_snapshot.view_state(project, canvas), 1e-6)


def test_undo_run_discards_edits_left_in_the_edit_buffer(town, demo_project):
    ctx, toolkit = town
    schools = demo_project.mapLayersByName("schools")[0]
    undo = ran(
        ctx,
        toolkit,
        ("edit_features", {"layer": "schools", "expression": "\"type\" = 'primary'", "field": "name", "value": "'X'"}),
        ("edit_features", {"layer": "hospitals", "expression": "TRUE", "delete": True}),
    )
    assert schools.isEditable() and sum(f["name"] == "X" for f in schools.getFeatures()) == 16
    assert demo_project.mapLayersByName("hospitals")[0].featureCount() == 0
    assert {"edited features of 'schools'", "edited features of 'hospitals'"} <= set(undo.changes())
    lines = undo.undo()
    assert not schools.isEditable() and not any(f["name"] == "X" for f in schools.getFeatures())
    assert demo_project.mapLayersByName("hospitals")[0].featureCount() > 0
    assert "discarded the run's unsaved edits to 'schools'" in lines


def test_undo_run_keeps_the_users_open_edit_session_and_undoes_only_the_runs_edits(town, demo_project):
    ctx, toolkit = town
    schools = demo_project.mapLayersByName("schools")[0]
    schools.startEditing()
    first = next(schools.getFeatures())
    schools.changeAttributeValue(first.id(), schools.fields().indexOf("name"), "mine")
    undo = ran(
        ctx, toolkit, ("edit_features", {"layer": "schools", "expression": "\"type\" = 'secondary'", "delete": True})
    )
    undo.undo()
    assert schools.isEditable()
    assert schools.getFeature(first.id())["name"] == "mine"  # the user's own edit stays in their session
    assert schools.featureCount() == 31


def test_undo_run_reverts_edits_saved_at_once_headless(headless_town, demo_project):
    ctx, toolkit = headless_town
    gpkg = Path(demo_project.fileName()).with_name("elvbury.gpkg")

    def rows() -> list[tuple[Any, ...]]:
        with sqlite3.connect(gpkg) as db:
            return db.execute("SELECT fid, name, type, pupils, district FROM schools ORDER BY fid").fetchall()

    original = rows()
    undo = ran(
        ctx,
        toolkit,
        ("edit_features", {"layer": "schools", "expression": "\"type\" = 'primary'", "field": "pupils", "value": "0"}),
        ("edit_features", {"layer": "schools", "expression": "\"district\" = 'Centre'", "delete": True}),
    )
    changed = rows()
    assert changed != original and len(changed) < len(original)  # saved to the file at once
    assert "saved edits to 'schools'" in undo.changes()
    lines = undo.undo()
    assert rows() == original
    assert any(line.startswith("reverted the saved edits of 'schools'") for line in lines)


def test_undo_run_is_refused_when_the_project_changed_since_and_nothing_is_touched(town):
    ctx, toolkit = town
    project = ctx.project
    undo = ran(ctx, toolkit, ("set_layer", {"layer": "parks", "name": "green_spaces"}))
    project.mapLayersByName("roads")[0].setName("streets")
    assert undo.blocked() == ["layer 'roads' was renamed to 'streets'"]
    with pytest.raises(ValueError, match="'roads' was renamed to 'streets'"):
        undo.undo()
    assert project.mapLayersByName("green_spaces")  # nothing was undone
    project.mapLayersByName("streets")[0].setName("roads")
    assert undo.blocked() == []
    undo.undo()
    assert project.mapLayersByName("parks")
    assert undo.blocked() == ["this run was undone already"]


def test_undo_run_of_two_runs_goes_back_one_run_at_a_time(town):
    ctx, toolkit = town
    project = ctx.project
    first = ran(ctx, toolkit, ("set_layer", {"layer": "parks", "name": "green"}))
    second = ran(ctx, toolkit, ("set_layer", {"layer": "green", "name": "greener"}))
    assert first.blocked() == ["layer 'green' was renamed to 'greener'"]
    second.undo()
    assert first.blocked() == []
    first.undo()
    assert project.mapLayersByName("parks")


def test_undo_run_note_on_the_approval_of_a_file_write_and_of_code(town, tmp_path):
    _ctx, toolkit = town
    target = tmp_path / "out.gpkg"
    args = {"algorithm": "native:buffer", "parameters": {"INPUT": "schools", "DISTANCE": 10, "OUTPUT": str(target)}}
    request = call_in_thread(lambda: asyncio.run(toolkit.approval_request("c1", "run_algorithm", args)))
    assert Effect.WRITE_FILE in request.effects
    assert NOT_UNDONE[Effect.WRITE_FILE] in request.notes
    assert request.notes.count(NOT_UNDONE[Effect.WRITE_FILE]) == 1
    code = call_in_thread(lambda: asyncio.run(toolkit.approval_request("c2", "run_pyqgis", {"code": "print(1)"})))
    assert NOT_UNDONE[Effect.RUN_CODE] in code.notes
    removal = call_in_thread(
        lambda: asyncio.run(toolkit.approval_request("c3", "set_layer", {"layer": "roads", "remove": True}))
    )
    assert removal.notes == []  # a removed layer is put back by Undo run: nothing to warn about


def test_undo_run_reverts_edits_to_a_temporary_layer_saved_at_once(town):
    ctx, toolkit = town
    project = ctx.project
    scratch = QgsVectorLayer("Point?crs=EPSG:25832&field=name:string&field=n:integer", "scratch", "memory")
    features = [_point(scratch, name, x) for name, x in (("a", 571000), ("b", 571100), ("c", 571200))]
    for feature, n in zip(features, (1, 2, 3), strict=True):
        feature.setAttributes([feature["name"], n])
    scratch.dataProvider().addFeatures(features)
    project.addMapLayer(scratch)

    def rows() -> list[tuple[str, int]]:
        return sorted((f["name"], f["n"]) for f in scratch.getFeatures())

    undo = ran(
        ctx,
        toolkit,
        ("edit_features", {"layer": "scratch", "expression": '"n" > 1', "field": "n", "value": '"n" * 10'}),
        ("edit_features", {"layer": "scratch", "expression": "\"name\" = 'a'", "delete": True}),
    )
    assert not scratch.isEditable() and rows() == [("b", 20), ("c", 30)]  # a memory layer: saved at once
    assert "saved edits to 'scratch'" in undo.changes()
    lines = undo.undo()
    assert rows() == [("a", 1), ("b", 2), ("c", 3)]
    assert lines.count("reverted the saved edits of 'scratch' (1 deleted features)") == 1
