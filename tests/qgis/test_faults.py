"""Faults that lose nothing: the model server failing in every way, QGIS killed mid-step, PostgreSQL restarted.

Each fault goes through the real parts: ChatOllama and ChatOpenAI talking HTTP
to the scripted model server, the real graph, session, worker and SQLite
store, real tools on the demo project.  For each: the user reads what
happened in their words, the conversation reopens from the store with its
history up to the last finished step, nothing half-made is left in the
project, and the next message works.
"""

from __future__ import annotations

import email.utils
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.conversation import Conversation as AgentConversation
from geogpt_qgis.agent.memory import is_note
from geogpt_qgis.agent.providers import retries
from geogpt_qgis.agent.session import CUT_OFF_ANSWER, UNFINISHED_STEP
from geogpt_qgis.core.events import Notice, ToolStarted
from tests.support.big_layers import SLOW_EXPRESSION, write_big_points
from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.net import free_port
from tests.support.runs import RunRecorder, call_in_thread, wait_until

REPO = Path(__file__).resolve().parents[2]
PROVIDERS = ["ollama", "openai"]
FIRST_TURN = [HumanMessage, AIMessage, ToolMessage, AIMessage]


def make_config(server, provider: str, **overrides) -> ModelConfig:
    base = server.url if provider == "ollama" else server.url + "/v1"
    values = {"provider": provider, "base_url": base, "model": "qwen3:8b", "timeout": 10.0}
    values.update(overrides)
    return ModelConfig(**values)


def result_of(future, timeout: float = 30):
    """Wait for a worker future with the Qt loop running (the agent thread may need the main thread)."""
    wait_until(future.done, timeout)
    return future.result()


def kinds(messages) -> list[type]:
    return [type(m) for m in messages]


def said(history) -> list:
    """The stored messages without the plugin's notes for the model (the project's state heads every history)."""
    return [m for m in history if not is_note(m)]


class Conversation:
    """A worker on a store file and its recorder; reopened as QGIS would be after a restart."""

    def __init__(self, tool_ctx, store: Path, server, provider: str) -> None:
        self.tool_ctx, self.store, self.server, self.provider = tool_ctx, store, server, provider
        self.worker = AgentConversation(tool_ctx, store_path=store)
        self.recorder = RunRecorder(self.worker)

    def ask(self, text: str, turns: list[Turn], wait: float = 30, **config):
        self.server.script(turns)
        run = self.worker.submit(text, make_config(self.server, self.provider, **config))
        return run, self.recorder.wait(run, wait)

    def first_turn(self) -> None:
        """A finished step to keep: a tool call, its result and an answer."""
        _, finished = self.ask(
            "How many schools?",
            [Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]), Turn(text="There are 31 schools.")],
        )
        assert finished.status == "finished", finished.error

    def reopen(self) -> list:
        """Shut the worker down, open the store in a new one, continue the conversation: its stored messages."""
        thread_id = self.worker.thread_id
        self.worker.shutdown()
        self.worker = AgentConversation(self.tool_ctx, store_path=self.store)
        self.recorder = RunRecorder(self.worker)
        result_of(self.worker.open_conversation(thread_id))
        return said(result_of(self.worker.history(thread_id)))

    def goes_on(self) -> None:
        """The next message works, and the model gets a well-formed history."""
        _, finished = self.ask("And the hospitals?", [Turn(text="There are 4 hospitals.")])
        assert finished.status == "finished", finished.error
        sent = self.server.chat_requests()[-1].body["messages"]
        # The first question carries the project's state ahead of it (a note folded in for the model), and so
        # does the first question after the restart: a new session tells the model the project again.
        assert sent[1]["content"].startswith("[Open project: 'Elvbury demo town'")
        assert sent[1]["content"].endswith("\n\nHow many schools?")
        assert sent[-1]["content"].startswith("[Open project: 'Elvbury demo town'")
        assert sent[-1]["content"].endswith("\n\nAnd the hospitals?")
        assert any(m["role"] == "tool" and "31 features" in m["content"] for m in sent)

    def close(self) -> None:
        self.worker.shutdown()


