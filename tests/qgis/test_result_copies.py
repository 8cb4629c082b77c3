"""Results stored after the call within an agent run (issue 34): added at once, stored before anything reads them.

A processing output within a run is added as the temporary layer the
algorithm made and copied into a GeoPackage of its own after the call
returns; the copy is finished, and the layer pointed at its table (same id,
name and style), before the run's next call and before the run ends.  Checked
with GDAL and SQLite reading the GeoPackage directly.
"""

from __future__ import annotations

from pathlib import Path

from osgeo import ogr
from qgis.core import QgsProviderRegistry, QgsVectorLayer

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core import result_files
from geogpt_qgis.tools import result_copies
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.provenance import RECORDED_PROPERTY
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import RunRecorder, call_in_thread
from tests.support.saving import save


def in_a_run(tool, *args):
    with result_copies.deferring():
        return tool(*args)


def table_of(layer: QgsVectorLayer) -> tuple[Path, str]:
    parts = QgsProviderRegistry.instance().decodeUri("ogr", layer.source())
    return Path(parts["path"]), parts["layerName"]


def stored_geometries(path: Path, table: str) -> list[bytes]:
    """The table's geometries as WKB, read by GDAL (not through QGIS)."""
    source = ogr.Open(str(path))
    found = sorted(bytes(feature.GetGeometryRef().ExportToIsoWkb()) for feature in source.GetLayerByName(table))
    source = None
    return found


def geometries(layer: QgsVectorLayer) -> list[bytes]:
    return sorted(bytes(feature.geometry().asWkb()) for feature in layer.getFeatures())


def test_within_a_run_the_result_is_added_at_once_then_stored_under_the_same_id_and_style(tool_ctx, demo_project):
    tools = ProcessingTools(tool_ctx)
    call_in_thread(in_a_run, tools.run_algorithm, "native:buffer", {"INPUT": "rivers", "DISTANCE": 100}, "wide")
    (layer,) = demo_project.mapLayersByName("wide")
    assert layer.providerType() == "memory" and result_copies.pending()
    ident, made = layer.id(), geometries(layer)
    layer.renderer().symbol().setColor(layer.renderer().symbol().color().darker())  # the user restyles it meanwhile
    colour = layer.renderer().symbol().color().name()
    demo_project.setDirty(False)  # as if saved while the copy ran: the saved file names a temporary layer
    assert call_in_thread(result_copies.finish) == 1 and not result_copies.pending()
    assert demo_project.isDirty()  # so QGIS asks to save again, now with the stored source
    (stored,) = demo_project.mapLayersByName("wide")
    assert stored is layer and stored.id() == ident and stored.providerType() == "ogr"
    path, table = table_of(stored)
    assert table in result_files.result_tables(path)
    assert stored_geometries(path, table) == made == geometries(stored)  # every feature, as the algorithm made it
    assert stored.renderer().symbol().color().name() == colour
    assert stored.customProperty(RECORDED_PROPERTY) is None  # no call recorded outside a toolkit: nothing claimed


def test_a_result_removed_before_its_copy_finished_leaves_no_table(tool_ctx, demo_project):
    tools = ProcessingTools(tool_ctx)
    call_in_thread(in_a_run, tools.run_algorithm, "native:buffer", {"INPUT": "rivers", "DISTANCE": 50}, "gone")
    (layer,) = demo_project.mapLayersByName("gone")
    demo_project.removeMapLayer(layer.id())
    assert call_in_thread(result_copies.finish) == 0
    folder = result_files.results_folder_for(demo_project.fileName())
    assert not list(folder.glob("gone*.gpkg"))  # its file deleted, nothing left half-made


def test_outside_a_run_the_call_stores_its_result_before_it_returns(tool_ctx, demo_project):
    tools = ProcessingTools(tool_ctx)
    call_in_thread(tools.run_algorithm, "native:buffer", {"INPUT": "rivers", "DISTANCE": 20}, "at_once")
    (layer,) = demo_project.mapLayersByName("at_once")
    assert layer.providerType() == "ogr" and not result_copies.pending()


def test_the_next_call_of_a_run_reads_the_stored_result_and_the_run_ends_with_both_stored(
    worker, model_server, demo_project, monkeypatch
):
    deferred: list[str] = []
    defer = result_copies.defer
    monkeypatch.setattr(
        result_copies, "defer", lambda store, staged, *rest: [deferred.append(staged.name), defer(store, staged, *rest)]
    )
    first = {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100}, "output_name": "near"}
    second = {
        "algorithm": "native:dissolve",
        "parameters": {"INPUT": "near"},
        "output_name": "near_dissolved",
    }
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("run_algorithm", first)]),
            Turn(tool_calls=[ToolCall("run_algorithm", second)]),
            Turn(text="Done."),
        ]
    )
    recorder = RunRecorder(worker)
    run = worker.submit(
        "Buffer the rivers by 100 m and dissolve it",
        ModelConfig(base_url=model_server.url, model="qwen3:8b", timeout=30),
    )
    finished = recorder.wait(run, 120)
    assert finished.status == "finished", finished.error
    assert all(result.ok for result in recorder.tool_results(run))
    assert deferred == ["near", "near_dissolved"]  # both stored after their calls returned
    (near,) = demo_project.mapLayersByName("near")
    (dissolved,) = demo_project.mapLayersByName("near_dissolved")
    assert near.providerType() == dissolved.providerType() == "ogr" and not result_copies.pending()
    near_path, near_table = table_of(near)
    path, table = table_of(dissolved)
    assert result_files.result_tables(near_path) == {near_table} and result_files.result_tables(path) == {table}
    assert near_path != path  # a file each: the dissolve's was written while QGIS read the buffer's
    # The dissolve read the buffer's stored table: its provenance names that source, not a temporary layer.
    assert f"- near ({near.source()})" in dissolved.metadata().abstract()
    assert near.customProperty(RECORDED_PROPERTY) and dissolved.customProperty(RECORDED_PROPERTY)


def test_a_save_as_while_a_copy_is_under_way_takes_the_stored_result_beside_the_new_file(
    tool_ctx, demo_project, tmp_path
):
    tools = ProcessingTools(tool_ctx)
    call_in_thread(in_a_run, tools.run_algorithm, "native:buffer", {"INPUT": "rivers", "DISTANCE": 30}, "kept")
    assert result_copies.pending()
    target = tmp_path / "saved" / "town.qgz"
    target.parent.mkdir()
    save(demo_project, file_name=target)  # Save As, on the main thread, as QGIS does it
    (layer,) = demo_project.mapLayersByName("kept")
    path, table = table_of(layer)
    assert not result_copies.pending() and layer.providerType() == "ogr"
    assert path == result_files.results_folder_for(str(target)) / f"{table}.gpkg"
    assert table in result_files.result_tables(path)
    assert len(stored_geometries(path, table)) == layer.featureCount() > 0
