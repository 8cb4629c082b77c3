"""The compact tool profile (issue 35): at most 8 tools and 1,200 Tekken tokens, chosen from the model's size,
fixed for a conversation (also after the store is reopened), the other tools still reachable; and the two settings
(tool calls, tool profile) from the options page and the command line to ``ModelConfig``.

Driven through the real agent (worker thread, graph, ChatOllama / ChatOpenAI) against the scripted model server,
which answers ``/api/show`` with ``general.parameter_count`` and, for the models given weights, ``/v1/models`` with
llama-server's ``meta`` (``n_params``, ``n_ctx_train``).
"""

from __future__ import annotations

import json

import pytest

from bench.prompt_budget import measure_profiles
from bench.real_tokens import real_counter
from geogpt_qgis.agent.config import ModelConfig, model_config_from_settings
from geogpt_qgis.agent.conversation import Conversation
from geogpt_qgis.agent.profiles import (
    COMPACT_BUDGET_TOKENS,
    COMPACT_TOOLS,
    MAX_COMPACT_TOOLS,
    offered_names,
    system_prompt,
)
from geogpt_qgis.agent.prompts import COMPACT_SYSTEM_PROMPT, SYSTEM_PROMPT
from geogpt_qgis.core.events import Notice
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.registry import active_families, build_families
from tests.support.model_server import ScriptedModelServer, ToolCall, Turn
from tests.support.postgis import saved_connection
from tests.support.runs import RunRecorder, wait_until

SMALL, BIG = "smollm2:135m", "qwen3:8b"
WEIGHTS = {SMALL: 135_000_000, BIG: 8_190_735_360}


def config_for(server, model: str = SMALL, provider: str = "ollama", **overrides) -> ModelConfig:
    base = server.url if provider == "ollama" else server.url + "/v1"
    return ModelConfig(provider=provider, base_url=base, model=model, timeout=30.0, **overrides)


def sent(request) -> tuple[str, list[str]]:
    """The system text and the tool names of one chat request."""
    body = request.body
    return body["messages"][0]["content"], [tool["function"]["name"] for tool in body.get("tools", [])]


def result_of(future, timeout: float = 60):
    wait_until(future.done, timeout)
    return future.result()


@pytest.fixture
def sized_server():
    with ScriptedModelServer(models=(SMALL, BIG), parameter_counts=WEIGHTS) as server:
        yield server


@pytest.mark.postgis
def test_the_compact_profile_has_at_most_8_tools_within_1200_tekken_tokens_with_every_family_on(tool_ctx):
    with saved_connection("profile_budget"):
        PlgOptionsManager.set_value("ogc_servers", "budget = http://127.0.0.1:9")
        try:
            families = active_families(build_families(tool_ctx))
            figures = measure_profiles(families)
        finally:
            PlgOptionsManager.set_value("ogc_servers", "")
    assert {"postgis", "ogc", "code", "insights", "examples"} <= {family.name for family in families}
    compact, full = figures["compact"], figures["full"]
    assert compact["tools"] == [name for name in full["tools"] if name in COMPACT_TOOLS]
    assert len(compact["tools"]) == len(COMPACT_TOOLS) == MAX_COMPACT_TOOLS == 8
    assert compact["total_tokens"] == compact["system_prompt_tokens"] + compact["schema_tokens"]
    assert compact["total_tokens"] <= COMPACT_BUDGET_TOKENS, compact
    assert figures["compact_meets_goal"]
    # Counted again, independently of the bench: the prompt text and each schema as the toolkit sends them.
    real = real_counter()
    offered = offered_names("compact", [tool.__name__ for f in families for tool in f.tools()])
    text = system_prompt("compact", families, offered)
    assert text.startswith(COMPACT_SYSTEM_PROMPT) and real(text) == compact["system_prompt_tokens"]
    assert "find_places" not in text and "run_pyqgis" not in text and "SQL" not in text  # hints of tools not sent
    assert compact["total_tokens"] < full["total_tokens"] / 2


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_auto_sends_a_small_model_the_compact_profile_and_a_big_one_every_tool(
    provider, sized_server, worker, recorder
):
    sized_server.script([Turn(text="Nine layers."), Turn(text="Nine layers.")])
    small = worker.submit("What layers are there?", config_for(sized_server, SMALL, provider))
    assert recorder.wait(small).status == "finished"
    worker.new_conversation()
    big = worker.submit("What layers are there?", config_for(sized_server, BIG, provider))
    assert recorder.wait(big).status == "finished"

    (small_request, big_request) = sized_server.chat_requests()
    small_prompt, small_tools = sent(small_request)
    big_prompt, big_tools = sent(big_request)
    assert small_tools == [name for name in big_tools if name in COMPACT_TOOLS] and len(small_tools) == 8
    assert small_prompt.startswith(COMPACT_SYSTEM_PROMPT) and big_prompt.startswith(SYSTEM_PROMPT)
    assert len(big_tools) > 8 and "make_chart" in big_tools and "make_chart" not in small_tools
    # What the server received costs what the bench counts: within the budget in Tekken tokens.
    real = real_counter()
    schemas = real(json.dumps(small_request.body["tools"], ensure_ascii=False))
    assert real(small_prompt) + schemas <= COMPACT_BUDGET_TOKENS
    (notice,) = recorder.of(small, Notice)
    assert "Compact tool profile" in notice.text and "135 M parameters" in notice.text
    assert recorder.of(big, Notice) == []


