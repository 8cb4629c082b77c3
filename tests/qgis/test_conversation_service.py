"""The conversation service gives up a waiting step whole: malformed calls in it are answered too.

A reply with a risky call (it waits for approval) and a call whose arguments
are not JSON: dropping the step, or moving on with a new message, must answer
both, or the next request would hold a call without a result (which
OpenAI-compatible servers refuse).  Real clients against the scripted server.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from geogpt_qgis.agent.config import ModelConfig
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until


def _reply_with_a_broken_call() -> list[Turn]:
    return [
        Turn(
            tool_calls=[
                ToolCall("set_layer", {"layer": "parks", "remove": True}, call_id="risky1"),
                ToolCall("describe_layer", raw_arguments='{"layer" "schools"}', call_id="broken1"),
            ]
        ),
        Turn(text="There are 7 layers."),
    ]


def _answered_calls(model_server) -> tuple[set[str], dict[str, str]]:
    """The ids of the calls in the last request's assistant message with calls, and the tool results after it."""
    messages = model_server.chat_requests()[-1].body["messages"]
    asked = max(i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls"))
    calls = {c["id"] for c in messages[asked]["tool_calls"]}
    answers = {m["tool_call_id"]: m["content"] for m in messages[asked + 1 :] if m.get("role") == "tool"}
    return calls, answers


@pytest.mark.parametrize("how", ["drop", "new message"])
def test_a_given_up_step_answers_every_call_including_malformed_ones(worker, recorder, model_server, how):
    config = ModelConfig(provider="openai", base_url=model_server.url + "/v1", model="qwen3:8b", timeout=30)
    model_server.script(_reply_with_a_broken_call())
    first = recorder.wait(worker.submit("remove the parks and describe the schools", config), 30)
    assert first.status == "paused"
    if how == "drop":
        dropped = worker.drop_pending()
        wait_until(dropped.done, 30)
        assert dropped.result() is True
    later = recorder.wait(worker.submit("how many layers are there?", config), 30)
    assert later.status == "finished"
    calls, answers = _answered_calls(model_server)
    assert calls == {"risky1", "broken1"}
    # Answered in the store, as given up (not patched over at send time as a stopped run's calls are).
    why = "Not done: the user dropped this step." if how == "drop" else "Not done: the user moved on without deciding."
    assert answers == {"risky1": why, "broken1": why}
    history = worker.history()
    wait_until(history.done, 30)
    stored = {m.tool_call_id for m in history.result() if isinstance(m, ToolMessage)}
    assert stored >= {"risky1", "broken1"}