@pytest.fixture
def conversation(request, tool_ctx, tmp_path, model_server):
    created = Conversation(tool_ctx, tmp_path / "store.sqlite", model_server, request.param)
    yield created
    created.close()


@pytest.fixture
def quick_retries(monkeypatch):
    """Short waits between tries when the server does not say how long (the policy is the same)."""
    monkeypatch.setattr(retries, "RETRY_BACKOFF_SECONDS", (0.1, 0.2))


ANSWER = "The schools are spread over " + "many districts " * 30
DROPPED = "closed the connection in the middle of its answer, so the answer was cut off"
FAULTS = {
    # fault: (the scripted reply, the config, what the user reads)
    "server-down": (None, {"base_url": "dead"}, "Cannot reach the"),
    "connection-closed-mid-answer": (Turn(text=ANSWER, fault="drop", fault_after=5), {}, DROPPED),
    "connection-reset-mid-answer": (Turn(text=ANSWER, fault="reset", fault_after=5), {}, DROPPED),
    "malformed-json-chunk": (
        Turn(text=ANSWER, fault="garbage", fault_after=5),
        {},
        "sent a reply that is not valid JSON, so it could not be read",
    ),
    "hangs-mid-answer": (
        Turn(text=ANSWER, fault="stall", fault_after=5, stall_seconds=4),
        {"timeout": 1.0},
        "did not answer within 1 s",
    ),
    "http-500-every-time": (
        [Turn(status=500, error="CUDA error: out of memory")] * 3,
        {},
        "answered with an error (HTTP 500): CUDA error: out of memory 3 times in a row",
    ),
    "http-429-asks-a-long-wait": (
        Turn(status=429, error="Rate limit reached", headers={"Retry-After": "120"}),
        {},
        "is rate-limiting requests (HTTP 429: too many requests). It asks to wait 120 s",
    ),
}


@pytest.mark.parametrize("conversation", PROVIDERS, indirect=True)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_model_server_fault_is_explained_and_loses_nothing(conversation, fault, demo_project, quick_retries):
    reply, config, expected = FAULTS[fault]
    conversation.first_turn()
    layers = set(demo_project.mapLayers())
    if config.get("base_url") == "dead":
        config = {"base_url": f"http://127.0.0.1:{free_port()}" + ("/v1" if conversation.provider == "openai" else "")}
    turns = reply if isinstance(reply, list) else [reply] if reply else []
    started = time.monotonic()
    run, finished = conversation.ask("Where are they?", turns, **config)
    shown = conversation.recorder.text(run)
    assert finished.status == "failed"
    assert expected in finished.error
    assert not finished.error.startswith(("The model call failed", "Unexpected error"))  # not a raw exception
    assert time.monotonic() - started < 8  # bounded: no endless retries or waits
    assert set(demo_project.mapLayers()) == layers  # nothing half-made in the project
    # After a restart the conversation holds every finished step (and the question, if the run began),
    # and the part of the answer that was shown before the server failed, marked as cut off.
    history = conversation.reopen()
    assert kinds(history[:4]) == FIRST_TURN and history[3].content == "There are 31 schools."
    contents = [m.content for m in history]
    after = contents[contents.index("There are 31 schools.") + 1 :]
    if shown:
        assert after == ["Where are they?", f"{shown.rstrip()}\n\n{CUT_OFF_ANSWER}"]
    else:
        assert after in ([], ["Where are they?"])
    conversation.goes_on()


