"""A reply's calls that will never run are each answered once, valid and malformed alike.

A reply holding one valid call and one whose arguments are not JSON (an invalid
tool call) is paused for approval and then dropped or left for a new message, or
stopped while its valid call runs.  Afterwards the stored conversation holds
exactly one tool answer per call of the reply, and the next request is accepted:
the scripted server receives every assistant tool call id answered once (the
OpenAI protocol refuses a request with an unanswered ``tool_call_id``).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.events import ToolStarted
from tests.support.big_layers import SLOW_EXPRESSION, write_big_points
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import RunRecorder, wait_until

PROVIDERS = ["ollama", "openai"]
GATED = ToolCall("set_layer", {"layer": "parks", "remove": True}, call_id="call_gated")
BROKEN = ToolCall("list_layers", raw_arguments='{"filter" "parks"}', call_id="call_broken", ollama_string=True)


def make_config(server: Any, provider: str) -> ModelConfig:
    base = server.url if provider == "ollama" else server.url + "/v1"
    return ModelConfig(provider=provider, base_url=base, model="qwen3:8b", timeout=30.0)


def stored_answers(worker: Any) -> tuple[list[str], Counter[str]]:
    """The last tool-calling reply's call ids (valid then invalid) and how often each is answered after it.

    The reply must hold one valid call and one invalid call (ids are the server's over OpenAI and made up
    by the client over Ollama).
    """
    history = worker.history()
    wait_until(history.done, 30)
    messages = history.result()
    position = max(
        i for i, m in enumerate(messages) if isinstance(m, AIMessage) and (m.tool_calls or m.invalid_tool_calls)
    )
    reply = messages[position]
    assert len(reply.tool_calls) == 1 and len(reply.invalid_tool_calls) == 1, reply
    ids = [c["id"] for c in reply.tool_calls] + [c["id"] for c in reply.invalid_tool_calls]
    answered = Counter(m.tool_call_id for m in messages[position + 1 :] if isinstance(m, ToolMessage))
    return ids, answered


def assert_next_request_well_formed(model_server: Any, worker: Any, recorder: RunRecorder, provider: str) -> None:
    """A next question runs to its answer; the request it sent answers each assistant call id exactly once."""
    model_server.script([Turn(text="There are 9 layers.")])
    run = worker.submit("how many layers are there?", make_config(model_server, provider))
    assert recorder.wait(run, 60).status == "finished"
    assert recorder.text(run) == "There are 9 layers."
    sent = model_server.chat_requests()[-1].body["messages"]
    asked = [c.get("id") for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m.get("tool_call_id") for m in sent if m["role"] == "tool"]
    assert len(answered) == 2  # one answer per call of the reply, none twice
    if provider == "openai":  # each assistant call id answered once, or OpenAI refuses the request
        assert Counter(answered) == Counter(asked) and len(set(asked)) == 2
    else:  # langchain-ollama sends only the valid call in the assistant message, and no ids
        assert len(asked) == 1


def paused_with_a_broken_call(model_server: Any, worker: Any, recorder: RunRecorder, provider: str) -> None:
    model_server.script([Turn(tool_calls=[GATED, BROKEN])])
    run = worker.submit("remove the parks and list the layers", make_config(model_server, provider))
    finished = recorder.wait(run, 60)
    assert finished.status == "paused"
    ids, answered = stored_answers(worker)
    assert len(set(ids)) == 2  # one valid call waits; the malformed one is unanswered
    assert sum(answered.values()) == 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dropping_a_paused_reply_answers_its_valid_and_invalid_calls(provider, model_server, worker, recorder):
    paused_with_a_broken_call(model_server, worker, recorder, provider)
    dropped = worker.drop_pending()
    wait_until(dropped.done, 30)
    assert dropped.result() is True
    ids, answered = stored_answers(worker)
    assert answered == Counter(ids)  # exactly one answer per call
    assert_next_request_well_formed(model_server, worker, recorder, provider)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_moving_on_from_a_paused_reply_answers_its_valid_and_invalid_calls(provider, model_server, worker, recorder):
    paused_with_a_broken_call(model_server, worker, recorder, provider)
    assert_next_request_well_formed(model_server, worker, recorder, provider)
    history = worker.history()
    wait_until(history.done, 30)
    told = [m.content for m in history.result() if isinstance(m, ToolMessage)]
    assert told == ["Not done: the user moved on without deciding."] * 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stopping_a_reply_answers_its_running_and_invalid_calls(
    provider, model_server, worker, recorder, demo_project, tmp_path
):
    from qgis.core import QgsVectorLayer

    big = QgsVectorLayer(f"{write_big_points(tmp_path / 'big.gpkg')}|layername=big", "big", "ogr")
    demo_project.addMapLayer(big)
    slow = ToolCall("select_features", {"layer": "big", "expression": SLOW_EXPRESSION}, call_id="call_slow")
    model_server.script([Turn(tool_calls=[slow, BROKEN])])
    run = worker.submit("select the nines and list the layers", make_config(model_server, provider))
    wait_until(lambda: bool(recorder.of(run, ToolStarted)), 120)
    started = time.monotonic()
    wait_until(lambda: time.monotonic() - started > 0.3)  # the scan is under way
    worker.cancel(run)
    assert recorder.wait(run, 10).status == "cancelled"
    ids, answered = stored_answers(worker)
    assert answered == Counter(ids)  # exactly one answer per call
    assert_next_request_well_formed(model_server, worker, recorder, provider)
