"""make_chart in real QGIS: PNGs whose numbers equal an independent aggregation, every chart kind, bad fields,
a million rows (aggregated, never plotted raw), SQL results, and the chart inline in the dock."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.insights.charts import maker
from geogpt_qgis.tools.insights.family import InsightTools
from tests.support.big_layers import write_big_points
from tests.support.dock import items_of, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.postgis import connect, saved_connection
from tests.support.runs import RunRecorder, call_in_thread, wait_until

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MILLION = 1_000_000


@pytest.fixture(autouse=True)
def profile(tmp_path, monkeypatch) -> Path:
    """Charts go to a temporary profile folder."""
    folder = tmp_path / "profile"
    monkeypatch.setattr(maker, "profile_data_dir", lambda: folder)
    return folder


@pytest.fixture
def charts(tool_ctx) -> InsightTools:
    return InsightTools(tool_ctx)


def chart_of(result: ToolResult) -> tuple[Path, dict]:
    """The PNG a result's artifact names (the model reads it too), checked to be a PNG, and the numbers beside it."""
    path = Path(result.artifact.chart)
    assert result.text.splitlines()[0] == f"Chart image: {path}", result.text
    assert path.is_file() and path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 5000
    return path, json.loads(path.with_suffix(".json").read_text("utf-8"))