@pytest.mark.parametrize("conversation", ["ollama"], indirect=True)
def test_a_reply_in_a_shape_the_client_cannot_read_is_explained(conversation, demo_project):
    conversation.first_turn()
    _, finished = conversation.ask("Where are they?", [Turn(text=ANSWER, fault="schema", fault_after=3)])
    assert finished.status == "failed"
    assert finished.error.startswith(f"The model server at {conversation.server.url} sent a reply in a form GeoGPT")
    assert "validation error" in finished.error and "updating the server may help" in finished.error
    assert kinds(conversation.reopen()[:4]) == FIRST_TURN
    conversation.goes_on()


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("status", "headers", "first_wait"),
    [(429, {"Retry-After": "1"}, 1.0), (500, {}, 0.1)],
    ids=["429-retry-after", "500"],
)
def test_a_busy_or_failing_server_is_asked_again(
    provider, status, headers, first_wait, model_server, worker, recorder, quick_retries
):
    model_server.script(
        [Turn(status=status, error="busy", headers=headers), Turn(status=status, error="busy"), Turn(text="Hello.")]
    )
    run = worker.submit("hello", make_config(model_server, provider))
    finished = recorder.wait(run)
    assert finished.status == "finished", finished.error
    assert recorder.text(run) == "Hello."
    notices = [n.text for n in recorder.of(run, Notice)]
    reason = "is busy" if status == 429 else "failed"
    when = "in 1 s" if first_wait == 1.0 else "now"
    assert notices[0] == f"The model server {reason} (HTTP {status}); trying again {when} (try 2 of 3)."
    assert notices[1] == f"The model server {reason} (HTTP {status}); trying again now (try 3 of 3)."
    requests = model_server.chat_requests()
    assert len(requests) == 3  # the provider's own retries are off: one policy for both protocols
    waited = requests[1].at - requests[0].at
    assert first_wait <= waited < first_wait + 1.5  # Retry-After honoured, else the short backoff


def test_retry_after_is_read_as_seconds_or_a_date_and_bounded():
    def failure(status: int, retry_after: str | None) -> Exception:
        headers = {"retry-after": retry_after} if retry_after else {}
        exc = RuntimeError(f"HTTP {status}")
        exc.response = SimpleNamespace(headers=headers, status_code=status)  # as httpx and openai errors carry it
        return exc

    assert retries.retry_wait(failure(429, "2"), 1) == 2.0
    soon = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= retries.retry_wait(failure(503, soon), 1) <= 10
    assert retries.retry_wait(failure(429, "3600"), 1) is None  # beyond the bound: the user is told
    assert retries.retry_wait(failure(500, None), 1) == retries.RETRY_BACKOFF_SECONDS[0]
    assert retries.retry_wait(failure(500, None), retries.RETRY_ATTEMPTS) is None  # tries used up
    assert retries.retry_wait(failure(400, "1"), 1) is None  # a bad request is not retried
    assert retries.retry_wait(failure(404, None), 1) is None


# -- malformed tool arguments: the same retry on both protocols ------------------------------------
def broken_call(provider: str, raw: str) -> ToolCall:
    # Over Ollama the arguments arrive as a string (some models' templates do that), over OpenAI they always do.
    return ToolCall("describe_layer", raw_arguments=raw, ollama_string=provider == "ollama")


@pytest.mark.parametrize("raw", ['{"layer" "schools"}', "layer=schools", '["schools"]'])
def test_malformed_tool_arguments_get_the_same_retry_message_on_both_protocols(raw, model_server, worker, recorder):
    sent = {}
    for provider in PROVIDERS:
        worker.new_conversation()
        model_server.requests.clear()
        model_server.script(
            [
                Turn(tool_calls=[broken_call(provider, raw)]),
                Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
                Turn(text="31 schools."),
            ]
        )
        run = worker.submit("describe the schools", make_config(model_server, provider))
        finished = recorder.wait(run)
        assert finished.status == "finished", finished.error  # never a raw ValidationError ending the run
        assert [r.ok for r in recorder.tool_results(run)] == [False, True]
        sent[provider] = model_server.chat_requests()[1].tool_messages()[-1]["content"]
    assert sent["ollama"] == sent["openai"]
    assert f"the arguments of your describe_layer call are not valid JSON (received {raw!r})" in sent["ollama"]
    assert "Call it again with a JSON object; its parameters are: layer" in sent["ollama"]


