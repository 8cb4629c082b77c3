"""The whole agent, end to end: the real graph and worker thread, real ChatOllama/ChatOpenAI
clients talking HTTP to the scripted model server, real tools on the demo project in QGIS."""

from __future__ import annotations

import json
import time

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.events import (
    ModelCallFinished,
    Notice,
    ReasoningDelta,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from tests.support.big_layers import SLOW_EXPRESSION, write_big_points
from tests.support.model_server import ToolCall, Turn
from tests.support.net import free_port
from tests.support.runs import (
    CODE_TOOL_NAMES,
    EDIT_TOOL_NAMES,
    EXAMPLE_TOOL_NAMES,
    INSIGHT_TOOL_NAMES,
    MAP_TOOL_NAMES,
    PROCESSING_TOOL_NAMES,
    PROJECT_TOOL_NAMES,
    wait_until,
)

PROVIDERS = ["ollama", "openai"]


def make_config(server, provider: str = "ollama", **overrides) -> ModelConfig:
    base = server.url if provider == "ollama" else server.url + "/v1"
    values = {"provider": provider, "base_url": base, "model": "qwen3:8b", "timeout": 10.0}
    values.update(overrides)
    return ModelConfig(**values)


def sent_tool_names(request) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_question_runs_real_tools_and_streams_the_answer(provider, model_server, worker, recorder, demo_project):
    answer = "There are **16 primary schools**; I selected them in *schools*.\n\n- checked the type field\n"
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("list_layers")]),
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
            Turn(tool_calls=[ToolCall("select_features", {"layer": "schools", "expression": "\"type\" = 'primary'"})]),
            Turn(text=answer),
        ]
    )
    run = worker.submit("How many primary schools are there? Select them.", make_config(model_server, provider))
    finished = recorder.wait(run)
    assert finished.status == "finished", finished.error
    assert recorder.text(run) == answer
    assert len(recorder.of(run, TextDelta)) >= 10  # streamed token by token, not in one piece
    assert recorder.tool_names(run) == ["list_layers", "describe_layer", "select_features"]
    results = recorder.tool_results(run)
    assert all(r.ok for r in results)
    assert "| schools |" in results[0].result and "31 features" in results[1].result
    assert results[2].result.startswith("Selected 16 of 31 features in 'schools'")
    schools = demo_project.mapLayersByName("schools")[0]
    assert schools.selectedFeatureCount() == 16
    assert len(recorder.of(run, ModelCallFinished)) == 4

    requests = model_server.chat_requests()
    assert len(requests) == 4
    first = requests[0].body["messages"]
    assert first[0]["role"] == "system" and "expert GIS analyst" in first[0]["content"]
    assert "Open project" not in first[0]["content"]  # the system prompt never changes; the project's state is a note
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[1]["content"].startswith("[Open project: 'Elvbury demo town'; CRS EPSG:25832; 9 layers")
    assert first[1]["content"].endswith("]\n\nHow many primary schools are there? Select them.")
    assert sent_tool_names(requests[0]) == [
        *PROJECT_TOOL_NAMES,
        *EDIT_TOOL_NAMES,
        *MAP_TOOL_NAMES,
        *PROCESSING_TOOL_NAMES,
        *CODE_TOOL_NAMES,
        *INSIGHT_TOOL_NAMES,
        *EXAMPLE_TOOL_NAMES,
        "describe_capabilities",
    ]
    # Each tool result went back to the model in the next request.
    assert "| schools |" in requests[1].tool_messages()[-1]["content"]
    assert "31 features" in requests[2].tool_messages()[-1]["content"]
    assert requests[3].tool_messages()[-1]["content"].startswith("Selected 16 of 31")