def test_an_openai_compatible_server_that_does_not_say_the_size_gets_the_full_profile(model_server, worker, recorder):
    """llama-cpp-python, vLLM and OpenAI list models without llama-server's meta: auto keeps every tool."""
    model_server.script([Turn(text="Hello.")])
    run = worker.submit("hi", config_for(model_server, "llama3.2:3b", "openai"))
    assert recorder.wait(run).status == "finished"
    prompt, tools = sent(model_server.chat_requests()[0])
    assert prompt.startswith(SYSTEM_PROMPT) and len(tools) > 8
    listed = [r for r in model_server.requests if r.path == "/v1/models"]
    assert len(listed) == 1  # asked once, and nothing there said the size


def test_the_settings_choose_the_profile_whatever_the_model(sized_server, worker, recorder):
    sized_server.script([Turn(text="One."), Turn(text="Two.")])
    run = worker.submit("hi", config_for(sized_server, BIG, tool_profile="compact"))
    assert recorder.wait(run).status == "finished"
    worker.new_conversation()
    run = worker.submit("hi", config_for(sized_server, SMALL, tool_profile="full"))
    assert recorder.wait(run).status == "finished"
    (compact, full) = [sent(r)[1] for r in sized_server.chat_requests()]
    assert len(compact) == 8 and len(full) > 8


def test_the_profile_is_fixed_for_a_conversation_across_runs_and_after_reopening_the_store(
    sized_server, tool_ctx, tmp_path, agent_stack
):
    store = tmp_path / "conversations.sqlite"
    sized_server.script([Turn(text="First."), Turn(text="Second."), Turn(text="Third."), Turn(text="New.")])
    worker = Conversation(tool_ctx, store_path=store)
    recorder = RunRecorder(worker)
    try:
        assert recorder.wait(worker.submit("one", config_for(sized_server, SMALL))).status == "finished"
        thread_id = worker.thread_id
        # The user switches to a big model mid-conversation: the conversation keeps its prompt and tools.
        second = worker.submit("two", config_for(sized_server, BIG))
        assert recorder.wait(second).status == "finished"
        (kept,) = recorder.of(second, Notice)
        assert "keeps the compact tool profile" in kept.text and "new conversation will use the full" in kept.text
        log = result_of(worker.run_log())
    finally:
        worker.shutdown()
    assert "keeps the compact tool profile" in log  # the run log says it too

    reopened = Conversation(tool_ctx, store_path=store)
    recorder = RunRecorder(reopened)
    try:
        result_of(reopened.open_conversation(thread_id))
        reopened.set_thread(thread_id)
        third = reopened.submit("three", config_for(sized_server, BIG, tool_profile="full"))
        assert recorder.wait(third).status == "finished"
        reopened.new_conversation()
        fresh = reopened.submit("four", config_for(sized_server, BIG, tool_profile="full"))
        assert recorder.wait(fresh).status == "finished"
    finally:
        reopened.shutdown()
    first, second_call, third_call, new = [sent(r) for r in sized_server.chat_requests()]
    assert len(first[1]) == 8 and first[0].startswith(COMPACT_SYSTEM_PROMPT)
    assert second_call == first and third_call == first  # the same system text and tool block: append-only
    assert len(new[1]) > 8 and new[0].startswith(SYSTEM_PROMPT)
    # The history only grew at its end: the second request starts with the first one's messages.
    bodies = [r.body["messages"] for r in sized_server.chat_requests()[:2]]
    assert bodies[1][: len(bodies[0])] == bodies[0] and len(bodies[1]) > len(bodies[0])