def test_ollama_arguments_sent_as_a_json_string_are_used(model_server, worker, recorder):
    call = ToolCall("describe_layer", {"layer": "schools"}, ollama_string=True)
    model_server.script([Turn(tool_calls=[call]), Turn(text="31 schools.")])
    run = worker.submit("describe the schools", make_config(model_server, "ollama"))
    assert recorder.wait(run).status == "finished"
    results = recorder.tool_results(run)
    assert len(results) == 1 and results[0].ok and "31 features" in results[0].result


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_truncated_tool_call_goes_back_to_the_model(provider, model_server, worker, recorder):
    model_server.script(
        [
            Turn(tool_calls=[broken_call(provider, '{"layer": "sch')]),
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
            Turn(text="31 schools."),
        ]
    )
    run = worker.submit("describe the schools", make_config(model_server, provider))
    assert recorder.wait(run).status == "finished"
    first, second = recorder.tool_results(run)
    assert not first.ok and second.ok
    told = model_server.chat_requests()[1].tool_messages()[-1]["content"]
    # Ollama's string is not JSON; OpenAI's streaming parser completes it to a layer that does not exist.
    assert "not valid JSON" in told or "did you mean 'schools'?" in told


# -- QGIS killed during a tool step ---------------------------------------------------------------
def project_with_big_layer(folder: Path) -> Path:
    """The demo project with a 200,000-point layer ``big`` (a slow scan to be killed in)."""
    from qgis.core import QgsProject, QgsVectorLayer

    path = copy_demo(folder)
    project = QgsProject()
    assert project.read(str(path))
    points = write_big_points(folder / "big.gpkg")
    project.addMapLayer(QgsVectorLayer(f"{points}|layername=big", "big", "ogr"))
    assert project.write(str(path))
    project.clear()
    return path


def test_qgis_killed_during_a_tool_step_keeps_the_finished_steps(model_server, tmp_path, tool_ctx):
    store = tmp_path / "conversations.sqlite"
    project = project_with_big_layer(tmp_path / "demo")
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
            Turn(tool_calls=[ToolCall("select_features", {"layer": "big", "expression": SLOW_EXPRESSION})]),
            Turn(text="never asked for: QGIS dies during the scan"),
        ]
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | {"QT_QPA_PLATFORM": "offscreen"}
    command = [sys.executable, "-m", "geogpt_qgis", "ask", "How many schools?", "--project", str(project)]
    command += ["--base-url", model_server.url, "--model", "qwen3:8b", "--store", str(store)]
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 90
        while "→ select_features" not in log.read_text(errors="replace"):
            assert process.poll() is None, "the command ended before it could be killed:\n" + log.read_text()
            assert time.monotonic() < deadline, "the run never reached the slow tool"
            time.sleep(0.05)
        time.sleep(0.3)  # the scan is under way
        assert process.poll() is None, "the scan ended before QGIS could be killed"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    assert len(model_server.chat_requests()) == 2
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT status FROM geogpt_runs").fetchall() == [("running",)]  # nobody could say

    # The next start: the run is marked stopped, the conversation holds every finished step.
    worker = AgentConversation(tool_ctx, store_path=store)
    recorder = RunRecorder(worker)
    try:
        with sqlite3.connect(store) as db:
            (thread_id,) = db.execute("SELECT thread_id FROM geogpt_conversations").fetchone()
        opened = result_of(worker.open_conversation(thread_id))
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT status, error FROM geogpt_runs").fetchall() == [
                (
                    "stopped",
                    "QGIS closed before this run ended (it was closed, killed or crashed); "
                    "the steps that had finished are kept.",
                )
            ]
        assert "**stopped** ■" in result_of(worker.run_log())
        assert [(e.kind, e.name) for e in opened.entries][:2] == [("user", ""), ("tool", "describe_layer")]
        history = said(result_of(worker.history(thread_id)))
        assert kinds(history) == [HumanMessage, AIMessage, ToolMessage, AIMessage]
        assert history[-1].tool_calls[0]["name"] == "select_features"
        # The conversation goes on; the killed step is answered, never run again.
        model_server.script([Turn(text="There are 31 schools.")])
        run = worker.submit("So?", ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=30))
        assert recorder.wait(run, 30).status == "finished"
        assert recorder.of(run, ToolStarted) == []
        sent = model_server.chat_requests()[-1].body["messages"]
        assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "assistant", "tool", "user"]
        assert sent[-2]["content"] == UNFINISHED_STEP
    finally:
        worker.shutdown()


