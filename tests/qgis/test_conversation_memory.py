"""History is not memory: long conversations stay inside the model's window, measured by the server."""

from __future__ import annotations

import itertools
from typing import Any

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.graph import answer_reserve
from geogpt_qgis.core.events import ContextUsage
from tests.support.model_server import ScriptedModelServer, ToolCall, Turn
from tests.support.runs import RunRecorder

WINDOW = 4096
TURNS = 200
LAYERS = ["schools", "districts", "roads", "rivers", "parks", "hospitals", "landuse"]


def question(i: int) -> str:
    layer = LAYERS[i % len(LAYERS)]
    return f"Question {i}: what can you tell me about the {layer} layer, and how does it relate to turn {i - 1}?"


def answer(i: int) -> str:
    return (
        f"Answer {i}: the {LAYERS[i % len(LAYERS)]} layer is in EPSG:25832. "
        + "It has a handful of fields worth knowing about, with values spread across the districts of Elvbury. " * 3
    )


def analyst(body: dict[str, Any]) -> Turn:
    """Every third question gets a describe_layer call first, then every question an answer."""
    messages = body["messages"]
    last = messages[-1]
    users = [m for m in messages if m["role"] == "user"]
    i = int(users[-1]["content"].rsplit("Question ", 1)[1].split(":", 1)[0])
    if last["role"] == "user" and i % 3 == 0:
        return Turn(tool_calls=[ToolCall("describe_layer", {"layer": LAYERS[i % len(LAYERS)]})])
    return Turn(text=answer(i))


def test_a_200_turn_conversation_stays_within_a_4096_token_window(tool_ctx, worker, demo_project):
    with ScriptedModelServer(analyst, context_length=WINDOW) as server:
        recorder = RunRecorder(worker)
        config = ModelConfig(model="qwen3:8b", base_url=server.url, timeout=30)
        for i in range(TURNS):
            run = worker.submit(question(i), config)
            finished = recorder.wait(run, 60)
            assert finished.status == "finished", (i, finished.error)
        requests = server.chat_requests()
    assert len(requests) == TURNS + len(range(0, TURNS, 3))
    measured = [r.prompt_tokens for r in requests]
    limit = WINDOW - answer_reserve(WINDOW)
    assert max(measured) <= limit, f"largest prompt {max(measured)} > {limit}"
    assert {r.body["options"]["num_ctx"] for r in requests} == {WINDOW}
    # Late in the conversation the window is used, not wasted, and older turns are summarised.
    assert min(measured[-50:]) > limit * 0.6
    last = requests[-1].body["messages"]
    assert "Earlier in this conversation" not in last[0]["content"]  # the system prompt stays the same
    summary, first_kept = last[1]["content"].split("\n\n", 1)  # the summary heads the first kept user message
    assert summary.startswith("Earlier in this conversation (not shown in full):")
    assert f"- User: Question {TURNS - 1}" not in summary  # the current turn is sent whole, not summarised
    assert last[-1]["content"] == answer(TURNS - 1) or last[-1]["content"] == question(TURNS - 1)
    shown = [m["content"] for m in last if m["role"] == "user"]
    assert shown[-1] == question(TURNS - 1)
    summarised = int(summary.split("- User: Question ")[-1].split(":", 1)[0])
    assert summarised == int(first_kept.split("Question ", 1)[1].split(":", 1)[0]) - 1  # no turn falls in between
    # Trimming drops turns in large steps: most requests start with the previous request's messages (64% with
    # the maps family's schemas, in a window so small that a cut frees room for only two or three turns; a cut
    # per turn would keep the start of about 4% of them).
    kept = sum(
        after.body["messages"][: len(before.body["messages"])] == before.body["messages"]
        for before, after in itertools.pairwise(requests)
    )
    assert kept > 0.5 * (len(requests) - 1), kept
    # The dock was told how full the window was before every call.
    usage = [e for _, e in recorder.events if isinstance(e, ContextUsage)]
    assert len(usage) == len(requests)
    assert all(u.limit == WINDOW and u.used <= limit for u in usage)
    assert usage[-1].omitted > 300