def test_reasoning_is_streamed_apart_from_the_answer(model_server, worker, recorder):
    model_server.capabilities = ("completion", "tools", "thinking")
    model_server.script([Turn(thinking="The user wants a count.", text="Four hospitals.")])
    run = worker.submit("How many hospitals?", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    assert "".join(e.text for e in recorder.of(run, ReasoningDelta)) == "The user wants a count."
    assert recorder.text(run) == "Four hospitals."
    assert model_server.chat_requests()[-1].body["think"] is True
    model_server.script([Turn(text="<think>count rows</think>Four hospitals.")])
    run = worker.submit("And now?", make_config(model_server, "openai"))
    assert recorder.wait(run).status == "finished"
    assert "".join(e.text for e in recorder.of(run, ReasoningDelta)) == "count rows"
    assert recorder.text(run) == "Four hospitals."


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_tools_and_bad_arguments_go_back_to_the_model(provider, model_server, worker, recorder):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("list_layer")]),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "visible": "maybe"})]),
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schols"})]),
            Turn(text="Done."),
        ]
    )
    run = worker.submit("hide parks", make_config(model_server, provider))
    assert recorder.wait(run).status == "finished"
    results = recorder.tool_results(run)
    assert [r.ok for r in results] == [False, False, False]
    requests = model_server.chat_requests()
    unknown = requests[1].tool_messages()[-1]["content"]
    assert "there is no tool 'list_layer'" in unknown and "Did you mean describe_layer" in unknown
    wrong_type = requests[2].tool_messages()[-1]["content"]
    assert "invalid arguments for set_layer" in wrong_type and "'visible'" in wrong_type
    assert "did you mean 'schools'?" in requests[3].tool_messages()[-1]["content"]
    assert recorder.text(run) == "Done."


def test_arguments_that_are_not_json_go_back_to_the_model_openai(model_server, worker, recorder):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_layer", raw_arguments='{"layer" "schools"}')]),
            # Cut-off JSON is completed by the streaming parser; the missing value is then reported.
            Turn(tool_calls=[ToolCall("read_features", raw_arguments='{"layer": ')]),
            Turn(text="ok"),
        ]
    )
    run = worker.submit("describe", make_config(model_server, "openai"))
    assert recorder.wait(run).status == "finished"
    message = model_server.chat_requests()[1].tool_messages()[-1]["content"]
    assert "the arguments of your describe_layer call are not valid JSON" in message
    assert "its parameters are: layer" in message
    message = model_server.chat_requests()[2].tool_messages()[-1]["content"]
    assert "invalid arguments for read_features: missing required argument 'layer'" in message


def test_arguments_that_are_not_json_go_back_to_the_model_ollama(model_server, worker, recorder):
    model_server.script(
        [Turn(tool_calls=[ToolCall("describe_layer", raw_arguments="{layer: schools")]), Turn(text="ok")]
    )
    run = worker.submit("describe", make_config(model_server, "ollama"))
    assert recorder.wait(run).status == "finished"
    assert any("could not be parsed" in n.text for n in recorder.of(run, Notice))
    last = model_server.chat_requests()[1].body["messages"][-1]
    assert last["role"] == "user" and "Your last tool call could not be parsed" in last["content"]
    assert "raw='{layer: schools'" in last["content"]
    assert recorder.text(run) == "ok"


