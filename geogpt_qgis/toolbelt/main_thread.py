"""Run a short call on QGIS's main thread from any thread, and wait for its result.

Some QGIS services (the authentication manager, which may ask for the master
password with a dialog) are only safe on the main thread.  Helpers that are
called from background threads (the model list, the agent's key look-up)
hand such calls here.  Only background threads wait; the main thread calls
straight through, so it never waits on anyone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from qgis.PyQt.QtCore import QCoreApplication, QObject, Qt, QThread, pyqtSignal, pyqtSlot

T = TypeVar("T")

# Long enough for the user to type the QGIS master password when QGIS asks for it.
DEFAULT_TIMEOUT = 120.0


class _Job:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class _Runner(QObject):
    """Lives on the main thread; runs the jobs posted to it there."""

    submitted = pyqtSignal(object)

    def __init__(self) -> None:
        super().__init__()
        self.submitted.connect(self._run, Qt.ConnectionType.QueuedConnection)

    @pyqtSlot(object)
    def _run(self, job: _Job) -> None:
        try:
            job.result = job.fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the waiting thread
            job.error = exc
        finally:
            job.done.set()


_runner: _Runner | None = None
_lock = threading.Lock()


def _main_runner(app: QCoreApplication) -> _Runner:
    global _runner  # one runner per process, made on first use
    with _lock:
        if _runner is None:
            runner = _Runner()
            if runner.thread() is not app.thread():
                runner.moveToThread(app.thread())  # allowed: it is moved from the thread that made it
            _runner = runner
        return _runner


def is_main_thread() -> bool:
    """Whether the caller runs on the Qt application's (QGIS's main) thread."""
    app = QCoreApplication.instance()
    return app is not None and QThread.currentThread() is app.thread()


def call_on_main_thread(fn: Callable[[], T], timeout: float = DEFAULT_TIMEOUT) -> T:
    """Return ``fn()``, run on the main thread; raise ``TimeoutError`` if it did not run in ``timeout`` s.

    Without a Qt application (plain Python), ``fn`` runs on the caller's thread.
    """
    app = QCoreApplication.instance()
    if app is None or QThread.currentThread() is app.thread():
        return fn()
    job = _Job(fn)
    _main_runner(app).submitted.emit(job)
    if not job.done.wait(timeout):
        raise TimeoutError(f"QGIS's main thread did not run the request within {timeout:g} s")
    if job.error is not None:
        raise job.error
    return job.result
