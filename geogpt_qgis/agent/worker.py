"""The agent's thread: a QThread running an asyncio loop, so the agent's work never runs on the main thread.

The conversation service (``conversation.Conversation``) hands it coroutines
(``call``) and posts the events of its runs (``post``), from any thread; the
``run_event`` signal delivers them on the main thread, in order, and nothing of a
run after its ``RunFinished``.  (Not named ``event``: that would hide
``QObject.event``, the virtual Qt calls with every event sent to the object, and
the first one, a language change passed on from the dock or a deferred delete,
would call the signal and abort QGIS.)  LangChain and LangGraph are imported on this
thread at the first run (``preload_agent_stack``), so neither QGIS start-up
nor the main thread pays for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from qgis.PyQt.QtCore import QObject, QThread, pyqtSignal

from geogpt_qgis.core.events import Event, RunFinished

T = TypeVar("T")


class AgentWorker(QThread):  # type: ignore[misc]  # QThread is Any to mypy: PyQt has no stubs here
    """Owns the event loop; runs what it is given on it and brings run events back to the main thread."""

    # run id, event object (a ``core.events`` dataclass); delivered on the main thread
    run_event = pyqtSignal(int, object)
    # the same, posted from any thread; ``_deliver`` filters it on the main thread
    _posted = pyqtSignal(int, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._closed_runs: set[int] = set()  # runs whose RunFinished was delivered (main thread only)
        self._at_exit: list[Callable[[], Awaitable[Any]]] = []
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
            for closer in self._at_exit:
                loop.run_until_complete(closer())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    def ensure_started(self) -> None:
        if not self.isRunning():
            self.start()
        self._ready.wait(10)

    # -- for the conversation service -------------------------------------------
    def call(self, work: Callable[[], Awaitable[T]]) -> Future[T]:
        """Run ``work()`` on the agent's loop (started if need be); its outcome completes the future."""
        self.ensure_started()
        if self._loop is None:
            raise RuntimeError("the agent thread did not start")

        async def run() -> T:
            return await work()

        return asyncio.run_coroutine_threadsafe(run(), self._loop)

    def at_exit(self, closer: Callable[[], Awaitable[Any]]) -> None:
        """Await ``closer()`` on the loop when the thread ends (after every task was cancelled)."""
        self._at_exit.append(closer)

    def post(self, run_id: int, event: Event) -> None:
        """Post an event from any thread; it reaches ``run_event`` on the main thread, in order."""
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
        self.run_event.emit(run_id, event)

    def shutdown(self, timeout_ms: int = 3000) -> None:
        """End the thread: its tasks are cancelled, then the closers run (used on unload and exit).

        Waits at most ``timeout_ms`` on the main thread.  A thread still ending
        after that (a tool or a closer is slow; a loaded machine) must outlive
        its owner: Qt aborts the whole process when a running QThread is
        destroyed (the dock's ``deleteLater``, or its Python wrapper collected).
        So it leaves its parent and is kept in ``_DRAINING`` until it has
        finished, then released on the main thread.
        """
        if self._loop is not None and self.isRunning():
            self._loop.call_soon_threadsafe(self._loop.stop)
            if not self.wait(timeout_ms):
                self.setParent(None)
                _DRAINING.add(self)
                self.finished.connect(self._drained)  # queued to the main thread, where this object lives

    def _drained(self) -> None:
        """Main thread, once the thread has ended: it may now be destroyed."""
        self.wait()
        _DRAINING.discard(self)


# Workers whose thread outlived ``shutdown``'s wait: held here until it ends (see ``AgentWorker.shutdown``).
_DRAINING: set[AgentWorker] = set()


# One import of the agent stack at a time, and once (``preload_agent_stack``).
_PRELOAD_LOCK = threading.Lock()
_preloaded = False
# What a first run imported after the stack itself (listed from sys.modules around one), taken by the preload
# too: the map tools' parts, LangChain's tracers and message translator, httpx's async backend, and what Send
# imports on the main thread (a run's undo snapshot, the connection passwords' registry).  A name another
# version of a package lacks is skipped.
_FIRST_RUN_MODULES = (
    "anyio._backends._asyncio",
    "langchain_core.tracers.context",
    "langchain_core.tracers.run_collector",
    "langchain_core.tracers.stdout",
    "langchain_core.messages.block_translators.langchain_v0",
    "geogpt_qgis.tools.maps.export",
    "geogpt_qgis.tools.maps.labels",
    "geogpt_qgis.tools.maps.loading",
    "geogpt_qgis.tools.maps.styling",
    "geogpt_qgis.tools.project.run_undo",
    "geogpt_qgis.toolbelt.secrets",
)


def preload_agent_stack() -> None:
    """Import everything a run may need, then freeze the garbage collector's view of it.

    The agent stack adds several hundred thousand long-lived objects (modules,
    classes, schemas).  Collections during the import, and every full
    collection afterwards, would walk them while holding the GIL, freezing
    QGIS's main thread for 50-130 ms at a time.  So the collector is paused for
    the import and the imported objects are then frozen (``gc.freeze``); both
    providers are imported up front so no later import adds unfrozen bulk.

    Any thread, any number of times: the first call imports, later ones only
    freeze what was built since (an earlier conversation's session), as every
    conversation's first step always did.  A call made while another thread
    imports (a first run while ``gui.agent_preload``'s thread is still at it)
    waits for that import to end, on its own thread, instead of importing the
    same packages alongside it, which their circular imports can turn into a
    deadlock error.  The plugin never calls it on the main thread.
    """
    global _preloaded
    with _PRELOAD_LOCK:
        if _preloaded:
            gc.freeze()
            return
        _import_agent_stack()
        _preloaded = True


def _import_agent_stack() -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        import aiosqlite  # noqa: F401 - preloaded on purpose
        import langchain_ollama  # noqa: F401 - preloaded on purpose
        import langchain_openai  # noqa: F401 - preloaded on purpose
        import langgraph.checkpoint.sqlite.aio  # noqa: F401 - preloaded on purpose

        import geogpt_qgis.agent.session  # noqa: F401 - preloaded on purpose

        for name in _FIRST_RUN_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