def query(gpkg: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(gpkg) as db:
        return db.execute(sql).fetchall()


def gpkg_of(project) -> Path:
    return Path(project.fileName()).with_name("elvbury.gpkg")


def test_bar_chart_png_holds_the_data_of_an_independent_aggregation(charts, demo_project, profile):
    result = call_in_thread(charts.make_chart, "schools", "bar", "district", "pupils", "Pupils per district")
    path, data = chart_of(result)
    assert path.parent.parent == profile / "charts"  # beside the conversation store, a folder per conversation
    assert result.artifact.layer_names == ("schools",) and not result.artifact.tables
    expected = dict(query(gpkg_of(demo_project), "SELECT district, sum(pupils) FROM schools GROUP BY district"))
    assert dict(zip(data["categories"], data["series"][""], strict=True)) == expected
    assert data["categories"][0] == max(expected, key=expected.get)  # biggest first
    assert (data["kind"], data["title"], data["rows"]) == ("bar", "Pupils per district", 31)
    top = max(expected, key=expected.get)
    assert f"| {top} | {expected[top]:,} |" in result.text


def test_grouped_bars_pie_line_histogram_and_scatter(charts, demo_project):
    gpkg = gpkg_of(demo_project)
    # Grouped bars, read through QGIS's own reader (a filter keeps it from the SQLite shortcut).
    schools = demo_project.mapLayersByName("schools")[0]
    schools.setSubsetString('"pupils" > 0')
    _, data = chart_of(call_in_thread(charts.make_chart, "schools", "grouped bar", "district,type"))
    counts = {(d, t): n for d, t, n in query(gpkg, "SELECT district, type, count(*) FROM schools GROUP BY 1, 2")}
    for name, values in data["series"].items():
        for district, value in zip(data["categories"], values, strict=True):
            assert value == counts.get((district, name), 0)
    schools.setSubsetString("")
    _, data = chart_of(call_in_thread(charts.make_chart, "schools", "pie", "type"))
    assert dict(zip(data["categories"], data["series"][""], strict=True)) == dict(
        query(gpkg, "SELECT type, count(*) FROM schools GROUP BY type")
    )
    _, data = chart_of(call_in_thread(charts.make_chart, "roads", "line", "maxspeed", "count"))
    assert data["categories"] == [str(v) for (v,) in query(gpkg, "SELECT DISTINCT maxspeed FROM roads ORDER BY 1")]
    _, data = chart_of(call_in_thread(charts.make_chart, "schools", "histogram", "pupils"))
    pupils = [v for (v,) in query(gpkg, "SELECT pupils FROM schools")]
    assert sum(data["counts"]) == len(pupils) == 31
    assert (data["edges"][0], data["edges"][-1]) == (min(pupils), max(pupils))
    _, data = chart_of(call_in_thread(charts.make_chart, "hospitals", "scatter", "beds", "emergency"))
    assert sorted(data["points"]) == sorted(
        [float(a), float(b)] for a, b in query(gpkg, "SELECT beds, emergency FROM hospitals")
    )


def test_bad_fields_are_explained(charts, demo_project):
    with pytest.raises(ToolError, match=r"'name' in layer 'schools' is not numeric.*Numeric fields: fid, pupils"):
        call_in_thread(charts.make_chart, "schools", "bar", "district", "mean(name)")
    with pytest.raises(ToolError, match="not numeric, and a histogram needs numbers"):
        call_in_thread(charts.make_chart, "schools", "histogram", "district")
    with pytest.raises(ToolError, match="did you mean 'pupils'"):
        call_in_thread(charts.make_chart, "schools", "bar", "district", "pupil")
    with pytest.raises(ToolError, match="no layer 'schols'; did you mean 'schools'"):
        call_in_thread(charts.make_chart, "schols", "bar", "district")
    with pytest.raises(ToolError, match="unknown chart kind"):
        call_in_thread(charts.make_chart, "schools", "radar", "district")


def test_a_million_rows_are_aggregated_never_plotted_raw(charts, demo_project, tmp_path):
    from qgis.core import QgsVectorLayer

    path = write_big_points(tmp_path / "big.gpkg", MILLION)
    demo_project.addMapLayer(QgsVectorLayer(f"{path}|layername=big", "big", "ogr"))
    started = time.monotonic()
    result = call_in_thread(charts.make_chart, "big", "bar", "kind", "mean(v)")
    assert time.monotonic() - started < 30
    _, data = chart_of(result)
    assert data["rows"] == MILLION
    expected = dict(query(path, "SELECT kind, avg(v) FROM big GROUP BY kind"))
    assert dict(zip(data["categories"], data["series"][""], strict=True)) == pytest.approx(expected)
    _, data = chart_of(call_in_thread(charts.make_chart, "big", "histogram", "v"))
    assert sum(data["counts"]) == MILLION and len(data["counts"]) <= 50
    _, data = chart_of(call_in_thread(charts.make_chart, "big", "scatter", "v", "v"))
    assert not data["points"] and sum(map(sum, data["grid"])) == MILLION
    # QGIS's own reader (a filtered layer) aggregates the same way.
    filtered = QgsVectorLayer(f"{path}|layername=big", "big_part", "ogr")
    filtered.setSubsetString('"v" < 200000')
    demo_project.addMapLayer(filtered)
    _, data = chart_of(call_in_thread(charts.make_chart, "big_part", "pie", "kind"))
    assert dict(zip(data["categories"], data["series"][""], strict=True)) == dict(
        query(path, "SELECT kind, count(*) FROM big WHERE v < 200000 GROUP BY kind")
    )


def test_sql_results_and_postgres_layers_are_aggregated_by_the_database(charts, demo_project):
    from qgis.core import QgsDataSourceUri, QgsVectorLayer

    with connect() as pg:
        cursor = pg.cursor()
        cursor.execute("SELECT type, avg(pupils)::float8 FROM schools GROUP BY type")
        expected = dict(cursor.fetchall())
    with saved_connection("charts_pg"):
        result = call_in_thread(charts.make_chart, "SELECT * FROM schools", "bar", "type", "mean(pupils)")
        _, data = chart_of(result)
        assert "from SQL on 'charts_pg' (31 rows)" in result.text
        assert result.artifact.table_labels == ("schools (charts_pg)",) and not result.artifact.layers
        assert dict(zip(data["categories"], data["series"][""], strict=True)) == pytest.approx(expected)
        # A million rows of a query: only the bins cross the wire.
        big = f"SELECT g AS v FROM generate_series(1, {MILLION}) g"
        _, data = chart_of(call_in_thread(charts.make_chart, big, "histogram", "v"))
        assert sum(data["counts"]) == MILLION and data["rows"] == MILLION
        with pytest.raises(ToolError, match="is not numeric"):
            call_in_thread(charts.make_chart, "SELECT * FROM schools", "bar", "type", "name")
    uri = QgsDataSourceUri()
    uri.setConnection("127.0.0.1", "5432", "geogpt_demo", "geogpt", "geogpt")
    uri.setDataSource("public", "schools", "geom", "", "fid")
    demo_project.addMapLayer(QgsVectorLayer(uri.uri(False), "pg_schools", "postgres"))
    result = call_in_thread(charts.make_chart, "pg_schools", "bar", "type", "mean(pupils)")
    assert "from layer 'pg_schools' (PostgreSQL 127.0.0.1/geogpt_demo)" in result.text
    assert result.artifact.layer_names == ("pg_schools",)
    _, data = chart_of(result)
    assert dict(zip(data["categories"], data["series"][""], strict=True)) == pytest.approx(expected)


def test_a_chart_in_a_conversation_is_saved_with_it_and_exported(model_server, worker, demo_project, profile):
    model_server.script(
        [
            Turn(
                tool_calls=[
                    ToolCall("make_chart", {"data": "schools", "kind": "pie", "x": "type", "title": "School types"})
                ]
            ),
            Turn(text="Most schools are primary schools."),
        ]
    )
    recorder = RunRecorder(worker)
    run = worker.submit("Chart the school types", ModelConfig(base_url=model_server.url, model="qwen3:8b"))
    assert recorder.wait(run, 60).status == "finished"
    (finished,) = recorder.tool_results(run)
    assert finished.ok, finished.result
    path, data = chart_of(ToolResult(finished.result, finished.artifact))  # the event carries the artifact
    assert path.parent == profile / "charts" / worker.thread_id
    assert data["title"] == "School types"
    future = worker.export_conversation(worker.thread_id)
    wait_until(future.done, 120)
    exported = future.result()
    assert f"![chart](<{path}>)" in exported
    assert "- Charts: `" + str(path) in exported


def test_the_dock_shows_the_chart_inline_and_again_when_restored(panel, model_server, demo_project):
    from geogpt_qgis.gui.chart_view import ChartView

    model_server.script(
        [
            Turn(tool_calls=[ToolCall("make_chart", {"data": "schools", "kind": "bar", "x": "district"})]),
            Turn(text="Centre has the most schools."),
        ]
    )
    type_and_send(panel, "How many schools per district? Chart it.")
    wait_until(lambda: panel.statuses == ["finished"], 60)
    (view,) = items_of(panel, ChartView)
    assert view.loaded and view.image.pixmap().width() > 100
    target = view.save_to(str(Path(view.path).with_name("copy")))
    assert target.read_bytes() == Path(view.path).read_bytes()
    panel.view.open_conversation(panel.runs.thread_id())
    wait_until(lambda: len(items_of(panel, ChartView)) == 1 and items_of(panel, ChartView)[0] is not view, 120)
    assert items_of(panel, ChartView)[0].path == view.path
