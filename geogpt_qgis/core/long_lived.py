"""Threads that live as long as QGIS, for work that must never run on a short-lived thread.

Some libraries keep per-thread state that outlives the thread or is never given
back: PROJ contexts (see ``tools.processing.algorithm_thread``) and
libpg_query's thread-local keys (see ``tools.safety.sql``).  The agent calls
tools on fresh threads, so such work is handed to a small pool whose idle
workers wait for the next job and never exit.  Qt-free.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class LongLivedThreads:
    """At most ``workers`` threads, started on first use, that run calls and never end."""

    def __init__(self, name: str, workers: int) -> None:
        # An executor starts no thread before its first job, so making one costs nothing at import.
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Call ``fn(*args)`` on one of the threads and wait for it; its errors are raised here.

        The caller's context variables (a run's cancel token and progress sink) go with it.
        """
        context = contextvars.copy_context()
        return self._pool.submit(context.run, fn, *args).result()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Start ``fn(*args)`` on one of the threads and return at once; the caller's context variables go with it."""
        context = contextvars.copy_context()
        return self._pool.submit(context.run, fn, *args)
