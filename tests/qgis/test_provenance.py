"""Provenance on result layers, through the real agent and the scripted model server: each layer's metadata
(abstract and history) names the question of its turn, the tool, the algorithm and its parameters, the inputs with
their sources, the model and server, the time and the plugin version; it survives Save As and reopening, and the
results GeoPackage alone gives it back to a fresh layer (QGIS's own reader) and to plain SQLite."""

from __future__ import annotations

import datetime as dt
import sqlite3
from configparser import ConfigParser
from pathlib import Path

import pytest
from qgis.core import (
    QgsLayerMetadata,
    QgsMapLayer,
    QgsProject,
    QgsProviderRegistry,
    QgsRasterLayer,
    QgsVectorFileWriter,
    QgsVectorLayer,
)

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core import result_files
from geogpt_qgis.core.provenance import HEADER
from geogpt_qgis.tools.result_store import result_store
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import RunRecorder

REPO = Path(__file__).resolve().parents[2]
BUFFER_QUESTION = "Buffer the rivers by 100 m"
PLACES_QUESTION = "Where is Nordby School?"
LOAD_QUESTION = "Load the schools again from the GeoPackage"


def plugin_version() -> str:
    """The version in metadata.txt, read here without the plugin's own reader."""
    parser = ConfigParser(interpolation=None)
    parser.read(REPO / "metadata.txt", encoding="utf-8")
    return parser["general"]["version"]


def ask(worker, model_server, question: str, turns: list[Turn]) -> None:
    model_server.script(turns)
    recorder = RunRecorder(worker)
    run = worker.submit(question, ModelConfig(base_url=model_server.url, model="qwen3:8b", timeout=30))
    finished = recorder.wait(run, 120)
    assert finished.status == "finished", finished.error
    results = recorder.tool_results(run)
    assert results and all(r.ok for r in results), [r.result for r in results]


def buffer_turns(output: str = "rivers_100m") -> list[Turn]:
    call = {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100}, "output_name": output}
    return [Turn(tool_calls=[ToolCall("run_algorithm", call)]), Turn(text=f"Done: **{output}**.")]


def only_layer(project: QgsProject, name: str) -> QgsMapLayer:
    (layer,) = project.mapLayersByName(name)
    return layer


def table_of(layer: QgsMapLayer) -> tuple[Path, str]:
    parts = QgsProviderRegistry.instance().decodeUri("ogr", layer.source())
    return Path(parts["path"]), parts["layerName"]


