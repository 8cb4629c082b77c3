"""Run a function on QGIS's main thread from a worker, and wait for it: the one way across threads.

QgsProject, layers, providers, QGIS's network manager, its authentication
manager and widgets belong to the main thread.  Code running on another
thread (the agent's worker, a model-list fetch) hands such work to a bridge,
which lives on the main thread, and waits (never the other way round: the
main thread never waits on a worker, it calls straight through).  A job that
has not started when the run is cancelled is skipped, so Stop never leaves
half-made changes behind.

Each conversation's tools have their own ``MainThreadBridge`` (its
``acting`` flag tells the project watcher which changes are the agent's);
helpers without one (the key store, the proxy's stored login, QGIS's
certificate authorities) use ``call_on_main_thread``.  It lives in
``toolbelt`` (the plugin's thin QGIS/Qt shell) because both the toolbelt and
the tools above it need it; the dock's ``gui.background`` goes the other way
(work off the main thread, its answer delivered on it, never waited for).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

from qgis.PyQt.QtCore import QCoreApplication, QObject, Qt, QThread, pyqtSignal, pyqtSlot

from geogpt_qgis.core.cancel import CancelToken, RunCancelled

T = TypeVar("T")

_POLL_SECONDS = 0.05
# Long enough for the user to type the QGIS master password when QGIS asks for it.
DEFAULT_TIMEOUT = 120.0


class BridgeClosed(RunCancelled):
    """The main-thread side went away (plugin unloaded, QGIS closing): the run cannot go on."""


def is_main_thread() -> bool:
    """Whether the caller runs on the Qt application's (QGIS's main) thread."""
    app = QCoreApplication.instance()
    return app is not None and QThread.currentThread() is app.thread()


class _Job(Generic[T]):
    def __init__(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any], cancel: CancelToken | None
    ) -> None:
        self.fn, self.args, self.kwargs, self.cancel = fn, args, kwargs, cancel
        self.done = threading.Event()
        self.result: T | None = None
        self.error: BaseException | None = None
        self.abandoned = False


class MainThreadBridge(QObject):  # type: ignore[misc]  # QObject is Any to mypy: PyQt has no stubs here
    """Create on the main thread (or move it there); call ``call`` from any thread."""

    _submitted = pyqtSignal(object)
    _disposed = pyqtSignal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._closed = False
        self._pending: set[_Job[Any]] = set()
        self._lock = threading.Lock()
        self._acting = 0  # jobs running now (main thread only): changes they make are the agent's
        self._submitted.connect(self._execute, Qt.ConnectionType.QueuedConnection)
        self._disposed.connect(self._drop, Qt.ConnectionType.QueuedConnection)

    def on_owner_thread(self) -> bool:
        return QThread.currentThread() is self.thread()

    @property
    def acting(self) -> bool:
        """Whether the agent is changing the project right now (a job is running on the main thread)."""
        return self._acting > 0

    def call(self, fn: Callable[..., T], *args: Any, cancel: CancelToken | None = None, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the main thread and return its result.

        Raises ``RunCancelled`` if ``cancel`` fires before the job ran, and
        re-raises whatever ``fn`` raised.
        """
        return self.run(fn, args, kwargs, cancel=cancel)

    def run(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        cancel: CancelToken | None = None,
        timeout: float | None = None,
    ) -> T:
        """``call`` with a time limit: ``TimeoutError`` if the main thread has not run ``fn`` in ``timeout`` s.

        A job given up for Stop or a time-out is skipped if it has not started yet.
        """
        kwargs = kwargs or {}
        if self.on_owner_thread():
            if cancel is not None:
                cancel.raise_if_cancelled()
            return fn(*args, **kwargs)
        job = _Job(fn, args, kwargs, cancel)
        with self._lock:
            if self._closed:
                raise BridgeClosed("QGIS is closing; the step was not run")
            self._pending.add(job)
        self._submitted.emit(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not job.done.wait(_POLL_SECONDS):
                if cancel is not None and cancel.cancelled:
                    job.abandoned = True
                    # The job may have started just now; its result is discarded either way.
                    raise RunCancelled("stopped by the user")
                if deadline is not None and time.monotonic() > deadline:
                    job.abandoned = True
                    raise TimeoutError(f"QGIS's main thread did not run the request within {timeout:g} s")
        finally:
            with self._lock:
                self._pending.discard(job)
        if job.error is not None:
            raise job.error
        # fn returned (no error), so _execute stored its T; None only before that.
        return cast(T, job.result)

    @pyqtSlot(object)  # type: ignore[untyped-decorator]  # pyqtSlot is Any to mypy (no PyQt stubs)
    def _execute(self, job: _Job[Any]) -> None:
        try:
            if job.abandoned or self._closed or (job.cancel is not None and job.cancel.cancelled):
                job.error = RunCancelled("stopped by the user")
                return
            self._acting += 1
            try:
                job.result = job.fn(*job.args, **job.kwargs)
            finally:
                self._acting -= 1
        except BaseException as exc:  # noqa: BLE001 - handed back to the waiting thread
            job.error = exc
        finally:
            job.done.set()

    def dispose(self, obj: object) -> None:
        """Let the last reference to ``obj`` go on the main thread.

        Processing contexts and algorithms hold layers that live on the main
        thread; their C++ destructors must run there, even after Stop.
        """
        if self.on_owner_thread() or self._closed:
            return
        self._disposed.emit(obj)

    @pyqtSlot(object)  # type: ignore[untyped-decorator]  # pyqtSlot is Any to mypy (no PyQt stubs)
    def _drop(self, obj: object) -> None:
        del obj

    def close(self) -> None:
        """Refuse new jobs and release every waiting worker (used on unload)."""
        with self._lock:
            self._closed = True
            pending = list(self._pending)
        for job in pending:
            job.error = BridgeClosed("QGIS is closing; the step was not run")
            job.done.set()


_shared: MainThreadBridge | None = None
_shared_lock = threading.Lock()


def _shared_bridge(app: QCoreApplication) -> MainThreadBridge:
    """The process's bridge for callers without a tool context, made on first use."""
    global _shared  # one per process
    with _shared_lock:
        if _shared is None:
            bridge = MainThreadBridge()
            if bridge.thread() is not app.thread():
                bridge.moveToThread(app.thread())  # allowed: it is moved from the thread that made it
            _shared = bridge
        return _shared


def call_on_main_thread(fn: Callable[[], T], timeout: float = DEFAULT_TIMEOUT) -> T:
    """Return ``fn()``, run on the main thread; raise ``TimeoutError`` if it did not run in ``timeout`` s.

    Without a Qt application (plain Python), ``fn`` runs on the caller's thread.
    """
    app = QCoreApplication.instance()
    if app is None or is_main_thread():
        return fn()
    return _shared_bridge(app).run(fn, timeout=timeout)
