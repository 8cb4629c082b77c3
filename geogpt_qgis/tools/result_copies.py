"""Result copies that finish while the model reads the result: an agent run's outputs are stored just after.

Copying a processing output into its GeoPackage (``tools.result_store``)
took longer than the algorithm itself: 100,000 buffered points took 1.0 s to
make and 1.9 s more to store.  Within an agent run the model needs the result's
summary, not its table, to go on; so there the output is added to the project
as the temporary layer the algorithm made, the copy starts on an algorithm
thread, and the call returns.  The copy then runs while the model reads the
result and writes its next reply.

Every copy is finished, and its layer pointed at the stored table (same id,
name and style), before anything else can depend on it:

- before the run's next tool call (``agent.toolkit``), so no tool ever reads a
  result whose copy is under way, and no algorithm reads a layer whose data
  source changes;
- before the run ends, paused for approval, finished, failed or stopped
  (``agent.session``), so a finished run's results are stored as before;
- when the project gets a new file name (``SaveHooks``), before its results move.

Outside an agent run (MCP calls, the tools called directly) nothing is deferred.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass

from qgis.core import QgsProject

from geogpt_qgis.toolbelt.log import logger as log
from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
from geogpt_qgis.tools.processing.algorithm_thread import start_on_algorithm_thread
from geogpt_qgis.tools.result_store import ResultStore, StagedResult

# Set for the length of an agent run (``agent.session``): outputs may be stored after the call returns.
copies_deferred: contextvars.ContextVar[bool] = contextvars.ContextVar("geogpt_copies_deferred", default=False)


@dataclass
class _Copy:
    store: ResultStore
    staged: StagedResult
    project: QgsProject
    bridge: MainThreadBridge
    written: Future[None]


_pending: list[_Copy] = []
_lock = threading.Lock()


@contextlib.contextmanager
def deferring() -> Iterator[None]:
    """Within this block (an agent run), results are stored after the call that made them returns."""
    token = copies_deferred.set(True)
    try:
        yield
    finally:
        copies_deferred.reset(token)


def defer(store: ResultStore, staged: StagedResult, project: QgsProject, bridge: MainThreadBridge) -> None:
    """Start copying ``staged`` (its temporary layer now in ``project``) into ``store`` (any thread).

    No stop token goes with the copy: a stopped run keeps the results it added, stored like any other.
    """
    written = start_on_algorithm_thread(store.write, staged)
    with _lock:
        _pending.append(_Copy(store, staged, project, bridge, written))


def pending() -> bool:
    with _lock:
        return bool(_pending)


def finish() -> int:
    """Wait for every copy under way and point its layer at the stored table (any thread; main: a save).

    Returns how many layers now read their stored table.  A copy that failed leaves its temporary layer
    in the project as it is (logged): the results of the call that made it stand.  The main thread may
    wait here: a copy never needs it.
    """
    done = 0
    for copy in _taken():
        try:
            copy.written.result()
            if copy.bridge.call(copy.store.adopt, copy.staged, copy.project):
                done += 1
        except Exception:  # noqa: BLE001 - the layer stays temporary; what the call reported stands
            log.exception("result %s could not be stored; it stays a temporary layer", copy.staged.table)
            copy.store.discard(copy.staged, True)  # any thread: the name is freed, the table dropped
        finally:
            copy.staged.source = None  # the features' last share goes here: off the main thread after a run
    return done


def _taken() -> list[_Copy]:
    with _lock:
        taken = list(_pending)
        _pending.clear()
    return taken
