"""The agent's thread: a QThread running an asyncio loop that drives ``AgentSession`` runs.

The dock and the headless command submit a message from the main thread and
receive events through the ``event`` signal (queued to the main thread).
Stop cancels the run's asyncio task (which aborts a streaming HTTP request at
once) and its ``CancelToken`` (which tools and native operations poll).
LangChain and LangGraph are imported here, on this thread, on the first run,
so neither QGIS start-up nor the main thread pays for them.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qgis.PyQt.QtCore import QThread, pyqtSignal

from geogpt_qgis.core import secrets_scrub
from geogpt_qgis.core.approval import POLICY_ASK
from geogpt_qgis.core.cancel import CancelToken, RunCancelled, current_cancel_token
from geogpt_qgis.core.events import Event, RunFinished
from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA

if TYPE_CHECKING:
    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.session import AgentSession
    from geogpt_qgis.agent.store import ConversationStore
    from geogpt_qgis.tools.base import ToolContext

log = logging.getLogger(__name__)


class AgentWorker(QThread):
    """Owns the event loop, the checkpointer and the session; one run at a time."""

    # run id, event object (a ``core.events`` dataclass); delivered on the main thread
    event = pyqtSignal(int, object)
    # the same, posted from any thread; ``_deliver`` filters it on the main thread
    _posted = pyqtSignal(int, object)

    def __init__(self, ctx: ToolContext, store_path: Path | None = None, parent: Any = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.store_path = store_path
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._ids = itertools.count(1)
        self._runs: dict[int, tuple[Future, CancelToken]] = {}
        self._closed_runs: set[int] = set()  # runs whose RunFinished was delivered (main thread only)
        self._session: AgentSession | None = None
        self._checkpointer: Any = None
        self._closer: Any = None
        self._thread_id = uuid.uuid4().hex  # known at once, so the dock can remember it before the first run
        # One session operation at a time (a run, a drop, a look at a pending approval), in the order asked.
        self._session_lock = asyncio.Lock()
        # This QObject lives on the main thread: events posted from the worker are queued to it.
        self._posted.connect(self._deliver)

    # -- thread body --------------------------------------------------------
    def run(self) -> None:  # QThread entry point, on the worker thread
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            if self._closer is not None:
                loop.run_until_complete(self._closer())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    def ensure_started(self) -> None:
        if not self.isRunning():
            self.start()
        self._ready.wait(10)

    # -- API for the main thread ---------------------------------------------
    @property
    def thread_id(self) -> str:
        """The conversation the next message goes to."""
        return self._session.thread_id if self._session else self._thread_id

    def new_conversation(self) -> None:
        """Cancel any run and start a new conversation thread."""
        self.cancel_all()
        if self._session is not None:
            self._thread_id = self._session.new_conversation()
        else:
            self._thread_id = uuid.uuid4().hex

    def submit(self, text: str, config: ModelConfig, policy: str = POLICY_ASK, note: str = "") -> int:
        """Start a run for ``text``; returns its id.  Events arrive on ``event``.

        ``note``: what the user changed in the project since the last answer, for the model.
        """
        return self._start(lambda session, cfg: session.run(text, cfg, policy, note), config)

    def resume(self, decision: dict[str, Any], config: ModelConfig) -> int:
        """Continue the conversation's paused run with the user's decision; returns the new run's id."""
        return self._start(lambda session, cfg: session.resume(decision, cfg), config)

    def _start(self, events: Callable[[AgentSession, ModelConfig], AsyncIterator[Event]], config: ModelConfig) -> int:
        self.ensure_started()
        if self._loop is None:
            raise RuntimeError("the agent thread did not start")
        run_id = next(self._ids)
        token = CancelToken()
        future = asyncio.run_coroutine_threadsafe(self._drive(run_id, events, config, token), self._loop)
        self._runs[run_id] = (future, token)
        future.add_done_callback(functools.partial(self._on_run_done, run_id))
        return run_id

    def pending_approval(self, thread_id: str | None = None) -> Future:
        """A future for the approval a conversation (default: the current one) waits for, or None."""
        thread_id = thread_id or self.thread_id
        return self._call(lambda session: session.pending(thread_id))

    def drop_pending(self) -> Future:
        """A future that completes (True if there was one) once the current conversation's waiting step is given up.

        The conversation is fixed now: starting a new one right after cannot redirect the drop.
        """
        thread_id = self.thread_id
        return self._call(lambda session: session.drop_pending(thread_id))

    # -- the conversations in the store (each a future, resolved on the agent thread) ---
    def conversations(self, project: str | None = None) -> Future:
        """``ConversationInfo`` of the stored conversations, newest first (``project``: only that file's)."""
        return self._call(lambda session: session.conversations(project))

    def open_conversation(self, thread_id: str) -> Future:
        """Continue a stored conversation: an ``OpenedConversation`` (entries to show, pending approval)."""
        self.cancel_all()
        self.set_thread(thread_id)
        return self._call(lambda session: session.open(thread_id))

    def rename_conversation(self, thread_id: str, title: str) -> Future:
        return self._call(lambda session: session.rename(thread_id, title))

    def delete_conversation(self, thread_id: str) -> Future:
        """Delete a conversation; deleting the current one starts a new one."""
        if thread_id == self.thread_id:
            self.new_conversation()
        return self._call(lambda session: session.delete(thread_id))

    def export_conversation(self, thread_id: str) -> Future:
        """The conversation as a Markdown document (a ``str``)."""
        return self._call(lambda session: session.export_markdown(thread_id))

    def history(self, thread_id: str | None = None) -> Future:
        """The stored messages (LangChain objects) of a conversation (default: the current one)."""
        thread_id = thread_id or self.thread_id
        return self._call(lambda session: session.history(thread_id))

    def run_log(self, thread_id: str | None = None) -> Future:
        """The run log of a conversation (default: the current one) as Markdown."""
        thread_id = thread_id or self.thread_id
        return self._call(lambda session: session.run_log(thread_id))

    def set_thread(self, thread_id: str) -> None:
        """Continue the conversation ``thread_id`` (e.g. the last one, after a restart)."""
        if self._session is not None:
            self._session.thread_id = thread_id
        self._thread_id = thread_id

    def _call(self, work: Callable[[AgentSession], Awaitable[Any]]) -> Future:
        self.ensure_started()
        if self._loop is None:
            raise RuntimeError("the agent thread did not start")

        async def call() -> Any:
            async with self._session_lock:
                return await work(await self._session_for_run())

        return asyncio.run_coroutine_threadsafe(call(), self._loop)

    def _on_run_done(self, run_id: int, future: Future) -> None:
        """Guarantee every run ends with exactly one ``RunFinished`` (even if cancelled before it began)."""
        self._runs.pop(run_id, None)
        self._emit(
            run_id,
            RunFinished(
                "cancelled" if future.cancelled() else "failed",
                None if future.cancelled() else "The run ended unexpectedly.",
            ),
        )

    def _emit(self, run_id: int, event: Event) -> None:
        """Post an event from any thread; it reaches ``event`` on the main thread, in order."""
        self._posted.emit(run_id, event)

    def _deliver(self, run_id: int, event: Event) -> None:
        """Main thread: pass events on, but nothing of a run after its ``RunFinished``.

        When Stop is pressed the run ends at once (its ``RunFinished`` is delivered
        from the main thread); tokens the worker posted just before are dropped.
        """
        if run_id in self._closed_runs:
            return
        if isinstance(event, RunFinished):
            self._closed_runs.add(run_id)
        self.event.emit(run_id, event)

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

    def shutdown(self, timeout_ms: int = 3000) -> None:
        """Cancel everything and end the thread (used on unload and exit)."""
        self.cancel_all()
        if self._loop is not None and self.isRunning():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self.wait(timeout_ms)

    # -- on the worker's loop -------------------------------------------------
    async def _session_for_run(self) -> AgentSession:
        if self._session is None:
            _preload_agent_stack()
            from geogpt_qgis.agent.session import AgentSession

            self._checkpointer, store, self._closer = await _open_store(self.store_path)
            self._session = AgentSession(self.ctx, self._checkpointer, self._thread_id, store)
            # Queries a killed earlier process left running on the user's databases (swept in the background).
            await asyncio.to_thread(self.ctx.on_main, _sweep_orphaned_queries)
        return self._session

    async def _drive(
        self,
        run_id: int,
        events: Callable[[AgentSession, ModelConfig], AsyncIterator[Event]],
        config: ModelConfig,
        token: CancelToken,
    ) -> None:
        emit = self._emit
        try:
            # Everything this run starts (graph tasks, tool threads) inherits this token.
            current_cancel_token.set(token)
            async with self._session_lock:
                session = await self._session_for_run()
                if config.provider != PROVIDER_OLLAMA and config.api_key is None:
                    config = config.with_key(await asyncio.to_thread(_lookup_key, config.base_url))
                # Secrets the tools could meet are known before the first tool runs (and are scrubbed).
                secrets_scrub.register(config.api_key)
                await asyncio.to_thread(self.ctx.on_main, _register_connection_passwords)
                async for event in events(session, config):
                    emit(run_id, event)
        except (asyncio.CancelledError, RunCancelled):
            emit(run_id, RunFinished("cancelled"))
        except Exception as exc:
            if token.cancelled:
                emit(run_id, RunFinished("cancelled"))
            else:
                log.exception("agent run failed")
                emit(run_id, RunFinished("failed", f"Unexpected error: {type(exc).__name__}: {exc}"))