def test_the_step_cap_stops_a_looping_model_and_the_conversation_goes_on(model_server, worker, recorder):
    model_server.script([Turn(tool_calls=[ToolCall("list_layers")]) for _ in range(6)])
    run = worker.submit("loop forever", make_config(model_server, "openai", max_steps=3))
    assert recorder.wait(run).status == "finished"
    assert len(model_server.chat_requests()) == 3
    notices = [n.text for n in recorder.of(run, Notice)]
    assert any(n.startswith("I stopped after 3 steps without reaching an answer.") for n in notices)
    # The history stays valid: the next question works and every tool call has its result.
    model_server.script([Turn(text="Seven layers.")])
    run = worker.submit("how many layers?", make_config(model_server, "openai", max_steps=3))
    assert recorder.wait(run).status == "finished"
    messages = model_server.chat_requests()[-1].body["messages"]
    call_ids = {c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    assert call_ids == answered
    assert recorder.text(run) == "Seven layers."


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dead_server_fails_clearly_and_the_next_message_works(provider, model_server, worker, recorder):
    dead = make_config(
        model_server, provider, base_url=f"http://127.0.0.1:{free_port()}" + ("/v1" if provider == "openai" else "")
    )
    run = worker.submit("hello", dead)
    finished = recorder.wait(run)
    assert finished.status == "failed"
    assert finished.error.startswith("Cannot reach the")
    model_server.script([Turn(text="Back online.")])
    run = worker.submit("hello again", make_config(model_server, provider))
    assert recorder.wait(run).status == "finished"
    assert recorder.text(run) == "Back online."


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda s: None, "is not installed on the Ollama server"),
        (
            # Asked three times (the retry policy), at once: the server says Retry-After: 0.
            lambda s: s.script([Turn(status=500, error="out of memory", headers={"Retry-After": "0"})] * 3),
            "answered with an error (HTTP 500): out of memory",
        ),
        (lambda s: setattr(s, "capabilities", ("completion",)), "cannot call tools, which GeoGPT needs"),
        (lambda s: s.script([Turn(text="slow", delay_first=3)]), "did not answer within 0.5 s"),
    ],
    ids=["model-not-installed", "http-500", "no-tool-support", "timeout"],
)
def test_server_problems_are_explained(setup, expected, model_server, worker, recorder):
    setup(model_server)
    model = "mistral:7b" if "installed" in expected else "qwen3:8b"
    # Native: a model without tool support is refused (Auto would ask it for guided calls instead).
    run = worker.submit("hello", make_config(model_server, model=model, timeout=0.5, tool_calls="native"))
    finished = recorder.wait(run)
    assert finished.status == "failed"
    assert expected in finished.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stop_while_streaming_ends_the_run_within_a_second(provider, model_server, worker, recorder):
    model_server.script([Turn(text="word " * 400, chunk_delay=0.02)])
    run = worker.submit("write a lot", make_config(model_server, provider))
    wait_until(lambda: len(recorder.of(run, TextDelta)) >= 5, 120)
    pressed = time.monotonic()
    worker.cancel(run)
    finished = recorder.wait(run, 5)
    assert finished.status == "cancelled"
    assert recorder.finished_at[run] - pressed < 1.0
    streamed = len(recorder.of(run, TextDelta))
    wait_until(lambda: time.monotonic() - pressed > 0.5)
    assert len(recorder.of(run, TextDelta)) == streamed  # nothing more arrives for a stopped run
    # The next message works.
    model_server.script([Turn(text="Short answer.")])
    run = worker.submit("short please", make_config(model_server, provider))
    assert recorder.wait(run).status == "finished"
    assert recorder.text(run) == "Short answer."


def test_stop_while_the_model_has_not_answered_yet(model_server, worker, recorder):
    model_server.script([Turn(text="late", delay_first=8)])
    run = worker.submit("hello", make_config(model_server))
    wait_until(lambda: len(model_server.chat_requests()) == 1, 120)
    pressed = time.monotonic()
    worker.cancel(run)
    assert recorder.wait(run, 5).status == "cancelled"
    assert recorder.finished_at[run] - pressed < 1.0


def test_stop_during_a_tool_ends_the_run_and_changes_nothing(model_server, worker, recorder, demo_project, tmp_path):
    from qgis.core import QgsVectorLayer

    big = QgsVectorLayer(f"{write_big_points(tmp_path / 'big.gpkg')}|layername=big", "big", "ogr")
    demo_project.addMapLayer(big)
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("select_features", {"layer": "big", "expression": SLOW_EXPRESSION})]),
            Turn(text="x"),
        ]
    )
    run = worker.submit("select the nines", make_config(model_server))
    wait_until(lambda: bool(recorder.of(run, ToolStarted)), 120)
    started = time.monotonic()
    wait_until(lambda: time.monotonic() - started > 0.3)  # the scan is under way
    pressed = time.monotonic()
    worker.cancel(run)
    assert recorder.wait(run, 5).status == "cancelled"
    assert recorder.finished_at[run] - pressed < 1.0
    # QGIS's iterator may finish the scan in the background; its selection must never be applied.
    wait_until(lambda: time.monotonic() > pressed + 6, 10)
    assert big.selectedFeatureCount() == 0
    assert not recorder.of(run, ToolFinished)