def gpkg_documents(path: Path, table: str) -> list[str]:
    """The metadata documents that refer to ``table``, read with plain SQLite (the GeoPackage metadata extension)."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT m.metadata FROM gpkg_metadata m JOIN gpkg_metadata_reference r ON r.md_file_id = m.id "
            "WHERE r.table_name = ?",
            (table,),
        ).fetchall()
    return [row[0] for row in rows]


def fresh_metadata(path: Path, table: str) -> QgsLayerMetadata:
    """What a new layer on the table reads (QGIS's OGR provider, nothing of this plugin)."""
    layer = QgsVectorLayer(f"{path}|layername={table}", "fresh", "ogr")
    assert layer.isValid()
    return layer.metadata()


def check_buffer_record(metadata: QgsLayerMetadata, server: str, rivers_source: str, before: dt.datetime) -> None:
    text = metadata.abstract()
    lines = text.splitlines()
    assert lines[0].startswith(f"{HEADER} {plugin_version()}, ")
    assert f'Question: "{BUFFER_QUESTION}"' in lines
    assert "Tool: run_algorithm" in lines
    assert "Algorithm: native:buffer" in lines
    assert 'Parameters: {"DISTANCE": 100, "INPUT": "rivers"}' in lines
    assert lines[lines.index("Inputs:") + 1] == f"- rivers ({rivers_source})"
    assert f"Model: qwen3:8b at {server} (ollama)" in lines
    assert f"Plugin version: {plugin_version()}" in lines
    (stamp,) = [line.removeprefix("Time (UTC): ") for line in lines if line.startswith("Time (UTC): ")]
    assert stamp.endswith("Z")
    when = dt.datetime.fromisoformat(stamp.removesuffix("Z")).replace(tzinfo=dt.UTC)
    assert before - dt.timedelta(seconds=1) <= when <= dt.datetime.now(dt.UTC)
    (entry,) = metadata.history()
    assert entry.startswith(f"{stamp} {HEADER} {plugin_version()} | tool run_algorithm | algorithm native:buffer ")
    assert f"inputs rivers ({rivers_source})" in entry and f"model qwen3:8b at {server} (ollama)" in entry
    assert entry.endswith(f'question "{BUFFER_QUESTION}"')


@pytest.fixture
def rivers_source(demo_project) -> str:
    source = only_layer(demo_project, "rivers").source()
    assert "layername=rivers" in source
    return str(source)


def test_provenance_of_a_run_algorithm_result_in_the_layer_and_in_the_results_geopackage(
    worker, model_server, demo_project, rivers_source
):
    before = dt.datetime.now(dt.UTC)
    ask(worker, model_server, BUFFER_QUESTION, buffer_turns())
    layer = only_layer(demo_project, "rivers_100m")
    check_buffer_record(layer.metadata(), model_server.url, rivers_source, before)

    path, table = table_of(layer)
    assert path == result_files.results_folder_for(demo_project.fileName()) / f"{table}.gpkg"
    assert table in result_files.result_tables(path)  # writing the metadata kept the store's mark on the table
    check_buffer_record(fresh_metadata(path, table), model_server.url, rivers_source, before)
    (document,) = gpkg_documents(path, table)
    assert BUFFER_QUESTION in document and "native:buffer" in document


def test_provenance_of_each_turn_names_its_own_question_for_places_and_loaded_data(
    worker, model_server, demo_project, rivers_source
):
    ask(worker, model_server, BUFFER_QUESTION, buffer_turns())
    places = [Turn(tool_calls=[ToolCall("find_places", {"names": ["Nordby School"]})]), Turn(text="There.")]
    ask(worker, model_server, PLACES_QUESTION, places)
    gpkg = Path(demo_project.fileName()).with_name("elvbury.gpkg")
    load = {"source": str(gpkg), "layer": "schools", "name": "schools_again"}
    ask(worker, model_server, LOAD_QUESTION, [Turn(tool_calls=[ToolCall("load_data", load)]), Turn(text="Loaded.")])

    assert f'Question: "{BUFFER_QUESTION}"' in only_layer(demo_project, "rivers_100m").metadata().abstract()

    place = only_layer(demo_project, "place_nordby_school")
    lines = place.metadata().abstract().splitlines()
    assert f'Question: "{PLACES_QUESTION}"' in lines and "Tool: find_places" in lines
    assert 'Arguments: {"names": ["Nordby School"]}' in lines
    schools_source = only_layer(demo_project, "schools").source()
    assert f"- schools ({schools_source})" in lines
    assert not any(line.startswith("Algorithm:") for line in lines)
    path, table = table_of(place)
    assert table in result_files.result_tables(path)
    assert f'Question: "{PLACES_QUESTION}"' in fresh_metadata(path, table).abstract().splitlines()

    loaded = only_layer(demo_project, "schools_again")
    lines = loaded.metadata().abstract().splitlines()
    assert f'Question: "{LOAD_QUESTION}"' in lines and "Tool: load_data" in lines
    assert any(line.startswith("Arguments: ") and str(gpkg) in line for line in lines)
    assert len(loaded.metadata().history()) == 1
    # The user's own GeoPackage is never written to: the record lives in the project only.
    with sqlite3.connect(gpkg) as db:
        assert not db.execute("SELECT name FROM sqlite_master WHERE name = 'gpkg_metadata_reference'").fetchall() or (
            not db.execute("SELECT * FROM gpkg_metadata_reference WHERE table_name = 'schools'").fetchall()
        )


def test_provenance_survives_save_as_and_reopening_and_stays_in_the_copied_geopackage(
    worker, model_server, demo_project, rivers_source, tmp_path
):
    before = dt.datetime.now(dt.UTC)
    ask(worker, model_server, BUFFER_QUESTION, buffer_turns())
    # Save As into a folder whose results folder already holds a GeoPackage of that name: the result is
    # copied beside it under another name, its metadata with it, and the other file is left alone.
    target = tmp_path / "elsewhere" / "analysis.qgz"
    existing = result_files.results_folder_for(target) / "rivers_100m.gpkg"
    existing.parent.mkdir(parents=True)
    seed = QgsVectorLayer("Point?crs=EPSG:25832&field=n:integer", "seed", "memory")
    options = QgsVectorFileWriter.SaveVectorOptions()
    options.driverName, options.layerName = "GPKG", "someone_elses"
    written = QgsVectorFileWriter.writeAsVectorFormatV3(seed, str(existing), demo_project.transformContext(), options)
    assert written[0] == QgsVectorFileWriter.WriterError.NoError
    moved = result_store(demo_project).relocate(demo_project, str(target))
    assert moved is not None
    assert demo_project.write(str(target))

    reopened = QgsProject()
    try:
        assert reopened.read(str(target))
        layer = only_layer(reopened, "rivers_100m")
        path, table = table_of(layer)
        assert path == existing.with_name("rivers_100m_2.gpkg")
        assert result_files.tables_of_contents(existing) == {"someone_elses"}  # left as it was
        check_buffer_record(layer.metadata(), model_server.url, rivers_source, before)
        check_buffer_record(fresh_metadata(path, table), model_server.url, rivers_source, before)
        assert table in result_files.result_tables(path)
    finally:
        reopened.clear()


def test_provenance_of_a_result_made_from_the_dock(panel, model_server, demo_project, rivers_source):
    from tests.support.dock import type_and_send
    from tests.support.runs import wait_until

    before = dt.datetime.now(dt.UTC)
    model_server.script(buffer_turns())
    type_and_send(panel, BUFFER_QUESTION)
    try:
        wait_until(lambda: bool(panel.statuses), 120)
    except AssertionError:
        sent = len(model_server.chat_requests())
        shown = f"input {panel.input.toPlainText()!r}, status {panel.status.text()!r}"
        raise AssertionError(f"no run ended: {sent} model requests, {shown}") from None
    assert panel.statuses == ["finished"]
    layer = only_layer(demo_project, "rivers_100m")
    check_buffer_record(layer.metadata(), model_server.url, rivers_source, before)
    path, table = table_of(layer)
    check_buffer_record(fresh_metadata(path, table), model_server.url, rivers_source, before)


def test_provenance_of_a_layer_an_mcp_client_made_names_the_client(tool_ctx, demo_project, rivers_source):
    import asyncio

    from geogpt_qgis.mcp_server.tools import McpTools
    from tests.support.runs import call_in_thread

    tools = McpTools(tool_ctx)
    call = {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100}, "output_name": "mcp_100m"}
    answer = call_in_thread(lambda: asyncio.run(tools.call("run_algorithm", call, "Claude Desktop")), timeout=120)
    assert not answer.is_error, answer.text
    lines = only_layer(demo_project, "mcp_100m").metadata().abstract().splitlines()
    assert 'Question: (not sent: the MCP client "Claude Desktop" called the tool)' in lines
    assert 'Model: the MCP client "Claude Desktop"\'s own' in lines
    assert "Algorithm: native:buffer" in lines and f"- rivers ({rivers_source})" in lines


