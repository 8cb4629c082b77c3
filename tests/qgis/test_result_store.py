"""Result layers survive saving: stored in the project's GeoPackage, moved beside it on the first save,
reopened with every feature and their style in a fresh process (plugin hooks and the CLI's --save),
and tables of removed results dropped on save."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from qgis.core import (
    QgsFeature,
    QgsFillSymbol,
    QgsProject,
    QgsSingleSymbolRenderer,
    QgsVectorLayer,
)

from geogpt_qgis import classFactory
from geogpt_qgis.core import result_files
from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.result_store import (
    ResultStore,
    keep_result_now,
    result_store,
    set_result_store,
    stage_result,
)
from tests.support.demo import GPKG, copy_demo
from tests.support.iface import FaithfulIface
from tests.support.memory_layers import numbered_points
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import ask, call_in_thread
from tests.support.saving import save

COLOUR = "#12ab34"
BUFFER = {"INPUT": "rivers", "DISTANCE": 100, "SEGMENTS": 32}  # explicit segments: defaults may change

# Reads a saved project in a fresh QGIS and prints every layer's provider, file, features (WKT) and colour.
REOPEN = """
import json, sys
from qgis.core import QgsApplication, QgsProject, QgsProviderRegistry, QgsVectorLayer
app = QgsApplication([], False)
app.initQgis()
project = QgsProject.instance()
assert project.read(sys.argv[1]), project.error()
out = {}
for layer in project.mapLayers().values():
    if not isinstance(layer, QgsVectorLayer):  # the demo's GeoTIFFs
        continue
    parts = QgsProviderRegistry.instance().decodeUri(layer.providerType(), layer.source())
    symbol = layer.renderer().symbol() if hasattr(layer.renderer(), "symbol") else None
    out[layer.name()] = {
        "provider": layer.providerType(),
        "valid": layer.isValid(),
        "path": parts.get("path", ""),
        "count": layer.featureCount(),
        "wkt": sorted(f.geometry().asWkt(3) for f in layer.getFeatures()),
        "colour": symbol.color().name() if symbol is not None else "",
    }
print(json.dumps(out))
project.clear()
app.exitQgis()
"""


def reopen(project_file: Path) -> dict:
    """The layers of ``project_file`` as a fresh process sees them (no state shared with this one)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", REOPEN, str(project_file)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def wkts(layer: QgsVectorLayer) -> list[str]:
    return sorted(f.geometry().asWkt(3) for f in layer.getFeatures())


def only(project: QgsProject, name: str) -> QgsVectorLayer:
    found = project.mapLayersByName(name)
    assert len(found) == 1, f"expected one layer {name!r}, found {[layer.name() for layer in found]}"
    return found[0]


def source_file(layer: QgsVectorLayer) -> Path:
    return Path(layer.source().split("|")[0])


def buffer_rivers(ctx: ToolContext, name: str = "rivers_buffer_100m") -> str:
    return call_in_thread(
        ProcessingTools(ctx).run_algorithm, "native:buffer", {"INPUT": "rivers", "DISTANCE": 100}, name
    ).text


def paint(layer: QgsVectorLayer) -> None:
    layer.setRenderer(QgsSingleSymbolRenderer(QgsFillSymbol.createSimple({"color": COLOUR})))


