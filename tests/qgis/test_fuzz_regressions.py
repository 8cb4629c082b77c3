"""Calls that once ended a run, froze QGIS or answered "failed unexpectedly", each kept as a named test.

Each comes from a bad call a user or the fuzzer (test_fuzz_tools.py) tried:
unbounded text, NUL bytes and lone surrogates, and approval previews that
raise.  Every one must come back to the model as a clear, fast error that
changes nothing, and the run must go on.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.approval import POLICY_ASK
from geogpt_qgis.core.events import ApprovalRequested
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.code.family import CodeTools
from geogpt_qgis.tools.code.runner import compile_snippet
from geogpt_qgis.tools.insights.family import InsightTools
from geogpt_qgis.tools.maps.styling import StylePart
from geogpt_qgis.tools.postgis.family import PostgisTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.model_server import ToolCall, Turn
from tests.support.postgis import saved_connection
from tests.support.runs import call_in_thread


def run_call(toolkit: Toolkit, name: str, args: dict) -> tuple[bool, str, float]:
    """One call through the toolkit on a worker thread (as the agent runs it), timed."""
    started = time.monotonic()
    outcome = call_in_thread(lambda: asyncio.run(toolkit.run(name, args)), timeout=30)
    return outcome.ok, outcome.text, time.monotonic() - started


def layer_state(project) -> list[tuple[str, int]]:
    # Rasters (the demo's GeoTIFFs) have no feature count: -1 stands for "a raster, still there".
    return sorted(
        (layer.name(), layer.featureCount() if hasattr(layer, "featureCount") else -1)
        for layer in project.mapLayers().values()
    )


# -- unbounded text -------------------------------------------------------------------------
def test_find_places_with_a_200000_character_name_answers_fast_and_clearly(tool_ctx):
    toolkit = Toolkit(InsightTools(tool_ctx).tools())
    before = layer_state(tool_ctx.project)
    ok, text, seconds = run_call(toolkit, "find_places", {"names": ["Nordby " * 30_000]})
    assert not ok and seconds < 1.0
    assert "names[0] is 210,000 characters; at most 200" in text
    assert layer_state(tool_ctx.project) == before


def test_the_place_finder_bounds_names_where_it_consumes_them(tool_ctx):
    """Called directly (not through the toolkit), a long name is refused before any fuzzy matching."""
    finder = InsightTools(tool_ctx)
    started = time.monotonic()
    with pytest.raises(ToolError, match="a place name is 5,000 characters; at most 200"):
        call_in_thread(finder.find_places, ["x" * 5_000])
    assert time.monotonic() - started < 1.0


def test_make_chart_with_a_one_megabyte_title_answers_fast_and_clearly(tool_ctx):
    toolkit = Toolkit(InsightTools(tool_ctx).tools())
    ok, text, seconds = run_call(
        toolkit, "make_chart", {"data": "schools", "kind": "bar", "x": "type", "title": "T" * 1_000_000}
    )
    assert not ok and seconds < 1.0
    assert "title is 1,000,000 characters; at most 200" in text
    # The chart maker refuses it too, before drawing anything (it once overflowed matplotlib's raster).
    started = time.monotonic()
    with pytest.raises(ToolError, match="the title is 1,000,000 characters"):
        call_in_thread(InsightTools(tool_ctx).make_chart, "schools", "bar", "type", "", "T" * 1_000_000)
    assert time.monotonic() - started < 1.0


def test_a_chart_draws_long_labels_from_the_data_clipped(tmp_path):
    from geogpt_qgis.tools.insights.charts.data import ChartData
    from geogpt_qgis.tools.insights.charts.render import render_png

    long = "district " * 20_000
    chart = ChartData("bar", "t" * 150, long, "count", rows=2, source="test")
    chart.categories = [long, "b"]
    chart.series = {"": [1.0, 2.0]}
    started = time.monotonic()
    path = render_png(chart, tmp_path / "chart.png")
    assert path.stat().st_size > 1000 and time.monotonic() - started < 5.0


def test_an_expression_longer_than_the_bound_is_refused_with_its_length(tool_ctx):
    toolkit = Toolkit(ProjectTools(tool_ctx).tools())
    ok, text, seconds = run_call(toolkit, "select_features", {"layer": "schools", "expression": "1 OR " * 2_000})
    assert not ok and "expression is 10,000 characters; at most 5,000" in text and seconds < 1.0
    assert tool_ctx.project.mapLayersByName("schools")[0].selectedFeatureCount() == 0


# -- NUL bytes, lone surrogates, odd numbers ---------------------------------------------------------
@pytest.mark.postgis
def test_describe_table_with_a_nul_in_a_table_name_is_a_clear_error(tool_ctx):
    with saved_connection("h5_fuzz_nul"):
        toolkit = Toolkit(PostgisTools(tool_ctx).tools())
        ok, text, _ = run_call(toolkit, "describe_table", {"tables": ["schools\u0000"]})
    assert not ok and "failed unexpectedly" not in text
    assert "tables[0] contains a NUL character (\\u0000) at position 7" in text


def test_a_lone_surrogate_anywhere_is_a_clear_error(tool_ctx):
    toolkit = Toolkit(ProjectTools(tool_ctx).tools())
    ok, text, _ = run_call(toolkit, "describe_layer", {"layer": "schools\udfff"})
    assert not ok and "layer contains a lone surrogate ('\\udfff') at position 7" in text
    ok, text, _ = run_call(toolkit, "read_features", {"layer": "schools", "fields": ["name", "\ud800x"]})
    assert not ok and "fields[1] contains a lone surrogate" in text


def test_nan_and_infinite_numbers_are_refused_before_the_tool_runs(tool_ctx):
    toolkit = Toolkit(StylePart(tool_ctx).tools())
    before = layer_state(tool_ctx.project)
    for value in (float("nan"), float("inf"), "-Infinity"):
        ok, text, _ = run_call(toolkit, "style_layer", {"layer": "schools", "opacity": value})
        assert not ok and "opacity" in text and "finite number" in text, text
    assert layer_state(tool_ctx.project) == before


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("a\udfffb", "the code cannot be parsed (UnicodeEncodeError"),
        ("print(1)\x00", "source code string cannot contain null bytes"),  # ValueError < 3.12 < SyntaxError
        ("x = " + "(" * 5_000 + ")" * 5_000, "the code does not parse: too many nested parentheses"),
        ("x = 1\n" * 25_000, "the code is 150,000 characters; at most 20,000"),
    ],
)
def test_code_the_parser_cannot_take_is_a_tool_error(source, message):
    with pytest.raises(ToolError) as raised:
        compile_snippet(source)
    assert message in str(raised.value)
    assert "line None" not in str(raised.value)


# -- through the whole agent: the approval preview ---------------------------------------------------
@pytest.fixture
def config(model_server) -> ModelConfig:
    return ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=30)


@pytest.mark.parametrize(
    ("code", "told"),
    [
        # The reply is made valid Unicode as it arrives (U+FFFD): the store and the model client take it.
        ("a\udfffb", "the code does not parse: invalid character '\ufffd' (U+FFFD) (line 1)"),
        ("x = 1\n" * 23_400, "code is 140,400 characters; at most 20,000"),
    ],
    ids=["lone-surrogate", "140kB"],
)
def test_run_pyqgis_with_code_the_preview_cannot_take_is_answered_and_the_run_goes_on(
    code, told, worker, recorder, config, model_server
):
    model_server.script([Turn(tool_calls=[ToolCall("run_pyqgis", {"code": code})]), Turn(text="I could not run that.")])
    run_id = worker.submit("run my code", config, POLICY_ASK)
    finished = recorder.wait(run_id, 30)
    assert finished.status == "finished", finished.error
    assert recorder.of(run_id, ApprovalRequested) == []  # nothing to approve: the call is refused outright
    (result,) = recorder.tool_results(run_id)
    assert not result.ok and told in result.result
    assert recorder.text(run_id) == "I could not run that."


def test_an_approval_preview_that_raises_answers_the_call_and_the_run_goes_on(
    monkeypatch, demo_project, worker, recorder, config, model_server
):
    def broken_preview(self, code):
        raise MemoryError("the preview ran out of memory")

    monkeypatch.setattr(CodeTools.run_pyqgis, "approval_preview", broken_preview)  # the preview @gated names
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("run_pyqgis", {"code": "project.clear()"}), ToolCall("list_layers", {})]),
            Turn(text="The code could not be checked; here are your layers."),
        ]
    )
    before = layer_state(demo_project)
    run_id = worker.submit("clear it", config, POLICY_ASK)
    finished = recorder.wait(run_id, 30)
    assert finished.status == "finished", finished.error
    code_result, layers_result = recorder.tool_results(run_id)
    assert not code_result.ok
    assert "run_pyqgis could not be checked before approval: MemoryError: the preview ran out of memory" in (
        code_result.result
    )
    assert layers_result.ok and "schools" in layers_result.result
    assert layer_state(demo_project) == before  # the code never ran
    sent_back = [m["content"] for m in model_server.chat_requests()[-1].tool_messages()]
    assert any("could not be checked before approval" in text for text in sent_back)