def test_provenance_of_a_raster_result_survives_save_as_and_reopening(worker, model_server, demo_project, tmp_path):
    question = "Slope of the terrain"
    call = {"algorithm": "native:slope", "parameters": {"INPUT": "elevation"}, "output_name": "slope"}
    ask(worker, model_server, question, [Turn(tool_calls=[ToolCall("run_algorithm", call)]), Turn(text="Done.")])
    elevation_source = only_layer(demo_project, "elevation").source()
    target = tmp_path / "saved" / "terrain.qgz"
    target.parent.mkdir()
    result_store(demo_project).relocate(demo_project, str(target))
    assert demo_project.write(str(target))
    reopened = QgsProject()
    try:
        assert reopened.read(str(target))
        slope = only_layer(reopened, "slope")
        assert isinstance(slope, QgsRasterLayer)
        assert Path(slope.source()).parent == target.with_name("terrain_results")  # the copy beside the project
        lines = slope.metadata().abstract().splitlines()
        assert f'Question: "{question}"' in lines and "Algorithm: native:slope" in lines
        assert 'Parameters: {"INPUT": "elevation"}' in lines and f"- elevation ({elevation_source})" in lines
        assert len(slope.metadata().history()) == 1
    finally:
        reopened.clear()


def test_provenance_of_a_layer_added_after_approval_names_the_question_asked_before_the_pause(
    worker, model_server, demo_project
):
    from geogpt_qgis.core.approval import APPROVE

    question = "Make me an empty point layer with code"
    code = "made = QgsVectorLayer('Point?crs=EPSG:25832', 'made_by_code', 'memory')\nproject.addMapLayer(made)"
    model_server.script([Turn(tool_calls=[ToolCall("run_pyqgis", {"code": code})]), Turn(text="Made it.")])
    config = ModelConfig(base_url=model_server.url, model="qwen3:8b", timeout=30)
    recorder = RunRecorder(worker)
    paused = recorder.wait(worker.submit(question, config), 120)
    assert paused.status == "paused", paused.error
    finished = recorder.wait(worker.resume({"action": APPROVE}, config), 120)
    assert finished.status == "finished", finished.error
    lines = only_layer(demo_project, "made_by_code").metadata().abstract().splitlines()
    assert f'Question: "{question}"' in lines and "Tool: run_pyqgis" in lines
    assert any(line.startswith('Arguments: {"code": "made = QgsVectorLayer(') for line in lines)


