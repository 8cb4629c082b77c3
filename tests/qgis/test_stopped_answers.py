"""A stopped answer is kept, marked stopped: in the history (for the model too), reopened, exported, in the run log.

The real dock against the scripted model server: a slow streamed answer
stopped mid-way after a tool step, and a reply whose steps were finished,
under way (a slow query on the real PostGIS) and not started when Stop was pressed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time

import pytest
from qgis.PyQt import sip
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QLabel

from geogpt_qgis.core.stopped_run import STOPPED_ANSWER, STOPPED_STEP
from geogpt_qgis.gui.markdown_view import MarkdownView
from geogpt_qgis.gui.tool_step import ToolStepWidget
from tests.support.dock import items_of, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.postgis import connect, saved_connection
from tests.support.runs import wait_until

SELECT = ToolCall("select_features", {"layer": "schools", "expression": '"pupils" > 500'})
CONNECTION = "dock_a_stopped"


def result_of(future, timeout: float = 120):
    """A conversation future's result, keeping Qt's events flowing while it comes (the store waits for the stop)."""
    wait_until(future.done, timeout)
    return future.result()


def stop_when(panel, shown) -> None:
    wait_until(shown, 120)
    QTest.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
    wait_until(lambda: panel.statuses[-1:] == ["cancelled"], 120)


def counts(log: str) -> tuple[int, int]:
    """The model and tool calls the run log's first run counts."""
    found = re.search(r"(\d+) model calls?\b.* (\d+) tool calls?\b", log)
    assert found, log
    return int(found.group(1)), int(found.group(2))


def streamed_text(panel) -> str:
    return "".join(view.source_text for view in items_of(panel, MarkdownView))


def warnings(panel) -> list[str]:
    return [w.text() for w in items_of(panel, QLabel) if not sip.isdeleted(w) and w.property("level") == "warning"]


def test_a_stopped_answer_is_kept_marked_in_history_export_run_log_and_reopened(panel, model_server, tmp_path):
    model_server.script(
        [
            Turn(tool_calls=[SELECT]),
            Turn(text="Ten schools have more than 500 pupils. " + "They are big. " * 300, chunk_delay=0.02),
            Turn(text="Going on."),
        ]
    )
    type_and_send(panel, "which schools are big?")
    stop_when(panel, lambda: "They are big." in streamed_text(panel))
    seen = streamed_text(panel)
    conversation, thread = panel.runs.conversation, panel.runs.thread_id()

    history = result_of(conversation.history())  # waits for the stopped run to be wound down and stored
    kinds = [type(m).__name__ for m in history]
    assert kinds[-4:] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"], kinds
    stopped = history[-1]
    assert stopped.content.startswith(seen.strip()) and stopped.content.endswith(STOPPED_ANSWER)
    assert stopped.additional_kwargs["geogpt_kind"] == "stopped" and not stopped.tool_calls

    log = result_of(conversation.run_log())
    assert "**cancelled**" in log and counts(log) == (2, 1), log  # the cut model call counts

    path = tmp_path / "stopped.md"
    panel.view.export_conversation(thread, str(path))
    wait_until(path.exists, 120)
    exported = path.read_text(encoding="utf-8")
    assert "Ten schools have more than 500 pupils." in exported and "*(stopped by the user)*" in exported
    assert "select_features" in exported and STOPPED_ANSWER not in exported

    panel.view.open_conversation(thread)
    wait_until(lambda: any(isinstance(w, ToolStepWidget) for w in panel.chat.items()) and warnings(panel), 120)
    items = [w for w in panel.chat.items() if not sip.isdeleted(w)]
    answer = next(w for w in items if isinstance(w, MarkdownView))
    assert answer.source_text.startswith(seen.strip()) and STOPPED_ANSWER not in answer.source_text
    assert items.index(answer) < items.index(next(w for w in items if w.property("level") == "warning"))
    assert warnings(panel) == ["Stopped."]

    type_and_send(panel, "go on")  # the model's next turn reads a well-formed history, the stop included
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
    sent = model_server.chat_requests()[-1].body["messages"]
    roles = [m["role"] for m in sent]
    assert roles[-5:] == ["user", "assistant", "tool", "assistant", "user"], roles
    assert sent[-2]["content"].endswith(STOPPED_ANSWER)


@pytest.mark.postgis
def test_steps_finished_under_way_and_not_started_at_stop_are_answered_and_counted(panel, model_server):
    marker = "dock_a_stopped_sleep"
    slow = ToolCall("run_sql", {"connection": CONNECTION, "sql": f"SELECT pg_sleep(20) AS {marker}"})
    with saved_connection(CONNECTION):
        model_server.script([Turn(tool_calls=[SELECT, slow, SELECT]), Turn(text="Next.")])
        type_and_send(panel, "select, then wait in the database")
        stop_when(panel, lambda: _running(marker))
        conversation = panel.runs.conversation
        history = result_of(conversation.history())
        answers = [m for m in history if type(m).__name__ == "ToolMessage"]
        assert [a.status for a in answers] == ["success", "error", "error"]
        assert answers[0].content.startswith("Selected") and answers[0].artifact
        assert answers[1].content == STOPPED_STEP and answers[2].content == STOPPED_STEP
        assert history[-1].content == STOPPED_ANSWER
        log = result_of(conversation.run_log())
        assert counts(log) == (1, 2), log  # the step under way counts
        assert STOPPED_STEP in log
        started = time.monotonic()
        wait_until(lambda: not _running(marker), 5)  # the query was stopped on the server too
        assert time.monotonic() - started < 5


def _running(marker: str) -> bool:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE state = 'active' AND query LIKE %s AND pid <> pg_backend_pid()",
            (f"%{marker}%",),
        )
        return bool(cursor.fetchone()[0])


def test_a_stop_between_two_events_keeps_the_finished_step_and_answers_the_rest(worker, model_server):
    """The stop can land while the run log writes an event (not inside the graph): the run still keeps its work."""
    from langchain_core.messages import HumanMessage

    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.core.approval import POLICY_ASK
    from geogpt_qgis.core.events import ToolFinished

    model_server.script([Turn(tool_calls=[SELECT, SELECT]), Turn(text="x")])
    config = ModelConfig(provider="ollama", base_url=model_server.url, model="qwen3:8b", timeout=30)

    async def stop_after_the_first_step(session):
        inputs = {"messages": [HumanMessage("select twice")], "model_calls": 0, "approval_policy": POLICY_ASK}
        run = session._logged(inputs, config, "select twice", "select twice")
        while not isinstance(await run.__anext__(), ToolFinished):
            pass
        with contextlib.suppress(asyncio.CancelledError):
            await run.athrow(asyncio.CancelledError())  # as if Stop came while this event was being logged
        return await session.history(), await session.store.runs(session.thread_id)

    history, runs = result_of(worker._call(stop_after_the_first_step))
    answers = [m for m in history if type(m).__name__ == "ToolMessage"]
    assert [a.status for a in answers] == ["success", "error"]
    assert answers[0].content.startswith("Selected") and answers[1].content == STOPPED_STEP
    assert history[-1].content == STOPPED_ANSWER and history[-1].additional_kwargs["geogpt_kind"] == "stopped"
    assert runs[-1].status == "cancelled" and runs[-1].totals()[0] == 1 and runs[-1].totals()[3] >= 1
