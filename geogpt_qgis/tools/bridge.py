"""Run a function on QGIS's main thread from a worker, and wait for it.

QgsProject, layers and widgets belong to the main thread.  A tool running on
the agent's worker hands such work to this bridge, which lives on the main
thread, and waits (never the other way round: the main thread never waits on
the worker).  A job that has not started when the run is cancelled is
skipped, so Stop never leaves half-made changes behind.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from qgis.PyQt.QtCore import QObject, Qt, pyqtSignal, pyqtSlot

from geogpt_qgis.core.cancel import CancelToken, RunCancelled

T = TypeVar("T")

_POLL_SECONDS = 0.05


class BridgeClosed(RunCancelled):
    """The main-thread side went away (plugin unloaded, QGIS closing): the run cannot go on."""


class _Job:
    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict, cancel: CancelToken | None) -> None:
        self.fn, self.args, self.kwargs, self.cancel = fn, args, kwargs, cancel
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.abandoned = False


class MainThreadBridge(QObject):
    """Create on the main thread; call ``call`` from any thread."""

    _submitted = pyqtSignal(object)
    _disposed = pyqtSignal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._owner_ident = threading.get_ident()
        self._closed = False
        self._pending: set[_Job] = set()
        self._lock = threading.Lock()
        self._acting = 0  # jobs running now (main thread only): changes they make are the agent's
        self._submitted.connect(self._execute, Qt.ConnectionType.QueuedConnection)
        self._disposed.connect(self._drop, Qt.ConnectionType.QueuedConnection)

    def on_owner_thread(self) -> bool:
        return threading.get_ident() == self._owner_ident

    @property
    def acting(self) -> bool:
        """Whether the agent is changing the project right now (a job is running on the main thread)."""
        return self._acting > 0

    def call(self, fn: Callable[..., T], *args: Any, cancel: CancelToken | None = None, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the main thread and return its result.

        Raises ``RunCancelled`` if ``cancel`` fires before the job ran, and
        re-raises whatever ``fn`` raised.
        """
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
        try:
            while not job.done.wait(_POLL_SECONDS):
                if cancel is not None and cancel.cancelled:
                    job.abandoned = True
                    # The job may have started just now; its result is discarded either way.
                    raise RunCancelled("stopped by the user")
        finally:
            with self._lock:
                self._pending.discard(job)
        if job.error is not None:
            raise job.error
        return job.result

    @pyqtSlot(object)
    def _execute(self, job: _Job) -> None:
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

    @pyqtSlot(object)
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
