"""Bring the result of work done on the agent's thread back to the main thread.

The worker answers questions about the store (the conversation list, a
conversation's history, its run log) with ``concurrent.futures.Future``s
that complete on its thread; widgets may only be touched on the main thread,
so ``when_done`` relays the outcome through a queued Qt signal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from qgis.PyQt.QtCore import QObject, pyqtSignal

log = logging.getLogger(__name__)


class FutureRelay(QObject):
    """``when_done(future, on_result, on_error)``: the callbacks run on this object's (main) thread."""

    _finished = pyqtSignal(object, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._finished.connect(self._deliver)

    def when_done(
        self,
        future: Future,
        on_result: Callable[[Any], None],
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        future.add_done_callback(lambda f: self._finished.emit(f, (on_result, on_error)))

    def _deliver(self, future: Future, callbacks: tuple) -> None:
        on_result, on_error = callbacks
        if future.cancelled():
            return
        error = future.exception()
        if error is None:
            on_result(future.result())
        elif on_error is not None:
            on_error(error)
        else:
            log.warning("background step failed: %s: %s", type(error).__name__, error)
