"""The conversation service: a conversation's whole life, asked for from the main thread.

Submit a message, resume a run after an approval, stop, give up a waiting
step, read the history; list, open, rename, delete and export the stored
conversations.  The service owns which conversation is current
(``thread_id``), the runs under way and the store; the work itself runs on
the agent's thread (``worker.AgentWorker``), and answers come back as events
(``event``, delivered on the main thread) or as futures.  The run engine
(``session.AgentSession``) and the store are built on that thread at first
use, so neither QGIS start-up nor the main thread pays for LangChain.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from geogpt_qgis.agent.worker import AgentWorker, preload_agent_stack
from geogpt_qgis.core import secrets_scrub
from geogpt_qgis.core.approval import POLICY_ASK, ApprovalRequest
from geogpt_qgis.core.cancel import CancelToken, RunCancelled, current_cancel_token, current_conversation
from geogpt_qgis.core.events import Event, RunFinished
from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA

if TYPE_CHECKING:
    from qgis.core import QgsProject
    from qgis.gui import QgisInterface
    from qgis.PyQt.QtCore import QObject

    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.session import AgentSession
    from geogpt_qgis.agent.store import ConversationInfo, ConversationStore
    from geogpt_qgis.agent.transcript import Entry
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools.base import ToolContext

log = logging.getLogger(__name__)

T = TypeVar("T")

RunEvents = Callable[["AgentSession", "ModelConfig"], AsyncIterator[Event]]


@dataclass(frozen=True)
class OpenedConversation:
    """A conversation continued from the store: what to show, and any step waiting for approval."""

    thread_id: str
    entries: list[Entry]
    pending: ApprovalRequest | None


class Conversation:
    """One conversation at a time over one QGIS project, and the store of the earlier ones; one run at a time."""

    def __init__(self, ctx: ToolContext, store_path: Path | None = None, parent: QObject | None = None) -> None:
        self.ctx = ctx
        self.store_path = store_path
        self.worker = AgentWorker(parent)
        # run id, event object (a ``core.events`` dataclass); delivered on the main thread
        self.event = self.worker.run_event
        self.thread_id = uuid.uuid4().hex  # the conversation the next message goes to (main thread)
        self._ids = itertools.count(1)
        self._runs: dict[int, tuple[Future[None], CancelToken]] = {}
        # Built on the agent's thread at first use.
        self._session: AgentSession | None = None
        self._store: ConversationStore | None = None
        # One piece of work at a time (a run, a drop, a look at a pending approval), in the order asked.
        self._lock = asyncio.Lock()
        self._own_bridge: MainThreadBridge | None = None

    @classmethod
    def on_project(
        cls, project: QgsProject, iface: QgisInterface | None, store_path: Path | None, parent: QObject | None = None
    ) -> Conversation:
        """The dock's service: it makes the tools' context and its main-thread bridge, and closes the bridge."""
        from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
        from geogpt_qgis.tools.base import ToolContext

        bridge = MainThreadBridge(parent)
        conversation = cls(ToolContext(project=project, bridge=bridge, iface=iface), store_path, parent)
        conversation._own_bridge = bridge
        return conversation

    @property
    def bridge(self) -> MainThreadBridge:
        """The bridge the tools reach the main thread through (its ``acting`` flag marks the agent's changes)."""
        return self.ctx.bridge

    # -- runs ----------------------------------------------------------------
    def submit(self, text: str, config: ModelConfig, policy: str = POLICY_ASK, note: str = "") -> int:
        """Start a run for ``text`` in the current conversation; returns its id.  Events arrive on ``event``.

        ``note``: what the user changed in the project since the last answer, for the model.
        """
        return self._start(lambda session, cfg: session.run(text, cfg, policy, note), config)

    def resume(self, decision: dict[str, Any], config: ModelConfig) -> int:
        """Continue the conversation's paused run with the user's decision; returns the new run's id."""
        return self._start(lambda session, cfg: session.resume(decision, cfg), config)

    def cancel(self, run_id: int) -> None:
        """Stop a run now: tools see the token, the HTTP stream is aborted."""
        entry = self._runs.get(run_id)
        if entry is None:
            return
        future, token = entry
        token.cancel()
        future.cancel()

    def cancel_all(self) -> None:
        for run_id in list(self._runs):
            self.cancel(run_id)

    def is_busy(self) -> bool:
        return any(not future.done() for future, _ in self._runs.values())

    def _start(self, events: RunEvents, config: ModelConfig) -> int:
        run_id = next(self._ids)
        token = CancelToken()
        thread_id = self.thread_id  # fixed now: starting a new conversation right after cannot redirect the run
        future = self.worker.call(lambda: self._drive(run_id, thread_id, events, config, token))
        self._runs[run_id] = (future, token)
        future.add_done_callback(functools.partial(self._run_done, run_id))
        return run_id

    def _run_done(self, run_id: int, future: Future[None]) -> None:
        """Guarantee every run ends with exactly one ``RunFinished`` (even if cancelled before it began)."""
        self._runs.pop(run_id, None)
        if future.cancelled():
            self.worker.post(run_id, RunFinished("cancelled"))
        else:
            self.worker.post(run_id, RunFinished("failed", "The run ended unexpectedly."))

    async def _drive(
        self, run_id: int, thread_id: str, events: RunEvents, config: ModelConfig, token: CancelToken
    ) -> None:
        post = self.worker.post
        try:
            # Everything this run starts (graph tasks, tool threads) inherits this token.
            current_cancel_token.set(token)
            async with self._lock:
                session = await self._session_on(thread_id)
                if config.provider != PROVIDER_OLLAMA and config.api_key is None:
                    config = config.with_key(await asyncio.to_thread(_lookup_key, config.base_url))
                # Secrets the tools could meet are known before the first tool runs (and are scrubbed).
                secrets_scrub.register(config.api_key)
                await asyncio.to_thread(self.ctx.on_main, _register_connection_passwords)
                async for event in events(session, config):
                    post(run_id, event)
        except (asyncio.CancelledError, RunCancelled):
            post(run_id, RunFinished("cancelled"))
        except Exception as exc:
            if token.cancelled:
                post(run_id, RunFinished("cancelled"))
            else:
                log.exception("agent run failed")
                post(run_id, RunFinished("failed", f"Unexpected error: {type(exc).__name__}: {exc}"))

    # -- which conversation --------------------------------------------------------
    def new_conversation(self) -> None:
        """Cancel any run and start a new conversation; the old one stays in the store."""
        self.cancel_all()
        self.thread_id = uuid.uuid4().hex

    def set_thread(self, thread_id: str) -> None:
        """Continue the conversation ``thread_id`` (e.g. the last one, after a restart)."""
        self.thread_id = thread_id

    def open_conversation(self, thread_id: str) -> Future[OpenedConversation]:
        """Continue a stored conversation: an ``OpenedConversation`` (entries to show, pending approval)."""
        self.cancel_all()
        self.thread_id = thread_id
        return self._call(lambda session: self._open(session, thread_id))

    async def _open(self, session: AgentSession, thread_id: str) -> OpenedConversation:
        from geogpt_qgis.agent.transcript import transcript
        from geogpt_qgis.core.sources import with_extras

        messages = await session.history(thread_id)
        request = await session.pending(thread_id)
        session.standing(thread_id).forget()  # a reopened conversation asks again before risky steps
        entries = with_extras(transcript(messages))
        current_conversation.set(thread_id)
        for family in session.families:  # server URLs the user gave earlier stay usable
            for entry in entries:
                if entry.kind == "user":
                    family.notice_user_text(entry.text)
        return OpenedConversation(thread_id, entries, request)

    # -- the current conversation's state (each a future, resolved on the agent's thread) ---
    def pending_approval(self, thread_id: str | None = None) -> Future[ApprovalRequest | None]:
        """The approval a conversation (default: the current one) waits for, or None."""
        thread_id = thread_id or self.thread_id
        return self._call(lambda session: session.pending(thread_id))

    def drop_pending(self) -> Future[bool]:
        """Completes (True if there was one) once the current conversation's waiting step is given up.

        The conversation is fixed now: starting a new one right after cannot redirect the drop.
        """
        thread_id = self.thread_id
        return self._call(lambda session: session.drop_pending(thread_id))

    def history(self, thread_id: str | None = None) -> Future[list[Any]]:
        """The stored messages (LangChain objects) of a conversation (default: the current one)."""
        thread_id = thread_id or self.thread_id
        return self._call(lambda session: session.history(thread_id))

    def forget_always(self) -> Future[list[str]]:
        """Revoke the current conversation's "always for this tool" answers; completes with the tools they were for."""
        thread_id = self.thread_id

        async def forget(session: AgentSession) -> list[str]:
            return session.standing(thread_id).forget()

        return self._call(forget)

    # -- the stored conversations -------------------------------------------------
    def conversations(self, project: str | None = None) -> Future[list[ConversationInfo]]:
        """``ConversationInfo`` of the stored conversations, newest first (``project``: only that file's)."""
        return self._call(lambda _session: self._stored().conversations(project))

    def rename_conversation(self, thread_id: str, title: str) -> Future[None]:
        return self._call(lambda _session: self._stored().rename(thread_id, title))

    def delete_conversation(self, thread_id: str) -> Future[None]:
        """Delete a conversation everywhere (state, catalogue entry, run log); deleting the current one starts anew."""
        if thread_id == self.thread_id:
            self.new_conversation()

        async def delete(session: AgentSession) -> None:
            await session.checkpointer.adelete_thread(thread_id)
            await self._stored().delete(thread_id)

        return self._call(delete)

    def export_conversation(self, thread_id: str) -> Future[str]:
        """The conversation, tool steps and results included, as a Markdown document (a ``str``)."""

        async def export(session: AgentSession) -> str:
            from geogpt_qgis.agent.transcript import to_markdown, transcript
            from geogpt_qgis.core.sources import with_extras

            info = await self._stored().conversation(thread_id)
            entries = with_extras(transcript(await session.history(thread_id)))
            if info is None:
                return to_markdown("Conversation", "", time.time(), entries)
            return to_markdown(info.title, info.project, info.created, entries)

        return self._call(export)

    def run_log(self, thread_id: str | None = None) -> Future[str]:
        """The run log of a conversation (default: the current one) as Markdown."""
        from geogpt_qgis.core.run_log import format_runs

        thread_id = thread_id or self.thread_id

        async def runs(_session: AgentSession) -> str:
            return format_runs(await self._stored().runs(thread_id))

        return self._call(runs)

    # -- on the agent's thread ------------------------------------------------------
    def _call(self, work: Callable[[AgentSession], Awaitable[T]]) -> Future[T]:
        async def call() -> T:
            async with self._lock:
                return await work(await self._session_on(None))

        return self.worker.call(call)

    async def _session_on(self, thread_id: str | None) -> AgentSession:
        """The run engine, built at first use, working on ``thread_id`` (None: whichever it was on)."""
        if self._session is None:
            preload_agent_stack()
            from geogpt_qgis.agent.session import AgentSession

            checkpointer, self._store, closer = await _open_store(self.store_path)
            self.worker.at_exit(closer)
            self._session = AgentSession(self.ctx, checkpointer, thread_id or self.thread_id, self._store)
            # Queries a killed earlier process left running on the user's databases (swept in the background).
            await asyncio.to_thread(self.ctx.on_main, _sweep_orphaned_queries)
        if thread_id is not None:
            self._session.thread_id = thread_id
        return self._session

    def _stored(self) -> ConversationStore:
        if self._store is None:
            raise RuntimeError("the store opens with the session")
        return self._store

    def shutdown(self, timeout_ms: int = 3000) -> None:
        """Cancel everything and end the agent's thread (used on unload and exit)."""
        self.cancel_all()
        if self._own_bridge is not None:
            self._own_bridge.close()  # a tool waiting for the main thread gives up at once
        self.worker.shutdown(timeout_ms)


def _sweep_orphaned_queries() -> None:
    from geogpt_qgis.tools.postgis.backends import sweep_saved_connections

    sweep_saved_connections()


def _register_connection_passwords() -> None:
    from geogpt_qgis.toolbelt.secrets import register_connection_passwords

    register_connection_passwords()


def _lookup_key(base_url: str) -> str | None:
    from geogpt_qgis.toolbelt.secrets import get_api_key

    return get_api_key(base_url)


async def _open_store(store_path: Path | None) -> tuple[Any, ConversationStore, Callable[[], Awaitable[None]]]:
    """The checkpointer and conversation store in one SQLite file at ``store_path`` (WAL), or in memory."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from geogpt_qgis.agent.store import ConversationStore

    if store_path is not None:
        store_path.parent.mkdir(parents=True, exist_ok=True)
    connection = await aiosqlite.connect(str(store_path) if store_path is not None else ":memory:")
    await connection.execute("PRAGMA journal_mode=WAL")
    # WAL with NORMAL: a crash of QGIS never corrupts the file nor loses a committed step.
    await connection.execute("PRAGMA synchronous=NORMAL")
    saver = AsyncSqliteSaver(connection)
    await saver.setup()
    store = ConversationStore(connection)
    await store.setup()
    return saver, store, connection.close