def test_what_can_you_do_is_answered_from_the_real_tool_list(model_server, worker, recorder):
    model_server.script(
        [Turn(tool_calls=[ToolCall("describe_capabilities")]), Turn(text="I can list and describe layers.")]
    )
    run = worker.submit("What can you do?", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    result = recorder.tool_results(run)[0].result
    sent = sent_tool_names(model_server.chat_requests()[0])
    for name in sent:
        if name != "describe_capabilities":
            assert f"- {name}: " in result


def test_num_ctx_comes_from_the_model_capped_by_the_setting(model_server, worker, recorder):
    model_server.context_length = 4096
    model_server.script([Turn(text="a"), Turn(text="b")])
    run = worker.submit("hi", make_config(model_server, context_limit=8192))
    assert recorder.wait(run).status == "finished"
    assert model_server.chat_requests()[-1].body["options"]["num_ctx"] == 4096
    model_server.context_length = 131072
    worker._session._model_info.clear()
    run = worker.submit("hi", make_config(model_server, context_limit=8192))
    assert recorder.wait(run).status == "finished"
    assert model_server.chat_requests()[-1].body["options"]["num_ctx"] == 8192


def test_a_conversation_remembers_and_a_new_one_forgets(model_server, worker, recorder):
    model_server.script([Turn(text="Nordby is in the north."), Turn(text="Yes."), Turn(text="Hello.")])
    recorder.wait(worker.submit("Where is Nordby?", make_config(model_server)))
    recorder.wait(worker.submit("Are you sure?", make_config(model_server)))
    second = model_server.chat_requests()[1].body["messages"]
    asked = [m["content"].rsplit("]\n\n", 1)[-1] for m in second[1:]]  # the first one carries the project's state
    assert asked == ["Where is Nordby?", "Nordby is in the north.", "Are you sure?"]
    worker.new_conversation()
    recorder.wait(worker.submit("Hi", make_config(model_server)))
    third = model_server.chat_requests()[2].body["messages"]
    assert len(third) == 2 and third[1]["content"].startswith("[Open project: ")  # a new conversation is told again
    assert third[1]["content"].endswith("]\n\nHi")


def test_the_api_key_comes_from_the_keychain_or_the_environment(model_server, worker, recorder, monkeypatch):
    from geogpt_qgis.toolbelt.secrets import set_api_key

    model_server.api_key = "sk-from-keychain"
    config = make_config(model_server, "openai")
    set_api_key(config.base_url, "sk-from-keychain")
    model_server.script([Turn(text="a")])
    assert recorder.wait(worker.submit("hi", config)).status == "finished"
    assert model_server.chat_requests()[-1].headers["authorization"] == "Bearer sk-from-keychain"
    set_api_key(config.base_url, "")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model_server.api_key = "sk-from-env"
    model_server.script([Turn(text="b")])
    assert recorder.wait(worker.submit("hi", config)).status == "finished"
    assert model_server.chat_requests()[-1].headers["authorization"] == "Bearer sk-from-env"


def test_tool_steps_carry_their_arguments(model_server, worker, recorder):
    model_server.script(
        [Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "name": "green"})]), Turn(text="ok")]
    )
    run = worker.submit("rename parks", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    started = recorder.of(run, ToolStarted)[0]
    assert started.name == "set_layer" and started.args == {"layer": "parks", "name": "green"}
    assert json.dumps(started.args)  # serialisable for the dock and the run log
