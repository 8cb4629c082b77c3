"""The tool fuzzer against the processes a user starts: the MCP server (stdio) and ``python -m geogpt_qgis ask``.

``test_fuzz_tools.py`` runs generated calls through the agent graph in a child
QGIS; here the same strategies (``tests.support.fuzz_child``) reach the tools
through each command's own front door, with the OGC API server, the PostgreSQL
connection and short time limits saved in the user's profile, where those
commands read them (``tests.support.process_fuzz``).  A process that dies (a
signal, an exit status nobody explained), hangs, leaves a call without an
answer, answers "failed unexpectedly", or changes the database or the
GeoPackage under the "never" approval policy fails the test, with the call.

``GEOGPT_FUZZ_EXAMPLES`` scales the calls (``make test``: 60 to the MCP server,
30 per model protocol through ``ask``; about a minute and a half in all),
``GEOGPT_FUZZ_SEED`` sets the seed (random by default, printed with failures).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.support.demo import GPKG, copy_demo
from tests.support.fuzz_child import database_state, file_hash
from tests.support.model_server import ToolCall, Turn
from tests.support.process_fuzz import (
    REPO,
    ProcessDied,
    StdioProcess,
    child_env,
    draw_calls,
    json_text,
    save_profile,
    shown,
    start_mcp,
    vocabulary,
)

EXAMPLES = int(os.environ.get("GEOGPT_FUZZ_EXAMPLES", "60"))
SEED = int(os.environ.get("GEOGPT_FUZZ_SEED", str(random.randrange(2**32))))
CALLS_PER_REPLY = 4
CALLS_PER_RUN = 60  # under the agent's cap of 64 tool calls per question, so every call runs
PROFILE_TOOLS = {"describe_table", "run_sql", "describe_ogc_collections", "query_ogc_collection"}


def text_of(answer: dict) -> str:
    return "".join(block.get("text", "") for block in answer.get("result", {}).get("content", []))


def test_a_process_that_dies_is_reported_with_the_call_and_its_stack(tmp_path):
    """The harness itself: a process killed by a signal in the middle of a call fails, naming the call."""
    code = "import faulthandler, os, signal, sys; faulthandler.enable(); sys.stdin.readline(); os.kill(os.getpid(), 11)"
    process = StdioProcess([sys.executable, "-c", code], dict(os.environ), tmp_path / "stderr.txt")
    with pytest.raises(ProcessDied) as died:
        process.request("tools/call", {"name": "describe_layer"}, "describe_layer {'layer': 'schools'}", timeout=30)
    message = str(died.value)
    assert f"exit {-signal.SIGSEGV}" in message and "during describe_layer {'layer': 'schools'}" in message
    assert "Fatal Python error: Segmentation fault" in message


@pytest.mark.postgis
def test_fuzzed_calls_to_the_mcp_server_process_are_all_answered(tmp_path, ogc_server, qgis_app):
    project = copy_demo(tmp_path / "demo")
    data_home = tmp_path / "user-data"
    save_profile(data_home, ogc_server.url)
    words = vocabulary(project)
    gpkg = project.parent / GPKG.name
    before = (file_hash(gpkg), database_state())
    server = start_mcp(project, data_home, tmp_path / "mcp-stderr.txt")
    failures: list[str] = []
    slowest = (0.0, "")
    try:
        tools = server.request("tools/list", {}, "tools/list")["result"]["tools"]
        schemas = {tool["name"]: tool["inputSchema"] for tool in tools}
        assert set(schemas) >= PROFILE_TOOLS, sorted(schemas)  # the profile's connection and server were read
        listed = server.request("tools/call", {"name": "describe_ogc_collections", "arguments": {}}, "listing")
        assert not listed["result"]["isError"] and "schools" in text_of(listed), text_of(listed)
        table = {"name": "describe_table", "arguments": {"tables": ["public.schools"], "connection": "h5_fuzz"}}
        described = server.request("tools/call", table, "describing")
        assert not described["result"]["isError"] and "pupils" in text_of(described), text_of(described)
        calls = draw_calls(schemas, words, EXAMPLES, SEED)
        for name, args in calls:
            started = time.monotonic()
            call = f"{name} {shown(args)} (seed {SEED})"
            answer = server.request("tools/call", {"name": name, "arguments": json_text(args)}, call)
            took = time.monotonic() - started
            slowest = max(slowest, (took, call))
            if "error" in answer:  # a JSON-RPC error (arguments that are not an object): answered
                continue
            if "failed unexpectedly" in text_of(answer):
                failures.append(f"{call}: {text_of(answer)[:300]}")
        status = server.close()
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()
    print(f"fuzz mcp process (seed {SEED}): {len(calls)} calls, slowest {slowest[0]:.1f} s: {slowest[1][:120]}")
    assert len(calls) >= EXAMPLES // 2
    assert status == 0, server.stderr_tail()  # the client hung up: the server ends cleanly
    assert not failures, "\n".join(failures[:20])
    assert (file_hash(gpkg), database_state()) == before  # nothing gated ran under the "never" policy


def scripted_turns(calls: list, provider: str) -> list[Turn]:
    """The model's replies: the calls, a few per reply (anything but an object as raw text), then an answer."""
    turns = []
    for start in range(0, len(calls), CALLS_PER_REPLY):
        tool_calls = [
            ToolCall(name, args)
            if isinstance(args, dict)
            else ToolCall(name, raw_arguments=json.dumps(args), ollama_string=provider == "ollama")
            for name, args in calls[start : start + CALLS_PER_REPLY]
        ]
        turns.append(Turn(tool_calls=tool_calls))
    return [*turns, Turn(text="Fuzzed.")]


