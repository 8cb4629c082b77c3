"""The threads algorithms run on: a few that live as long as QGIS, never one per call.

Why not the calling thread: QGIS 3.22 gives each thread its own PROJ context
and ties a CRS's PROJ object to the context of the thread that first built it
(an algorithm builds CRSs for its outputs, a file writer for the file).  When
that thread ends, its context is destroyed but CRS objects built in it live on
(in QGIS's CRS cache, in the output layer), and every thread started later
clones its PROJ objects from a dead one: its coordinate transforms fail
silently and leave coordinates unchanged.  That is how an approved buffer
written to a GeoPackage on one tool-call thread made a later
``native:reprojectlayer`` return UTM metres labelled EPSG:4326.  Running
every algorithm and every result-file writer on threads that never end means
no PROJ context they built CRSs in is ever destroyed.  (Work that builds no CRS,
such as reading features or calling the model, may stay on any thread; the
output checks in ``output_checks`` catch what slips through.)
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from geogpt_qgis.core.long_lived import LongLivedThreads

T = TypeVar("T")

# Idle workers never exit, so at most this many PROJ contexts exist for algorithms over the whole session.
MAX_THREADS = 2
_THREADS = LongLivedThreads("geogpt-algorithm", MAX_THREADS)


def run_on_algorithm_thread(fn: Callable[..., T], *args: Any) -> T:
    """Call ``fn(*args)`` on a long-lived algorithm thread and wait for it; its errors are raised here.

    The caller's context variables (the run's cancel token and progress sink) go with it.
    """
    return _THREADS.run(fn, *args)


def start_on_algorithm_thread(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Start ``fn(*args)`` on a long-lived algorithm thread without waiting (a result's copy into the store)."""
    return _THREADS.submit(fn, *args)
