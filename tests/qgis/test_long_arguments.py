"""A model looping inside a tool call's argument: the model is told the size and the bound, and the run goes on.

The issue's case, through the headless command and the real clients: a tool call
whose string argument holds 1,600 space-separated words ended every Ollama run
(langchain-ollama's ``ast.literal_eval`` raised ``MemoryError``), with a message
blaming the server for JSON it had sent correctly.  The scripted server sends
the call as the real servers do (Ollama's newline-delimited JSON, OpenAI's
server-sent events with the arguments in pieces).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from geogpt_qgis.core.call_bounds import CALL_TEXT_CHARS, REFUSED_ARGUMENTS
from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import ask

WORDS = " ".join(["school"] * 1_600)  # 11,199 characters: MemoryError in Python's parser
LONG = "near the river " * 2_000  # 30,000 characters: past what any tool reads
DEEP = {"INPUT": "schools", "DISTANCE": json.loads("[" * 40 + "1" + "]" * 40)}  # 40 levels: past CALL_DEPTH


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch) -> Path:
    """The command's QGIS profile under a folder of its own."""
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return data


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_long_and_deep_arguments_are_tool_errors_with_the_size_and_the_bound(provider, model_server, tmp_path):
    project = copy_demo(tmp_path / "demo")
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("find_algorithm", {"query": WORDS})]),
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": LONG})]),
            Turn(tool_calls=[ToolCall("run_algorithm", {"algorithm": "native:buffer", "parameters": DEEP})]),
            # Past 64 bits: the conversation's store could not hold the call, and the run ended (found by fuzzing).
            Turn(tool_calls=[ToolCall("read_features", {"layer": "schools", "limit": 10**20})]),
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
            Turn(text="There are 31 schools."),
        ]
    )
    base = model_server.url if provider == "ollama" else model_server.url + "/v1"
    done = ask(
        "How many schools?",
        *("--project", str(project), "--provider", provider, "--base-url", base, "--model", "qwen3:8b"),
        *("--max-steps", "7"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "There are 31 schools.\n"  # the run went on to the answer
    assert "not valid JSON" not in done.stderr and "MemoryError" not in done.stderr
    told = [request.tool_messages()[-1]["content"] for request in model_server.chat_requests()[1:]]
    # Within the transport's bound: the tool's own bound answers, with the size.
    assert f"query is {len(WORDS):,} characters; at most 500" in told[0]
    # Past it: the call never reached a parser; the model reads the size and the bound.
    assert told[1] == (
        f"Error: your describe_layer call was not run: layer is {len(LONG):,} characters; "
        f"at most {CALL_TEXT_CHARS:,} are read. Call it again with shorter arguments."
    )
    assert "parameters.DISTANCE" in told[2] and "nested more than 32 levels deep; at most 32 are read" in told[2]
    assert "limit is an integer of 21 digits; at most 18 are read" in told[3]
    assert "31 features" in told[4]
    # What the conversation keeps of the refused call is the reason, not the 30,000 characters.
    follow_up = model_server.chat_requests()[2].body["messages"]
    assert LONG not in str(follow_up) and REFUSED_ARGUMENTS in str(follow_up)
