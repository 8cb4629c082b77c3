"""A real server streaming a long and a pathologically deep tool-call argument: the run goes on to its answer.

llama.cpp (llama-cpp-python's server, Gemma 3 270M) streams a constrained tool
call token by token, repeating the call's id and name in every chunk.  The
arguments are made long and deep by the JSON schema the proxy sends for the
tool (the server turns it into a grammar the real model samples under); every
byte of the reply is the server's.  ``make llama`` builds the server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from geogpt_qgis.core.call_bounds import CALL_DEPTH
from tests.support.demo import copy_demo
from tests.support.llama_server import MODEL_ALIAS, ShapingProxy, streamed_deltas, streamed_text

pytestmark = pytest.mark.real_model

REPO = Path(__file__).resolve().parents[2]
LONG_CHARS = 600  # past describe_layer's bound on a layer name, and a few hundred tokens for the 270M model
DEPTH = CALL_DEPTH + 8  # past the bound every call is checked against as it arrives
SENTENCE = r"""root ::= [A-Z] [a-z ,]{20,80} "."
"""


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 9}
    for _ in range(depth):
        schema = {"type": "array", "items": schema, "minItems": 1, "maxItems": 1}
    return schema


def shape(body: dict[str, Any]) -> dict[str, Any]:
    """First a call with a 600-character layer name, then one nested 40 levels deep, then one sentence."""
    calls = sum(1 for m in body["messages"] if m["role"] == "tool")
    if calls >= 2:
        body["grammar"] = SENTENCE
        body["max_tokens"] = 48
        return body
    layer = {"type": "string", "minLength": LONG_CHARS, "maxLength": LONG_CHARS} if calls == 0 else nested(DEPTH)
    for tool in body.get("tools") or []:
        if tool["function"]["name"] == "describe_layer":
            tool["function"]["parameters"] = {"type": "object", "properties": {"layer": layer}, "required": ["layer"]}
    body["tool_choice"] = {"type": "function", "function": {"name": "describe_layer"}}
    body["max_tokens"] = 1_000
    return body


def raw_arguments(reply: bytes) -> str:
    """A streamed call's arguments as the server sent them, pieces joined (each piece once)."""
    return "".join(
        call["function"].get("arguments") or ""
        for delta in streamed_deltas(reply)
        for call in delta.get("tool_calls") or []
        if isinstance(call.get("function"), dict)
    )


def test_a_long_and_a_deep_argument_from_the_real_server_are_answered_and_the_run_goes_on(
    tmp_path, monkeypatch, llama_server
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "user-data"))
    project = copy_demo(tmp_path / "demo")
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "QGIS_CUSTOM_CONFIG_PATH")}
    with ShapingProxy(llama_server, shape) as proxy:
        command = [sys.executable, "-m", "geogpt_qgis", "ask", "Describe the schools layer.", "--project", str(project)]
        command += ["--provider", "openai", "--base-url", proxy.base_url, "--model", MODEL_ALIAS, "--max-steps", "4"]
        done = subprocess.run(
            command,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
            env={**environment, "QT_QPA_PLATFORM": "offscreen"},
        )
    assert done.returncode == 0, done.stderr
    assert len(proxy.sent) == 3, [m["role"] for m in proxy.sent[-1]["messages"]]
    # The server streamed each call in many pieces, as its tokens came.
    pieces = [d for d in streamed_deltas(proxy.replies[0]) if d.get("tool_calls")]
    assert len(pieces) >= 20
    long_name = json.loads(raw_arguments(proxy.replies[0]))["layer"]
    assert len(long_name) > 500
    deep = raw_arguments(proxy.replies[1])
    assert deep.count("[") == DEPTH  # the real model wrote all 40 levels
    told = [next(m for m in reversed(sent["messages"]) if m["role"] == "tool")["content"] for sent in proxy.sent[1:]]
    assert re.search(rf"layer is {len(long_name):,} characters; at most \d+", told[0]), told[0]
    assert told[1].startswith("Error: your describe_layer call was not run: layer[0]")
    assert f"is nested more than {CALL_DEPTH} levels deep; at most {CALL_DEPTH} are read" in told[1]
    assert "not valid JSON" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.strip() == streamed_text(proxy.replies[2]).strip()
