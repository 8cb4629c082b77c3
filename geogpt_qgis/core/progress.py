"""Progress reporting from tools, without tools knowing who listens.

The agent sets ``current_progress`` for each tool call; a tool (on any
thread) calls ``report_progress``.  Reports are throttled so a chatty
algorithm cannot flood the dock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar

ProgressSink = Callable[[float, str], None]

current_progress: ContextVar[ProgressSink | None] = ContextVar("geogpt_progress", default=None)

MIN_STEP_PERCENT = 2.0
MIN_INTERVAL_SECONDS = 0.25


class ThrottledProgress:
    """Forward progress to a sink when it moved enough or enough time passed (thread-safe enough: last writer wins)."""

    def __init__(self, sink: ProgressSink | None) -> None:
        self._sink = sink
        self._last_percent = -100.0
        self._last_time = 0.0

    def __call__(self, percent: float, message: str = "") -> None:
        if self._sink is None:
            return
        now = time.monotonic()
        moved = percent - self._last_percent >= MIN_STEP_PERCENT
        if percent < 100 and not moved and now - self._last_time < MIN_INTERVAL_SECONDS:
            return
        self._last_percent, self._last_time = percent, now
        self._sink(percent, message)


def progress_reporter() -> ThrottledProgress:
    """A throttled reporter bound to the current tool call (a no-op outside one)."""
    return ThrottledProgress(current_progress.get())
