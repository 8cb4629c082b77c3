"""The conversation store: one SQLite file in the QGIS profile holding every conversation.

LangGraph's SQLite checkpointer keeps each conversation's state (its tables
``checkpoints`` and ``writes``), written after every step.  Next to them this
module keeps what the dock lists and shows: the catalogue of conversations
(title, the project file it was made in, dates, turns) and the run log.  The
file is in WAL mode, so a crash loses at most the step in flight and the file
always opens.  Only the newest checkpoint of a conversation is needed (the
plugin never travels back in time), so older ones are pruned after each run:
the file grows with the history, not with its square.

All methods run on the agent's asyncio loop, on the checkpointer's own
connection (one writer, no lock contention).  Every text this module writes
passes ``core.secrets_scrub.scrub`` first: tool results are scrubbed where
they leave the toolkit, and this is the second line (errors, labels, titles).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.core.run_log import STOPPED, STOPPED_ERROR, RunRecord, dumps, event_record, run_was_abandoned
from geogpt_qgis.core.secrets_scrub import scrub

TITLE_CHARS = 60

SCHEMA = """
CREATE TABLE IF NOT EXISTS geogpt_conversations (
    thread_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    project TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS geogpt_runs (
    run_id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    label TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    status TEXT NOT NULL DEFAULT 'running',
    error TEXT,
    pid INTEGER
);
CREATE INDEX IF NOT EXISTS geogpt_runs_thread ON geogpt_runs (thread_id, started);
CREATE TABLE IF NOT EXISTS geogpt_run_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


@dataclass(frozen=True)
class ConversationInfo:
    """One conversation as the list shows it."""

    thread_id: str
    title: str
    project: str
    created: float
    updated: float
    turns: int


def title_from(text: str) -> str:
    """A conversation's first title: the start of its first message, on one line."""
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


class RunLog:
    """Records one run's events as they happen (each committed, so a crash keeps what came before)."""

    def __init__(self, store: ConversationStore, run_id: str, started: float) -> None:
        self.store, self.run_id, self.started = store, run_id, started
        self._seq = 0
        self.ended = False

    async def record(self, event: object) -> None:
        record = event_record(event)
        if record is None:
            return
        kind, data = record
        self._seq += 1
        await self.store.execute(
            "INSERT INTO geogpt_run_events (run_id, seq, at, kind, data) VALUES (?, ?, ?, ?, ?)",
            (self.run_id, self._seq, time.time() - self.started, kind, dumps(data)),
        )

    async def finish(self, status: str, error: str | None) -> None:
        if self.ended:
            return
        self.ended = True
        await self.store.execute(
            "UPDATE geogpt_runs SET ended = ?, status = ?, error = ? WHERE run_id = ?",
            (time.time(), status, error, self.run_id),
        )


class ConversationStore:
    """Catalogue and run log over the checkpointer's aiosqlite connection."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    async def setup(self) -> None:
        await self.connection.executescript(SCHEMA)
        columns = [row[1] for row in await self._rows("PRAGMA table_info(geogpt_runs)")]
        if "pid" not in columns:  # a store made before runs recorded their process
            await self.connection.execute("ALTER TABLE geogpt_runs ADD COLUMN pid INTEGER")
        await self.connection.commit()
        await self.close_abandoned_runs()

    async def close_abandoned_runs(self) -> int:
        """Mark stopped the runs still marked running whose QGIS is gone (closed, killed, crashed); how many."""
        rows = await self._rows("SELECT run_id, pid FROM geogpt_runs WHERE status = 'running'")
        gone = [run_id for run_id, pid in rows if run_was_abandoned(pid)]
        for run_id in gone:
            await self.connection.execute(
                "UPDATE geogpt_runs SET status = ?, error = ? WHERE run_id = ? AND status = 'running'",
                (STOPPED, STOPPED_ERROR, run_id),
            )
        await self.connection.commit()
        return len(gone)

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        await self.connection.execute(sql, _scrubbed(params))
        await self.connection.commit()

    async def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        async with self.connection.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    # -- the catalogue ------------------------------------------------------------
    async def touch(self, thread_id: str, message: str | None, project: str) -> None:
        """Note activity in a conversation (made on its first message); a user message adds a turn."""
        now = time.time()
        await self.connection.execute(
            "INSERT INTO geogpt_conversations (thread_id, title, project, created, updated, turns) "
            "VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT (thread_id) DO NOTHING",
            _scrubbed((thread_id, title_from(message or "") or "Conversation", project, now, now)),
        )
        await self.connection.execute(
            "UPDATE geogpt_conversations SET updated = ?, turns = turns + ?, "
            "project = CASE WHEN project = '' THEN ? ELSE project END WHERE thread_id = ?",
            _scrubbed((now, 1 if message is not None else 0, project, thread_id)),
        )
        await self.connection.commit()

    async def conversations(self, project: str | None = None) -> list[ConversationInfo]:
        """Newest first; ``project`` keeps only those made in that project file."""
        sql = "SELECT thread_id, title, project, created, updated, turns FROM geogpt_conversations"
        params: tuple[Any, ...] = ()
        if project is not None:
            sql += " WHERE project = ?"
            params = (project,)
        rows = await self._rows(sql + " ORDER BY updated DESC", params)
        return [ConversationInfo(*row) for row in rows]

    async def conversation(self, thread_id: str) -> ConversationInfo | None:
        rows = await self._rows(
            "SELECT thread_id, title, project, created, updated, turns FROM geogpt_conversations WHERE thread_id = ?",
            (thread_id,),
        )
        return ConversationInfo(*rows[0]) if rows else None

    async def rename(self, thread_id: str, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            raise ValueError("a conversation needs a title")
        await self.execute("UPDATE geogpt_conversations SET title = ? WHERE thread_id = ?", (title, thread_id))

    async def delete(self, thread_id: str) -> None:
        """Forget a conversation: its catalogue entry and run log (the checkpointer deletes its state)."""
        await self.connection.execute(
            "DELETE FROM geogpt_run_events WHERE run_id IN (SELECT run_id FROM geogpt_runs WHERE thread_id = ?)",
            (thread_id,),
        )
        await self.connection.execute("DELETE FROM geogpt_runs WHERE thread_id = ?", (thread_id,))
        await self.connection.execute("DELETE FROM geogpt_conversations WHERE thread_id = ?", (thread_id,))
        await self.connection.commit()

    async def prune(self, thread_id: str) -> int:
        """Delete all but the newest checkpoint of a conversation; returns how many went."""
        newest = await self._rows(
            "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''", (thread_id,)
        )
        if not newest or newest[0][0] is None:
            return 0
        keep = newest[0][0]
        cursor = await self.connection.execute(
            "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id < ?",
            (thread_id, keep),
        )
        removed: int = cursor.rowcount
        await self.connection.execute(
            "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id < ?", (thread_id, keep)
        )
        await self.connection.commit()
        return removed

    # -- the run log --------------------------------------------------------------
    async def start_run(self, thread_id: str, label: str) -> RunLog:
        run_id, started = uuid.uuid4().hex, time.time()
        await self.execute(
            "INSERT INTO geogpt_runs (run_id, thread_id, label, started, pid) VALUES (?, ?, ?, ?, ?)",
            (run_id, thread_id, label, started, os.getpid()),
        )
        return RunLog(self, run_id, started)

    async def runs(self, thread_id: str) -> list[RunRecord]:
        """A conversation's runs with their events, oldest first."""
        heads = await self._rows(
            "SELECT run_id, label, started, ended, status, error FROM geogpt_runs WHERE thread_id = ? ORDER BY started",
            (thread_id,),
        )
        # Scrubbed again on the way out: a secret registered after a row was written is hidden too.
        runs = [RunRecord(*_scrubbed(head)) for head in heads]
        for run in runs:
            rows = await self._rows(
                "SELECT at, kind, data FROM geogpt_run_events WHERE run_id = ? ORDER BY seq", (run.run_id,)
            )
            run.events = [(at, kind, json.loads(scrub(data))) for at, kind, data in rows]
        return runs


def _scrubbed(params: tuple[Any, ...]) -> tuple[Any, ...]:
    """Query parameters with any known secret removed from their text."""
    return tuple(scrub(p) if isinstance(p, str) else p for p in params)
