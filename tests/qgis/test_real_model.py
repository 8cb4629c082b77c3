"""The agent against a real model server: llama.cpp (llama-cpp-python's server) running Gemma 3 270M.

Every other test talks to the scripted server; here the bytes come from a real
engine and a real (weak) model: its chat template, chunk shapes, error bodies
and crashes.  ``make llama`` builds the server once (harness/llama_server.py).

What the 270M model does on its own is not the point, the wire is: where a test
needs the model to do one thing (call a named tool, write ``<think>`` tags, say
one sentence) a pass-through proxy adds ``tool_choice`` or a ``grammar`` to the
request, and the server constrains the real model's sampling with it.  The reply
is the server's, byte for byte.  Answers are bounded (``max_tokens``) so that
each test is quick.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.demo import copy_demo
from tests.support.dock import close_dock, items_of, open_dock, type_and_send
from tests.support.llama_server import (
    MODEL_ALIAS,
    ShapingProxy,
    running_llama_server,
    streamed_deltas,
    streamed_text,
)
from tests.support.runs import RunRecorder, wait_until

pytestmark = pytest.mark.real_model

REPO = Path(__file__).resolve().parents[2]
ANSWER_TOKENS = 48  # enough to see streaming, short enough to keep the tier quick on 2 cores
# One sentence of the model's own words: a base 270M model otherwise repeats the question until a bound
# stops it, and the agent would (rightly) cut that loop short, which is not what these tests are about.
SENTENCE_GRAMMAR = r'''root ::= [A-Z] [a-z ,]{20,120} "."
'''
# Reasoning in tags, then an answer: what a DeepSeek-R1-style model streams through an OpenAI-compatible server.
THINK_GRAMMAR = r'''root ::= "<think>" thought "</think>" answer
thought ::= [a-z] [a-z ]{8,60}
answer ::= [A-Z] [a-z ]{8,60} "."
'''


def bounded(body: dict[str, Any]) -> dict[str, Any]:
    """Every request bounded to a short answer (the plugin's own bound may be larger)."""
    body["max_tokens"] = min(body.get("max_tokens") or ANSWER_TOKENS, ANSWER_TOKENS)
    return body


def sentence(body: dict[str, Any]) -> dict[str, Any]:
    """A short answer of one sentence, streamed token by token."""
    body["grammar"] = SENTENCE_GRAMMAR
    return bounded(body)


def force_tool(name: str, without_arguments: bool = False):
    """The model must call ``name`` when the user has just spoken; free afterwards.

    ``without_arguments``: the tool's schema is sent with no parameters, so the
    grammar makes the model call it with ``{}`` (``describe_layer`` then lists
    the layers, whatever layer name a 270M model would have made up).
    """

    def shape(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "user":
            body["tool_choice"] = {"type": "function", "function": {"name": name}}
            if without_arguments:
                for tool in body.get("tools") or []:
                    if tool["function"]["name"] == name:
                        tool["function"]["parameters"] = {"type": "object", "properties": {}}
            return bounded(body)
        return sentence(body)

    return shape


def thinking(body: dict[str, Any]) -> dict[str, Any]:
    body["grammar"] = THINK_GRAMMAR
    body["max_tokens"] = 200  # the grammar ends the answer well before
    return body


def use_server(base_url: str) -> None:
    """The plugin's settings, as a user who picked this server in the dock would save them."""
    PlgOptionsManager.set_value("provider", "openai")
    PlgOptionsManager.set_value("openai_base_url", base_url)
    PlgOptionsManager.set_value("openai_model", MODEL_ALIAS)
    PlgOptionsManager.set_value("temperature", 0.0)
    PlgOptionsManager.set_value("request_timeout", 120.0)


def ask_real(question: str, project: Path, base_url: str, *extra: str, timeout: float = 180) -> Any:
    """``python -m geogpt_qgis ask`` against the real server, as the README shows it."""
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "QGIS_CUSTOM_CONFIG_PATH")}
    environment["QT_QPA_PLATFORM"] = "offscreen"
    command = [sys.executable, "-m", "geogpt_qgis", "ask", question, "--project", str(project)]
    command += ["--provider", "openai", "--base-url", base_url, "--model", MODEL_ALIAS, *extra]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=environment)


@pytest.fixture
def user_data(tmp_path, monkeypatch) -> Path:
    """The command's QGIS profile under a folder of its own (never the user's)."""
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    return data


