"""The conversation store on disk: crash safety, pruning, the catalogue and the run log."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.conversation import Conversation
from geogpt_qgis.agent.memory import is_note
from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import RunRecorder, wait_until

REPO = Path(__file__).resolve().parents[2]


def result_of(future, timeout: float = 30):
    """Wait for a worker future with the Qt loop running (the agent thread may need the main thread)."""
    wait_until(future.done, timeout)
    return future.result()


def config_for(server) -> ModelConfig:
    return ModelConfig(model="qwen3:8b", base_url=server.url, timeout=30)


def stored_bytes(store: Path, needle: bytes) -> bool:
    """Whether a checkpoint or pending write in ``store`` holds ``needle`` (read beside the writing process)."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        found = [
            db.execute(f"SELECT count(*) FROM {table} WHERE instr({column}, ?) > 0", (needle,)).fetchone()[0]
            for table, column in (("checkpoints", "checkpoint"), ("writes", "value"))
            if table in tables
        ]
    return any(found)


def stored_worker(tool_ctx, store: Path) -> Conversation:
    return Conversation(tool_ctx, store_path=store)


def test_a_process_killed_mid_run_loses_only_the_step_in_flight(model_server, tmp_path, tool_ctx):
    store = tmp_path / "conversations.sqlite"
    project = copy_demo(tmp_path / "demo")
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("list_layers", {})]),
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
            Turn(text="never sent: the process dies while the model thinks", delay_first=60),
        ]
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | {"QT_QPA_PLATFORM": "offscreen"}
    command = [sys.executable, "-m", "geogpt_qgis", "ask", "Tell me about the schools", "--project", str(project)]
    command += ["--base-url", model_server.url, "--model", "qwen3:8b", "--store", str(store)]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while len(model_server.chat_requests()) < 3:
            assert process.poll() is None, "the command ended before it could be killed"
            assert time.monotonic() < deadline, "the run never reached its third model call"
            time.sleep(0.05)
        # Checkpoints are written beside the next step: wait until the describe_layer result is stored.
        wait_until(lambda: stored_bytes(store, b"31 features"), 90)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (thread_id,) = db.execute("SELECT thread_id FROM geogpt_conversations").fetchone()
        assert db.execute("SELECT status, ended FROM geogpt_runs").fetchall() == [("running", None)]

    worker = stored_worker(tool_ctx, store)
    recorder = RunRecorder(worker)
    try:
        opened = result_of(worker.open_conversation(thread_id))
        kinds = [(e.kind, e.name) for e in opened.entries]
        assert kinds == [("user", ""), ("tool", "list_layers"), ("tool", "describe_layer")]
        assert "31 features" in opened.entries[2].text
        log = result_of(worker.run_log())
        assert "did not end (QGIS closed or crashed)" in log and "✓ describe_layer" in log
        # The conversation goes on where it stopped.
        model_server.script([Turn(text="There are 31 schools.")])
        run = worker.submit("so how many are there?", config_for(model_server))
        assert recorder.wait(run, 30).status == "finished"
        sent = model_server.chat_requests()[-1].body["messages"]
        assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "assistant", "tool", "user"]
    finally:
        worker.shutdown()