def test_provenance_of_a_results_table_loaded_again_keeps_the_geopackage_record_it_was_made_with(
    worker, model_server, demo_project, rivers_source
):
    ask(worker, model_server, BUFFER_QUESTION, buffer_turns())
    path, table = table_of(only_layer(demo_project, "rivers_100m"))
    load = {"source": str(path), "layer": table, "name": "reloaded"}
    ask(worker, model_server, LOAD_QUESTION, [Turn(tool_calls=[ToolCall("load_data", load)]), Turn(text="Loaded.")])
    reloaded = only_layer(demo_project, "reloaded")
    assert table_of(reloaded) == (path, table)
    made, loaded = reloaded.metadata().history()  # how the table was made, then how it came back
    assert made.endswith(f'question "{BUFFER_QUESTION}"') and " | tool run_algorithm | " in made
    assert loaded.endswith(f'question "{LOAD_QUESTION}"') and " | tool load_data | " in loaded
    lines = reloaded.metadata().abstract().splitlines()
    assert "Tool: load_data" in lines and "Tool: run_algorithm" not in lines  # one record: the newest
    (document,) = gpkg_documents(path, table)  # written once, when the table was made
    assert BUFFER_QUESTION in document and LOAD_QUESTION not in document
    assert table in result_files.result_tables(path)


def test_provenance_goes_into_the_geopackage_with_the_table_before_qgis_opens_it(demo_project, tmp_path):
    """Written once QGIS had the stored table open, the record broke GDAL's reads of the file now and then."""
    from geogpt_qgis.core import gpkg_metadata
    from geogpt_qgis.core.artifacts import AlgorithmRun, LayerRef, ToolArtifact
    from geogpt_qgis.core.provenance import RunOrigin, current_call, current_origin
    from geogpt_qgis.core.provenance import ToolCall as StartedCall
    from geogpt_qgis.tools.provenance import QGIS_METADATA_URI, RECORDED_PROPERTY, record_on_layers
    from geogpt_qgis.tools.result_store import ResultStore, set_result_store
    from tests.support.memory_layers import numbered_points

    rivers = only_layer(demo_project, "rivers")
    parameters = {"INPUT": "rivers", "DISTANCE": 100}
    reads = ToolArtifact(layers=(LayerRef.of(rivers),), algorithm=AlgorithmRun("native:buffer", parameters))
    store = ResultStore(tmp_path / "scratch", follow_project=False)
    set_result_store(demo_project, store)
    started = dt.datetime.now(dt.UTC)
    call = current_call.set(StartedCall("run_algorithm", {"algorithm": "native:buffer"}, started))
    origin = current_origin.set(RunOrigin.of(BUFFER_QUESTION, "qwen3:8b", "http://127.0.0.1:1/"))
    try:
        staged = store.stage(demo_project, numbered_points("made", 3), "made", reads)
        store.write(staged)
    finally:
        current_origin.reset(origin)
        current_call.reset(call)
        set_result_store(demo_project, None)
    # In the file before any layer reads the table: the standard's metadata extension, QGIS's document.
    ((scope, uri, mime, document),) = gpkg_metadata.table_metadata(staged.path, staged.table)
    assert (scope, uri, mime) == ("dataset", QGIS_METADATA_URI, "text/xml")
    assert BUFFER_QUESTION in document and "native:buffer" in document and rivers.publicSource() in document
    layer = store.open(staged)
    assert layer.customProperty(RECORDED_PROPERTY) is True
    lines = layer.metadata().abstract().splitlines()
    assert f'Question: "{BUFFER_QUESTION}"' in lines and "Algorithm: native:buffer" in lines
    assert lines[lines.index("Inputs:") + 1] == f"- rivers ({rivers.publicSource()})"
    assert fresh_metadata(staged.path, staged.table).abstract() == layer.metadata().abstract()
    # The toolkit's recorder, after the call, leaves a layer recorded with its table as it is.
    demo_project.addMapLayer(layer)
    added = ToolArtifact(layers=reads.layers, algorithm=reads.algorithm, added=(LayerRef.of(layer),))
    record_on_layers(demo_project, "run_algorithm", {}, added, None, dt.datetime.now(dt.UTC))
    assert len(layer.metadata().history()) == 1 and len(gpkg_metadata.table_metadata(staged.path, staged.table)) == 1