def test_a_real_servers_stream_reaches_the_dock_as_it_comes(qgis_iface, demo_project, tmp_path, llama_server):
    from geogpt_qgis.gui.markdown_view import MarkdownView

    with ShapingProxy(llama_server, sentence) as proxy:
        use_server(proxy.base_url)
        dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
        try:
            panel = dock.panel
            type_and_send(panel, "Say hello to the map makers of Elvbury.")
            seen: list[int] = []

            def shown() -> bool:
                views = items_of(panel, MarkdownView)
                seen.append(len(views[-1].source_text) if views else 0)
                return bool(panel.statuses)

            wait_until(shown, 120)
            assert panel.statuses == ["finished"], (panel.status.text(), proxy.replies[-1:] and proxy.replies[-1][:300])
            deltas = [d["content"] for d in streamed_deltas(proxy.replies[-1]) if d.get("content")]
            assert len(deltas) >= 5  # the server streamed the answer piece by piece
            final = items_of(panel, MarkdownView)[-1].source_text
            assert final.strip() and final.strip() == "".join(deltas).strip()  # all of it, and only it, shown
            assert any(0 < n < len(final) for n in seen)  # the dock showed it while it came
            # What the server was sent: the conversation (system prompt, question) and the tools, as any client.
            sent = proxy.sent[-1]
            assert sent["model"] == MODEL_ALIAS and sent["stream"] is True
            assert sent["messages"][-1]["role"] == "user"
            assert sent["messages"][-1]["content"].endswith("Say hello to the map makers of Elvbury.")
            assert {t["function"]["name"] for t in sent["tools"]} >= {"describe_layer", "find_algorithm"}
        finally:
            close_dock(dock)


def test_a_tool_call_made_by_the_real_model_is_parsed_and_run(tmp_path, user_data, llama_server):
    project = copy_demo(tmp_path / "demo")
    with ShapingProxy(llama_server, force_tool("describe_layer", without_arguments=True)) as proxy:
        done = ask_real("Which layers does this project have?", project, proxy.base_url, "--max-steps", "3")
    assert done.returncode == 0, done.stderr
    # The server streamed an OpenAI tool call (the model's arguments under the tool's JSON-schema grammar) ...
    calls = [c for d in streamed_deltas(proxy.replies[0]) for c in d.get("tool_calls") or []]
    assert calls and calls[0]["function"]["name"] == "describe_layer"
    # ... the agent ran it on the real project and sent the result back with the call's id.
    assert "describe_layer" in done.stderr
    follow_up = proxy.sent[1]["messages"]
    call = next(m for m in follow_up if m["role"] == "assistant" and m.get("tool_calls"))
    result = next(m for m in follow_up if m["role"] == "tool")
    assert call["tool_calls"][0]["function"]["name"] == "describe_layer"
    assert result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "schools" in result["content"] and "hospitals" in result["content"]
    assert "tool_choice" not in proxy.sent[1]  # after the tool, the model was free to answer
    assert done.stdout.strip() == streamed_text(proxy.replies[-1]).strip()


def test_the_real_model_repeating_itself_is_stopped_and_what_it_said_is_kept(tmp_path, user_data, llama_server):
    """The issue's case: unconstrained, Gemma 3 270M answers this by repeating the prompt over and over."""
    project = copy_demo(tmp_path / "demo")
    done = ask_real("How many schools are there?", project, llama_server.base_url, "--timeout", "150", timeout=200)
    assert done.returncode == 0, done.stderr
    assert "The model is repeating itself, so its answer was stopped here." in done.stderr
    assert "reached the length limit" not in done.stderr  # the loop detector ended it, not the token bound
    # What was streamed before the loop was recognised stays on screen: several rounds of the same lines.
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) >= 4 and len(set(lines)) < len(lines)
    assert "Traceback" not in done.stderr


def test_a_real_answer_with_think_tags_shows_the_reasoning_apart(qgis_iface, demo_project, tmp_path, llama_server):
    from qgis.PyQt.QtWidgets import QTextBrowser

    from geogpt_qgis.gui.collapsible import CollapsibleSection
    from geogpt_qgis.gui.markdown_view import MarkdownView

    with ShapingProxy(llama_server, thinking) as proxy:
        use_server(proxy.base_url)
        dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
        try:
            panel = dock.panel
            type_and_send(panel, "Where is the town hall?")
            wait_until(lambda: bool(panel.statuses), 120)
            assert panel.statuses == ["finished"]
            raw = streamed_text(proxy.replies[-1])
            assert raw.startswith("<think>") and "</think>" in raw  # the real server streamed the tags
            thought, answer = raw[len("<think>") :].split("</think>")
            sections = [s for s in items_of(panel, CollapsibleSection) if s.body is not None]
            bodies = [s.body.toPlainText() for s in sections if isinstance(s.body, QTextBrowser)]
            assert bodies == [thought]  # the reasoning in its own collapsed section, without tags
            assert items_of(panel, MarkdownView)[-1].source_text.strip() == answer.strip()  # the answer alone
            assert "<think>" not in items_of(panel, MarkdownView)[-1].source_text
        finally:
            close_dock(dock)