def test_compact_tools_not_sent_are_listed_by_describe_capabilities_and_still_run(sized_server, worker, recorder):
    sized_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_capabilities")]),
            Turn(
                tool_calls=[
                    ToolCall("make_chart", {"data": "districts", "kind": "bar", "x": "name", "y": "population"})
                ]
            ),
            Turn(text="Charted."),
        ]
    )
    run = worker.submit("Chart the population per district.", config_for(sized_server, SMALL))
    assert recorder.wait(run).status == "finished"
    described, charted = recorder.tool_results(run)
    _, tools = sent(sized_server.chat_requests()[0])
    assert "make_chart" not in tools
    # Every tool of the session is listed; those not sent are marked, with their arguments.
    assert "* = not in your tool list" in described.result
    for name in tools[:-1]:  # describe_capabilities does not list itself
        assert f"- {name}: " in described.result
    assert "- *make_chart(data, kind, x, y?, title?): " in described.result
    assert "- *load_data(" in described.result and "- load_data: " not in described.result
    # A call to a tool the toolkit knows but did not send runs like any other.
    assert charted.name == "make_chart" and charted.ok, charted.result


def test_describe_capabilities_marks_nothing_in_the_full_profile(sized_server, worker, recorder):
    sized_server.script([Turn(tool_calls=[ToolCall("describe_capabilities")]), Turn(text="All of these.")])
    run = worker.submit("What can you do?", config_for(sized_server, BIG))
    assert recorder.wait(run).status == "finished"
    (described,) = recorder.tool_results(run)
    assert "not in your tool list" not in described.result and "- *" not in described.result
    assert "- make_chart: " in described.result


def test_the_options_page_saves_and_loads_both_settings(make_page):
    page = make_page()
    assert page.tool_calls_combo.currentData() == "auto" and page.tool_profile_combo.currentData() == "auto"
    assert [page.tool_calls_combo.itemData(i) for i in range(page.tool_calls_combo.count())] == [
        "auto",
        "native",
        "guided",
    ]
    assert [page.tool_profile_combo.itemText(i) for i in range(page.tool_profile_combo.count())] == [
        "Auto",
        "Full",
        "Compact",
    ]
    assert page.tool_calls_combo.toolTip() and "8 tools" in page.tool_profile_combo.toolTip()
    page.tool_calls_combo.setCurrentIndex(page.tool_calls_combo.findData("guided"))
    page.tool_profile_combo.setCurrentIndex(page.tool_profile_combo.findData("compact"))
    page.apply()
    settings = PlgOptionsManager.get_plg_settings()
    assert (settings.tool_calls, settings.tool_profile) == ("guided", "compact")
    config = model_config_from_settings(settings)
    assert (config.tool_calls, config.tool_profile) == ("guided", "compact")
    again = make_page()
    assert again.tool_calls_combo.currentData() == "guided"
    assert again.tool_profile_combo.currentData() == "compact"


def test_the_command_line_flags_reach_the_model_config():
    from geogpt_qgis.cli import _model_config, build_parser

    parser = build_parser()
    PlgOptionsManager.set_value("tool_profile", "full")
    args = parser.parse_args(["ask", "q", "--project", "p.qgz", "--tool-calls", "guided", "--tool-profile", "compact"])
    config = _model_config(args)
    assert (config.tool_calls, config.tool_profile) == ("guided", "compact")
    plain = _model_config(parser.parse_args(["ask", "q", "--project", "p.qgz"]))
    assert (plain.tool_calls, plain.tool_profile) == ("auto", "full")  # the plugin settings, without the flags
    with pytest.raises(SystemExit):
        parser.parse_args(["ask", "q", "--project", "p.qgz", "--tool-profile", "tiny"])


def test_the_dock_says_when_a_conversation_starts_compact(
    sized_server, qgis_iface, demo_project, tmp_path, agent_stack
):
    from qgis.PyQt.QtWidgets import QLabel

    from tests.support.dock import close_dock, configure, open_dock, type_and_send

    configure(sized_server)
    PlgOptionsManager.set_value("ollama_model", SMALL)
    sized_server.script([Turn(text="Nine layers.")])
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    try:
        type_and_send(dock.panel, "What layers are there?")
        wait_until(lambda: dock.panel.statuses == ["finished"], 120)
        notices = [w.text() for w in dock.panel.findChildren(QLabel) if w.objectName() == "geogptNotice"]
    finally:
        close_dock(dock)
    assert any("Compact tool profile" in text and "135 M parameters" in text for text in notices), notices
    assert len(sent(sized_server.chat_requests()[0])[1]) == 8