# -- PostgreSQL restarted mid-query --------------------------------------------------------------
@pytest.mark.postgis
def test_postgresql_restarted_mid_query_gives_a_clear_error_and_the_next_call_works(tool_ctx):
    from geogpt_qgis.tools.base import ToolError
    from geogpt_qgis.tools.postgis.family import PostgisTools
    from tests.support.postgis import connect, saved_connection

    with connect() as conn, conn.cursor() as cursor:  # 15 on Debian 12, 17 in the trixie chroots of make test-matrix
        cursor.execute("SELECT current_setting('server_version_num')::int / 10000")
        cluster_version = str(cursor.fetchone()[0])

    def restart() -> None:
        # Waits for the query to be running, then restarts the server (other tests' sessions see it briefly).
        deadline = time.monotonic() + 10
        while True:
            with connect() as conn, conn.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%%pg_sleep(5)%%' "
                    "AND pid <> pg_backend_pid()"
                )
                if cursor.fetchone()[0]:
                    break
            assert time.monotonic() < deadline, "the query never started"
            time.sleep(0.05)
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]  # as scripts/postgis.sh starts the server
        subprocess.run(
            [*sudo, "pg_ctlcluster", "--skip-systemctl-redirect", cluster_version, "main", "restart"],
            check=True,
            capture_output=True,
            timeout=60,
        )

    import threading

    with saved_connection("h8_faults_restart") as name:
        tools = PostgisTools(tool_ctx)
        restarter = threading.Thread(target=restart)
        restarter.start()
        started = time.monotonic()
        with pytest.raises(ToolError) as error:
            call_in_thread(tools.run_sql, "SELECT pg_sleep(5)", name, timeout=30)
        restarter.join(60)
        message = str(error.value)
        assert f"the connection to {name!r} was lost" in message and "try again" in message
        assert time.monotonic() - started < 5  # told at once, not after the query's time
        text = call_in_thread(tools.run_sql, "SELECT 41 + 1 AS answer", name, timeout=30).text
        assert "42" in text


# -- in the dock -----------------------------------------------------------------------------------
def test_the_dock_shows_a_dropped_answer_in_the_users_words_and_stays_usable(panel, model_server):
    from qgis.PyQt.QtWidgets import QLabel

    from geogpt_qgis.gui.markdown_view import MarkdownView
    from tests.support.dock import items_of, type_and_send

    model_server.script([Turn(text=ANSWER, fault="drop", fault_after=5)])
    type_and_send(panel, "Where are the schools?")
    wait_until(lambda: panel.statuses == ["failed"], 120)
    errors = [w.text() for w in items_of(panel, QLabel) if w.property("level") == "error"]
    assert len(errors) == 1 and DROPPED in errors[0] and "Is Ollama running" not in errors[0]
    assert panel.send_button.text() == "Send" and panel.input.isEnabled()
    model_server.script([Turn(text="In the north.")])
    type_and_send(panel, "Where are the schools?")
    wait_until(lambda: panel.statuses == ["failed", "finished"], 120)
    assert items_of(panel, MarkdownView)[-1].source_text == "In the north."


def test_only_runs_whose_process_is_gone_count_as_abandoned():
    from geogpt_qgis.core.run_log import run_was_abandoned

    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert run_was_abandoned(int(finished.stdout))  # that process has ended
    assert run_was_abandoned(None)  # written before runs recorded their process
    assert not run_was_abandoned(os.getpid())  # this QGIS: its runs are live
    assert not run_was_abandoned(os.getppid())  # another QGIS still running on the same store