def _preload_agent_stack() -> None:
    """Import everything a run may need, then freeze the garbage collector's view of it.

    The agent stack adds several hundred thousand long-lived objects (modules,
    classes, schemas).  Collections during the import, and every full
    collection afterwards, would walk them while holding the GIL, freezing
    QGIS's main thread for 50-130 ms at a time.  So the collector is paused for
    the import and the imported objects are then frozen (``gc.freeze``); both
    providers are imported up front so no later import adds unfrozen bulk.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        import aiosqlite  # noqa: F401 - preloaded on purpose
        import langchain_ollama  # noqa: F401 - preloaded on purpose
        import langchain_openai  # noqa: F401 - preloaded on purpose
        import langgraph.checkpoint.sqlite.aio  # noqa: F401 - preloaded on purpose

        import geogpt_qgis.agent.session  # noqa: F401 - preloaded on purpose
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _sweep_orphaned_queries() -> None:
    from geogpt_qgis.tools.postgis.backends import sweep_saved_connections

    sweep_saved_connections()


def _register_connection_passwords() -> None:
    from geogpt_qgis.toolbelt.secrets import register_connection_passwords

    register_connection_passwords()


def _lookup_key(base_url: str) -> str | None:
    from geogpt_qgis.toolbelt.secrets import get_api_key

    return get_api_key(base_url)


async def _open_store(store_path: Path | None) -> tuple[Any, ConversationStore, Any]:
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
