"""Append-only prompts: every request starts with the previous request's messages, byte for byte.

Local servers (llama.cpp, Ollama) reuse the KV cache of the longest common
prefix of two requests; a system prompt that changes with the project, or a
summary inside it, makes them process the whole conversation again on every call.
"""

from __future__ import annotations

import itertools
import json

import pytest
from qgis.core import QgsVectorLayer

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.tools.project_watch import ProjectWatcher
from tests.support.model_server import ToolCall, Turn


def script(body: dict) -> Turn:
    """Every other question looks at the layers first; then an answer."""
    messages = body["messages"]
    users = [m for m in messages if m["role"] == "user"]
    if messages[-1]["role"] == "user" and len(users) % 2 == 0:
        return Turn(tool_calls=[ToolCall("list_layers")])
    return Turn(text=f"Answer {len(users)}: the project has what you see.")


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_five_turns_with_layers_added_between_them_only_ever_append(provider, model_server, tool_ctx, worker, recorder):
    model_server.script(script)
    base = model_server.url if provider == "ollama" else model_server.url + "/v1"
    config = ModelConfig(provider=provider, base_url=base, model="qwen3:8b", timeout=20)
    project = tool_ctx.project
    watcher = ProjectWatcher(project, tool_ctx.bridge)
    try:
        for turn in range(5):
            if turn:  # the user adds a layer between two questions, as in the dock
                project.addMapLayer(QgsVectorLayer("Point?crs=EPSG:25832", f"wells_{turn}", "memory"))
            note = watcher.drain() if turn else ""
            run = worker.submit(f"Question {turn + 1}: what is in the project now?", config, note=note)
            assert recorder.wait(run, 30).status == "finished"
    finally:
        watcher.close()
    requests = [r.body for r in model_server.chat_requests()]
    assert len(requests) == 5 + 2  # two of the questions made a tool call first
    dumped = [[json.dumps(m, sort_keys=True) for m in body["messages"]] for body in requests]
    for before, after in itertools.pairwise(dumped):
        assert after[: len(before)] == before, "a request did not start with the previous one's messages"
        assert len(after) > len(before)
    assert len({json.dumps(body.get("tools"), sort_keys=True) for body in requests}) == 1  # the tool block too
    system = requests[0]["messages"][0]
    assert system["role"] == "system" and "wells" not in system["content"] and "Open project" not in system["content"]
    users = [m["content"] for m in requests[-1]["messages"] if m["role"] == "user"]
    assert users[0].startswith("[Open project: 'Elvbury demo town'; CRS EPSG:25832; 9 layers")
    for turn in range(1, 5):
        assert users[turn].startswith(
            f"[Since your last answer, the user added layer 'wells_{turn}' (Point, 0 features)"
        )
    assert len(users) == 5 and sum("Open project" in text for text in users) == 1  # told once
    roles = [m["role"] for m in requests[-1]["messages"]]
    assert roles[0] == "system" and "system" not in roles[1:]  # templates that want system first, once, accept it