@pytest.mark.postgis
@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_fuzzed_tool_calls_through_the_command_are_all_answered(provider, tmp_path, ogc_server, model_server, tool_ctx):
    from geogpt_qgis.agent.toolkit import Toolkit
    from geogpt_qgis.tools.registry import build_families

    project = copy_demo(tmp_path / "demo")
    data_home = tmp_path / "user-data"
    save_profile(data_home, ogc_server.url)
    toolkit = Toolkit([tool for family in build_families(tool_ctx) for tool in family.tools()])
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in toolkit.bounded_schemas}
    calls = draw_calls(schemas, vocabulary(project), max(EXAMPLES // 2, 8), SEED)
    gpkg = project.parent / GPKG.name
    before = (file_hash(gpkg), database_state())
    base = model_server.url if provider == "ollama" else model_server.url + "/v1"
    for start in range(0, len(calls), CALLS_PER_RUN):
        run = calls[start : start + CALLS_PER_RUN]
        turns = scripted_turns(run, provider)
        model_server.requests.clear()
        model_server.script(turns)
        command = [sys.executable, "-X", "faulthandler", "-m", "geogpt_qgis", "ask", "Fuzz the tools."]
        command += ["--project", str(project), "--provider", provider, "--base-url", base, "--model", "qwen3:8b"]
        command += ["--max-steps", str(len(turns))]
        done = subprocess.run(
            command,
            cwd=REPO,
            env=child_env(data_home),
            capture_output=True,
            text=True,
            timeout=120 + 6 * len(run),
        )
        fault = done.stderr.find("Fatal Python error")
        said = done.stderr[fault : fault + 3000] if fault >= 0 else done.stderr[-3000:]
        sent = model_server.chat_requests()
        last = max(len(sent) - 1, 0) * CALLS_PER_REPLY  # the calls of the last reply the model sent
        served = [shown(call, 200) for call in run[last : last + CALLS_PER_REPLY]]
        assert done.returncode == 0, f"exit {done.returncode} (seed {SEED}) after the calls {served}:\n{said}"
        assert done.stdout == "Fuzzed.\n", said
        offered = {tool["function"]["name"] for tool in sent[0].body["tools"]}
        assert offered >= PROFILE_TOOLS, sorted(offered)  # the profile's connection and server were read
        answers = sent[-1].tool_messages()
        assert len(answers) == len(run), f"{len(answers)} answers to {len(run)} calls (seed {SEED})"
        broken = [m["content"][:300] for m in answers if "failed unexpectedly" in m["content"]]
        assert not broken, f"(seed {SEED})\n" + "\n".join(broken)
    assert (file_hash(gpkg), database_state()) == before  # nothing gated ran under the "never" policy
    print(f"fuzz ask {provider} (seed {SEED}): {len(calls)} calls")
