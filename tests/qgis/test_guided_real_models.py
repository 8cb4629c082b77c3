"""Guided tool calls against the real llama.cpp server (llama-cpp-python) with both real small models.

Natively neither model calls a tool here: the server renders no tools for
Gemma 3 270M (``--chat_format gemma``) nor for SmolLM2-135M-Instruct (its
ChatML template), and calls one only when ``tool_choice`` names it.  Guided,
each reply is held to the schema of one offered call or an answer, so both
make valid calls with the project's real names.  The agent is set up as a user
would (Tool calls: Guided, Tool profile: Compact) and the requests are not
edited: the pass-through only records them.
"""

from __future__ import annotations

import json
import re

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.profiles import COMPACT_TOOLS
from tests.support.llama_server import ShapingProxy, streamed_text

pytestmark = pytest.mark.real_model
QUESTION = "What fields does the roads layer have?"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def guided_config(base_url: str, model: str, n_ctx: int) -> ModelConfig:
    return ModelConfig(
        provider="openai",
        base_url=base_url,
        model=model,
        temperature=0.0,
        context_limit=n_ctx,
        timeout=180.0,
        max_steps=2,
        max_tokens=128,
        tool_calls="guided",
        tool_profile="compact",
    )


@pytest.mark.parametrize("which", ["gemma", "smollm2"])
def test_a_real_small_model_makes_a_valid_call_with_real_names_when_guided(
    which, request, worker, recorder, demo_project
):
    server = request.getfixturevalue("llama_server" if which == "gemma" else "smollm2_server")
    with ShapingProxy(server, lambda body: body) as proxy:
        config = guided_config(proxy.base_url, server.model, server.n_ctx)
        run = worker.submit(QUESTION, config)
        finished = recorder.wait(run, 600)
    assert finished.status == "finished", finished.error
    steps = recorder.tool_results(run)
    assert steps, f"no tool call; the replies: {[bytes(r)[:300] for r in proxy.replies]}"
    first = steps[0]
    assert first.name in COMPACT_TOOLS  # the schema offered only these
    layers = {layer.name() for layer in demo_project.mapLayers().values()}
    replies = [
        streamed_text(reply)
        for body, reply in zip(proxy.sent, proxy.replies, strict=True)
        if body.get("response_format", {}).get("type") == "json_object"
    ]
    # The first reply to a question is a call. Written whole, its names are real ones; one cut short by the
    # length bound (Gemma writes long strings) is still a call of an offered tool from its first bytes on.
    first_reply = replies[0]
    named = re.match(r'\s*\{\s*"tool"\s*:\s*"(\w+)"', first_reply)
    assert named and named.group(1) in COMPACT_TOOLS, first_reply[:300]
    for text in replies:
        try:
            written = json.loads(text)
        except ValueError:
            assert re.match(r'\s*\{\s*"(tool|answer|evidence)"\s*:', text), text[:300]  # cut short, on the schema
            continue
        if "tool" in written:
            assert written["tool"] in COMPACT_TOOLS
            layer = written["arguments"].get("layer")
            assert layer is None or layer in layers, layer  # a real layer, never a made-up one
        else:
            assert "answer" in written and set(written) <= {"answer", "evidence"}
            # The lines it quotes (before the answer, once a result stated a figure) are lines of those results.
            lines = {" ".join(line.split()) for step in steps for line in str(step.result).splitlines()}
            assert set(written.get("evidence", ())) <= lines, written
            # The compact profile's answer is grounded: every number in it was in the question or a result read.
            read = set(NUMBER.findall(" ".join([QUESTION, *(str(step.result) for step in steps)])))
            assert set(NUMBER.findall(written["answer"])) <= read, written["answer"]
            if written.get("evidence"):  # one line quoted, and the answer opens with a figure of that line
                (line,) = written["evidence"]
                assert NUMBER.match(written["answer"]), written
                assert set(NUMBER.findall(written["answer"])) <= set(NUMBER.findall(line)), written
    # On the wire: no tools, and the schema in the dialect this server reads (its first answer refused the other).
    assert all(not body.get("tools") for body in proxy.sent)
    held = [body["response_format"] for body in proxy.sent if "response_format" in body]
    assert held and held[-1]["type"] == "json_object" and "anyOf" in held[-1]["schema"]
    schemas = [h.get("schema") or h["json_schema"]["schema"] for h in held]  # either dialect
    answers = [branch for schema in schemas for branch in schema["anyOf"] if "answer" in branch.get("properties", {})]
    assert answers and all("pattern" in branch["properties"]["answer"] for branch in answers)