@pytest.fixture
def new_project(qgis_app, tmp_path):
    """An unsaved project holding the demo rivers, with results in a scratch folder under ``tmp_path``."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "elvbury.gpkg").write_bytes(GPKG.read_bytes())
    project = QgsProject.instance()
    project.clear()
    rivers = QgsVectorLayer(f"{data / 'elvbury.gpkg'}|layername=rivers", "rivers", "ogr")
    assert rivers.isValid()
    project.addMapLayer(rivers)
    store = ResultStore(tmp_path / "scratch")
    set_result_store(project, store)
    yield project, store
    project.clear()
    set_result_store(project, None)


# -- where results go ---------------------------------------------------------------
def test_a_result_of_a_saved_project_goes_beside_it_with_all_its_features(tool_ctx, demo_project):
    text = buffer_rivers(tool_ctx)
    assert "added layer 'rivers_buffer_100m'" in text
    layer = only(demo_project, "rivers_buffer_100m")
    assert layer.providerType() == "ogr"
    folder = Path(demo_project.fileName()).with_name("elvbury_results")
    assert source_file(layer) == folder / "rivers_buffer_100m.gpkg"  # a file of its own, no other result in it
    assert layer.source().endswith("|layername=rivers_buffer_100m")
    assert layer.featureCount() == only(demo_project, "rivers").featureCount() == 2
    assert result_files.tables_of_contents(source_file(layer)) == {"rivers_buffer_100m"}
    assert result_files.result_tables(source_file(layer)) == {"rivers_buffer_100m"}


def test_each_result_is_a_file_that_is_never_written_again(tool_ctx, demo_project):
    """A second result is a second file: the first one, which QGIS reads without locks, is left byte for byte."""
    buffer_rivers(tool_ctx, "first")
    first = source_file(only(demo_project, "first"))
    before = first.read_bytes()
    buffer_rivers(tool_ctx, "first")  # the same name again: another file, not another table in that one
    layers = [only(demo_project, name) for name in ("first", "first_2")]
    files = [source_file(layer) for layer in layers]
    assert [path.name for path in files] == ["first.gpkg", "first_2.gpkg"]
    assert first.read_bytes() == before
    assert [layer.featureCount() for layer in layers] == [2, 2]


def test_first_save_moves_results_beside_the_project_and_a_fresh_process_reopens_them(new_project, bridge, tmp_path):
    project, store = new_project
    buffer_rivers(ToolContext(project=project, bridge=bridge))
    layer = only(project, "rivers_buffer_100m")
    assert source_file(layer) == store.scratch_folder / "rivers_buffer_100m.gpkg"  # not saved yet: scratch
    paint(layer)
    before = wkts(layer)
    told = save(project, store, tmp_path / "town.qgz")
    results = tmp_path / "town_results"
    assert told == [results]
    assert source_file(layer) == results / "rivers_buffer_100m.gpkg" and layer.isValid()
    assert layer.featureCount() == 2
    assert not store.scratch_folder.exists()  # nothing left behind in the scratch folder
    project.clear()
    seen = reopen(tmp_path / "town.qgz")["rivers_buffer_100m"]
    assert seen["provider"] == "ogr" and seen["valid"]
    assert Path(seen["path"]) == results / "rivers_buffer_100m.gpkg"
    assert seen["count"] == 2 and seen["wkt"] == before
    assert seen["colour"] == COLOUR


def test_save_as_copies_results_and_leaves_the_old_project_whole(tool_ctx, demo_project, tmp_path):
    buffer_rivers(tool_ctx)
    old = Path(demo_project.fileName()).with_name("elvbury_results") / "rivers_buffer_100m.gpkg"
    save(demo_project, file_name=tmp_path / "copy" / "renamed.qgz")
    layer = only(demo_project, "rivers_buffer_100m")
    assert source_file(layer) == tmp_path / "copy" / "renamed_results" / "rivers_buffer_100m.gpkg"
    assert result_files.result_tables(old) == {"rivers_buffer_100m"}  # the old project still has its result
    assert layer.featureCount() == 2


# -- clean-up ------------------------------------------------------------------------
def test_saving_deletes_files_of_removed_results_and_nothing_else(tool_ctx, demo_project):
    buffer_rivers(tool_ctx, "kept")
    buffer_rivers(tool_ctx, "removed")
    kept, removed = (source_file(only(demo_project, name)) for name in ("kept", "removed"))
    folder = kept.parent
    notes = folder / "notes.gpkg"  # a GeoPackage the user put there: never ours to delete
    with sqlite3.connect(notes) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    legacy = result_files.legacy_results_path_for(demo_project.fileName())  # a result file of an older version
    result_files.copy_file(kept, legacy)
    demo_project.removeMapLayer(only(demo_project, "removed").id())
    save(demo_project)
    assert not removed.exists() and kept.is_file() and notes.is_file()
    assert result_files.result_tables(legacy) == {"kept"}  # an older project's file is never written or trimmed
    assert only(demo_project, "kept").featureCount() == 2


def test_save_as_gives_each_result_of_an_older_shared_file_a_file_of_its_own(tool_ctx, demo_project, tmp_path):
    """Projects saved before results had files of their own read ``<project>_results.gpkg``; a Save As splits it."""
    buffer_rivers(tool_ctx, "one")
    buffer_rivers(tool_ctx, "two")
    legacy = result_files.legacy_results_path_for(demo_project.fileName())
    result_files.copy_tables(source_file(only(demo_project, "one")), legacy, {"one": "one"})
    result_files.copy_tables(source_file(only(demo_project, "two")), legacy, {"two": "two"})
    for name in ("one", "two"):
        only(demo_project, name).setDataSource(f"{legacy}|layername={name}", name, "ogr")
    assert result_files.result_tables(legacy) == {"one", "two"}
    save(demo_project, file_name=tmp_path / "split.qgz")
    for name in ("one", "two"):
        layer = only(demo_project, name)
        assert source_file(layer) == tmp_path / "split_results" / f"{name}.gpkg"
        assert result_files.tables_of_contents(source_file(layer)) == {name}
        assert layer.featureCount() == 2
    assert result_files.result_tables(legacy) == {"one", "two"}  # the old project keeps its file


def test_table_names_are_unique_and_plain():
    taken = {"rivers_buffer", "Parks"}
    assert result_files.table_name("rivers_buffer", taken) == "rivers_buffer_2"
    assert result_files.table_name("parks", taken) == "parks_2"  # SQLite ignores case
    assert result_files.table_name("place Øst-Byen", set()) == "place_st_byen"
    assert result_files.table_name("2024 roads", set()) == "result_2024_roads"
    assert result_files.table_name("gpkg_contents", set()) == "result_gpkg_contents"
    assert result_files.results_folder_for("/maps/town.qgz") == Path("/maps/town_results")
    assert result_files.legacy_results_path_for("/maps/town.qgz") == Path("/maps/town_results.gpkg")


def test_file_names_are_unique_across_vector_and_raster_results_and_reserved_names(tmp_path):
    (tmp_path / "roads.gpkg").touch()
    (tmp_path / "dem.tif").touch()
    assert result_files.file_name("roads", tmp_path) == tmp_path / "roads_2.gpkg"
    assert result_files.file_name("dem", tmp_path) == tmp_path / "dem_2.gpkg"
    assert result_files.file_name("new", tmp_path, [tmp_path / "new.gpkg"]) == tmp_path / "new_2.gpkg"
    assert result_files.file_name("new", tmp_path, [tmp_path / "other" / "new.gpkg"]) == tmp_path / "new.gpkg"


def test_a_place_like_layer_made_on_the_main_thread_keeps_style_and_properties(new_project):
    project, _store = new_project
    memory = QgsVectorLayer("Polygon?crs=EPSG:25832&field=name:string&field=fid:integer", "p", "memory")
    rivers = only(project, "rivers")
    rows = []
    for feature in rivers.getFeatures():
        row = QgsFeature(memory.fields())
        row.setAttributes(["river", 7])  # the same "fid" twice: the stored table needs its own key
        row.setGeometry(feature.geometry().buffer(10, 8))
        rows.append(row)
    memory.dataProvider().addFeatures(rows)
    paint(memory)
    memory.setCustomProperty("geogpt/place", "Elv river")
    name = keep_result_now(project, memory, "place_elv")
    stored = only(project, name)
    assert stored.providerType() == "ogr" and stored.featureCount() == 2
    assert [f["fid"] for f in stored.getFeatures()] == [7, 7]
    assert stored.renderer().symbol().color().name() == COLOUR
    assert stored.customProperty("geogpt/place") == "Elv river"


# -- the plugin's hooks and the CLI's --save -------------------------------------------
def test_the_plugin_keeps_results_with_the_project_and_says_where(new_project, bridge, tmp_path, monkeypatch):
    from qgis.core import QgsApplication

    project, _store = new_project
    monkeypatch.setattr(QgsApplication, "qgisSettingsDirPath", staticmethod(lambda: str(tmp_path / "profile") + "/"))
    iface = FaithfulIface()
    plugin = classFactory(iface)
    plugin.initGui()
    try:
        store = result_store(project)
        assert store.scratch_folder.parent == tmp_path / "profile" / "geogpt_qgis" / "scratch"
        buffer_rivers(ToolContext(project=project, bridge=bridge))
        assert source_file(only(project, "rivers_buffer_100m")).parent == store.scratch_folder
        (tmp_path / "saved").mkdir()
        project.setFileName(str(tmp_path / "saved" / "plan.qgz"))
        assert project.write()
        shown = [w.text() for w in iface.messageBar().items()]
        assert any(str(tmp_path / "saved" / "plan_results") in text for text in shown), shown
    finally:
        plugin.unload()
        iface.mainWindow().deleteLater()
    assert result_store(project) is not store  # unload let the plugin's store go
    seen = reopen(tmp_path / "saved" / "plan.qgz")
    assert seen["rivers_buffer_100m"]["count"] == 2


def test_cli_save_keeps_the_buffer_and_a_fresh_process_reopens_it(model_server, tmp_path):
    project_file = copy_demo(tmp_path / "demo")
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("run_algorithm", {"algorithm": "native:buffer", "parameters": BUFFER})]),
            Turn(text="Buffered the rivers."),
        ]
    )
    out = tmp_path / "out" / "p.qgz"
    out.parent.mkdir()
    done = ask(
        "Buffer the rivers by 100 m",
        "--project",
        str(project_file),
        "--base-url",
        model_server.url,
        "--model",
        "qwen3:8b",
        "--save",
        str(out),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = out.with_name("p_results")
    assert f"Result layers saved in {results}" in done.stderr
    assert not project_file.with_name("elvbury_results").exists()  # the asked project is left alone
    seen = reopen(out)
    buffered = seen["rivers_buffer_100m"]
    assert buffered["provider"] == "ogr" and buffered["valid"]
    assert Path(buffered["path"]) == results / "rivers_buffer_100m.gpkg"
    assert buffered["count"] == seen["rivers"]["count"] == 2
    # The same buffer computed here, independently of the stored file.
    from qgis import processing

    rivers = QgsVectorLayer(f"{project_file.with_name('elvbury.gpkg')}|layername=rivers", "rivers", "ogr")
    expected = processing.run("native:buffer", {**BUFFER, "INPUT": rivers, "OUTPUT": "memory:"})
    assert buffered["wkt"] == wkts(expected["OUTPUT"])


def test_a_stopped_copy_leaves_no_table_and_adds_nothing(new_project):
    project, store = new_project
    memory = numbered_points("many", 3000)
    keep_result_now(project, QgsVectorLayer("Point?crs=EPSG:25832", "first", "memory"), "first")  # the file exists
    layers_before = len(project.mapLayers())
    _store, staged = stage_result(project, memory, "many")
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(RunCancelled):
        store.write(staged, cancel)
    assert not staged.path.exists()
    assert {path.name for path in result_files.result_files_in(store.scratch_folder)} == {"first.gpkg"}
    assert len(project.mapLayers()) == layers_before


def test_a_short_read_of_a_result_is_tried_again_then_refused_never_stored_smaller(new_project):
    """A result whose temporary layer reads fewer features than it had when staged is never a smaller table."""
    project, store = new_project
    keep_result_now(project, numbered_points("first", 1), "first")  # the file exists
    layers_before = len(project.mapLayers())
    _store, staged = stage_result(project, numbered_points("short", 40), "short")
    assert staged.expected == 40
    staged.expected = 41  # as if one feature went missing while the copy read the temporary layer
    with pytest.raises(ToolError, match=r"the result 'short' has 41 features, but only 40 could be read"):
        store.write(staged)
    assert not staged.path.exists()
    assert len(project.mapLayers()) == layers_before
    # A true count goes through, every feature in the table (sqlite3, not QGIS).
    _store, whole = stage_result(project, numbered_points("whole", 40), "whole")
    store.write(whole)
    with sqlite3.connect(whole.path) as db:
        assert db.execute(f'SELECT count(*) FROM "{whole.table}"').fetchone() == (40,)


def test_a_stored_result_that_reads_fewer_features_than_were_written_is_refused(new_project):
    project, store = new_project
    _store, staged = stage_result(project, numbered_points("kept", 25), "kept")
    store.write(staged)
    assert staged.count == 25
    with sqlite3.connect(staged.path) as db:  # what a reader that sees only part of the table would see
        db.execute(f'DELETE FROM "{staged.table}" WHERE n >= 20')
    with pytest.raises(ToolError, match=r"reads 20 features, but 25 were written; nothing was added"):
        store.open(staged)
    assert not staged.path.exists()