def test_only_the_newest_checkpoint_is_kept(model_server, tmp_path, tool_ctx, demo_project):
    store = tmp_path / "conversations.sqlite"
    worker = stored_worker(tool_ctx, store)
    recorder = RunRecorder(worker)
    try:
        for i in range(5):
            model_server.script([Turn(tool_calls=[ToolCall("list_layers", {})]), Turn(text=f"answer {i}")])
            assert recorder.wait(worker.submit(f"question {i}", config_for(model_server)), 30).status == "finished"
        history = result_of(worker.history())
        # The project-state note heads the history, then 4 messages a question (asked, call, result, answer).
        assert is_note(history[0]) and not any(is_note(m) for m in history[1:])
        assert len(history) == 1 + 5 * 4
    finally:
        worker.shutdown()
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM checkpoints").fetchone() == (1,)
        assert db.execute(
            "SELECT count(*) FROM writes WHERE checkpoint_id < (SELECT max(checkpoint_id) FROM checkpoints)"
        ).fetchone() == (0,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_the_run_log_records_calls_tools_and_how_each_run_ended(model_server, tmp_path, tool_ctx, demo_project):
    store = tmp_path / "conversations.sqlite"
    worker = stored_worker(tool_ctx, store)
    recorder = RunRecorder(worker)
    config = config_for(model_server)
    try:
        model_server.script(
            [
                Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schols"})]),
                Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
                Turn(text="31 schools."),
            ]
        )
        assert recorder.wait(worker.submit("How many schools?", config), 30).status == "finished"
        model_server.script([Turn(text="slow", delay_first=30)])
        slow = worker.submit("and now slowly", config)
        wait_until(lambda: len(model_server.chat_requests()) == 4, 120)
        worker.cancel(slow)
        assert recorder.wait(slow, 10).status == "cancelled"
        dead = ModelConfig(model="qwen3:8b", base_url="http://127.0.0.1:9", timeout=5)
        assert recorder.wait(worker.submit("hello?", dead), 30).status == "failed"
        log = result_of(worker.run_log())
    finally:
        worker.shutdown()
    runs = log.split("### Run ")[1:]
    assert len(runs) == 3
    first, second, third = runs
    assert first.startswith("1: How many schools?") and "**finished** ✓" in first
    assert "3 model calls" in first and "2 tool calls" in first
    assert '| → describe_layer | layer="schols" |' in first
    assert "✗ describe_layer" in first and "no layer 'schols'" in first
    assert "✓ describe_layer" in first and "31 features" in first
    assert "| model call |" in first and "tokens in" in first
    assert "| context |" in first
    assert second.startswith("2: and now slowly") and "**cancelled**" in second
    assert third.startswith("3: hello?") and "**failed** ✗" in third and "127.0.0.1:9" in third


def test_the_catalogue_lists_renames_filters_exports_and_deletes(model_server, tmp_path, tool_ctx, demo_project):
    store = tmp_path / "conversations.sqlite"
    worker = stored_worker(tool_ctx, store)
    recorder = RunRecorder(worker)
    config = config_for(model_server)
    try:
        model_server.script(
            [Turn(tool_calls=[ToolCall("list_layers", {})]), Turn(text="Seven layers: **districts**, roads…")]
        )
        assert recorder.wait(worker.submit("Which layers\nare there?", config), 30).status == "finished"
        first = worker.thread_id
        worker.new_conversation()
        model_server.script([Turn(text="Hello.")])
        assert recorder.wait(worker.submit("hi", config), 30).status == "finished"
        second = worker.thread_id

        listed = result_of(worker.conversations())
        assert [(c.thread_id, c.title, c.turns) for c in listed] == [
            (second, "hi", 1),
            (first, "Which layers are there?", 1),
        ]
        assert {c.project for c in listed} == {demo_project.fileName()}
        assert result_of(worker.conversations(demo_project.fileName())) == listed
        assert result_of(worker.conversations("/elsewhere/other.qgz")) == []

        result_of(worker.rename_conversation(first, "  Layer   inventory "))
        markdown = result_of(worker.export_conversation(first))
        assert markdown.startswith("# Layer inventory\n")
        assert "## You\n\nWhich layers\nare there?" in markdown
        assert "**Tool `list_layers`** ✓" in markdown and "| districts |" in markdown
        assert "## GeoGPT\n\nSeven layers: **districts**, roads…" in markdown
        with pytest.raises(ValueError, match="needs a title"):
            result_of(worker.rename_conversation(first, "   "))

        result_of(worker.delete_conversation(first))
        assert [c.thread_id for c in result_of(worker.conversations())] == [second]
        assert result_of(worker.history(first)) == []
    finally:
        worker.shutdown()