def test_a_question_longer_than_the_servers_context_gets_a_clear_message(tmp_path, user_data, llama_server):
    project = copy_demo(tmp_path / "demo")
    question = "Compare these places: " + ", ".join(f"site {n} near the river" for n in range(700)) + "."
    # The plugin's context limit (8,192 by default) is larger than the server's window (2,048 tokens).
    done = ask_real(question, project, llama_server.base_url, timeout=120)
    assert done.returncode == 1
    # llama-cpp-python streams nothing at all for such a prompt (see the facts below): the user is told the
    # likely cause and both ways out.
    assert "sent no answer at all" in done.stderr and "context window (--n_ctx)" in done.stderr
    assert "--context-limit" in done.stderr and "larger context" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_server_dying_mid_answer_keeps_the_conversation(tool_ctx, tmp_path):
    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.conversation import Conversation
    from geogpt_qgis.agent.session import CUT_OFF_ANSWER
    from geogpt_qgis.core.events import TextDelta

    store = tmp_path / "store.sqlite"
    with running_llama_server(tmp_path / "dying") as server:
        config = ModelConfig(provider="openai", base_url=server.base_url, model=MODEL_ALIAS, timeout=60, temperature=0)
        worker = Conversation(tool_ctx, store_path=store)
        recorder = RunRecorder(worker)
        try:
            run = worker.submit("Tell me a long story about the rivers of Elvbury.", config)
            wait_until(lambda: any(isinstance(e, TextDelta) for _, e in recorder.events), 120)
            server.kill()  # SIGKILL while it streams: what a crash or the OOM killer does
            finished = recorder.wait(run, 60)
            shown = recorder.text(run)
            thread_id = worker.thread_id
        finally:
            worker.shutdown()
    assert finished.status == "failed"
    assert "closed the connection in the middle of its answer" in finished.error
    assert shown.strip()
    # Reopened from the store (as after a restart): the question and the part of the answer that was shown.
    reopened = Conversation(tool_ctx, store_path=store)
    try:
        future = reopened.open_conversation(thread_id)
        wait_until(future.done, 30)
        future = reopened.history(thread_id)
        wait_until(future.done, 30)
        history = future.result()
    finally:
        reopened.shutdown()
    contents = [m.content for m in history if m.type in ("human", "ai")]
    question = "Tell me a long story about the rivers of Elvbury."
    assert contents[-2:] == [question, f"{shown.rstrip()}\n\n{CUT_OFF_ANSWER}"]


def test_the_server_facts_the_readme_names(llama_server):
    """The traps a user meets with llama-cpp-python's server, checked on this one."""
    # Without tool_choice naming a function the gemma format answers in text: tools are never called freely.
    schema = {"type": "object", "properties": {"layer": {"type": "string"}}, "required": ["layer"]}
    tools = [{"type": "function", "function": {"name": "describe_layer", "parameters": schema}}]
    reply = llama_server.chat([{"role": "user", "content": "List the layers."}], tools=tools, max_tokens=8)
    assert not reply["choices"][0]["message"].get("tool_calls")
    forced = llama_server.chat(
        [{"role": "user", "content": "Describe the schools layer."}],
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "describe_layer"}},
        max_tokens=32,
    )
    call = forced["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "describe_layer"
    # The schema's grammar makes an object with a string "layer"; it lets a raw newline into the string (seen
    # with another build of the same server), which strict JSON refuses: the agent's parser is lenient too.
    assert isinstance(json.loads(call["function"]["arguments"], strict=False)["layer"], str)
    # A prompt longer than n_ctx, streamed: HTTP 200 and an empty event stream, no error, no [DONE].
    long_prompt = [{"role": "user", "content": "river " * (llama_server.n_ctx + 100)}]
    assert llama_server.post_chat(long_prompt, stream=True) == (200, b"")
