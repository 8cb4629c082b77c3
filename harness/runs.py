"""Drive agent runs from tests: collect events, wait with the Qt loop running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qgis.PyQt.QtCore import QCoreApplication, QEventLoop, QTimer

from geogpt_qgis.core.events import RunFinished, TextDelta, ToolFinished, ToolStarted

# The project tools, in the order the registry offers them.
PROJECT_TOOL_NAMES = [
    "describe_layer",
    "read_features",
    "select_features",
    "set_layer",
]
PROCESSING_TOOL_NAMES = ["find_algorithm", "run_algorithm"]
EDIT_TOOL_NAMES = ["edit_features"]
MAP_TOOL_NAMES = ["load_data", "label_layer", "style_layer", "export_map"]
CODE_TOOL_NAMES = ["run_pyqgis"]
INSIGHT_TOOL_NAMES = ["find_places", "make_chart"]
EXAMPLE_TOOL_NAMES = ["find_examples"]


REPO = Path(__file__).resolve().parents[1]


def ask(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m geogpt_qgis ask ARGS`` headless, without the caller's OPENAI_API_KEY; ``env`` adds to it."""
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    environment.update({"QT_QPA_PLATFORM": "offscreen", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "geogpt_qgis", "ask", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
    )


def wait_until(predicate: Callable[[], bool], timeout: float = 120.0) -> float:
    """Process Qt events until ``predicate()`` holds; return the seconds waited, fail on timeout."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"condition not met within {timeout} s")
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.002)
    return time.monotonic() - started


def call_in_thread(fn: Callable[..., Any], *args: Any, timeout: float = 120, **kwargs: Any) -> Any:
    """Call ``fn`` on a worker thread, as the agent does, keeping the Qt loop running; re-raise its error."""
    import threading

    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            outcome["error"] = exc

    thread = threading.Thread(target=work, name="tool-call")
    thread.start()
    # An idle Qt event loop (as in QGIS), woken every few ms to see whether the call ended.
    loop = QEventLoop()
    timer = QTimer()
    timer.timeout.connect(lambda: loop.quit() if not thread.is_alive() else None)
    timer.start(5)
    deadline = QTimer()
    deadline.setSingleShot(True)
    deadline.timeout.connect(loop.quit)
    deadline.start(int(timeout * 1000))
    loop.exec()
    timer.stop()
    if thread.is_alive():
        raise AssertionError(f"the call did not end within {timeout} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def stop_midway(fn: Callable[..., Any], *args: Any, after: float = 0.3) -> tuple[str, float]:
    """Start ``fn`` on a worker thread with its own cancel token, press Stop after ``after`` seconds.

    Returns how it ended ("finished", "cancelled") and the seconds from Stop to the end.
    The call must still be running when Stop is pressed.
    """
    import threading

    from geogpt_qgis.core.cancel import CancelToken, RunCancelled, current_cancel_token

    token = CancelToken()
    outcome: dict[str, str] = {}

    def work() -> None:
        current_cancel_token.set(token)
        try:
            fn(*args)
            outcome["result"] = "finished"
        except RunCancelled:
            outcome["result"] = "cancelled"

    thread = threading.Thread(target=work, name="stopped-call")
    thread.start()
    started = time.monotonic()
    wait_until(lambda: time.monotonic() - started > after)  # under way; the main thread stays live
    assert thread.is_alive(), "the call ended before Stop could be pressed"
    pressed = time.monotonic()
    token.cancel()
    wait_until(lambda: not thread.is_alive(), 10)
    return outcome["result"], time.monotonic() - pressed


class RunRecorder:
    """Records every event a worker emits, by run."""

    def __init__(self, worker: Any) -> None:
        self.events: list[tuple[int, object]] = []
        self.finished: dict[int, RunFinished] = {}
        self.finished_at: dict[int, float] = {}
        worker.event.connect(self._record)

    def _record(self, run_id: int, event: object) -> None:
        self.events.append((run_id, event))
        if isinstance(event, RunFinished):
            self.finished[run_id] = event
            self.finished_at[run_id] = time.monotonic()

    def wait(self, run_id: int, timeout: float = 120.0) -> RunFinished:
        wait_until(lambda: run_id in self.finished, timeout)
        return self.finished[run_id]

    def of(self, run_id: int, kind: type | None = None) -> list[Any]:
        return [e for rid, e in self.events if rid == run_id and (kind is None or isinstance(e, kind))]

    def text(self, run_id: int) -> str:
        return "".join(e.text for e in self.of(run_id, TextDelta))

    def tool_results(self, run_id: int) -> list[ToolFinished]:
        return self.of(run_id, ToolFinished)

    def tool_names(self, run_id: int) -> list[str]:
        return [e.name for e in self.of(run_id, ToolStarted)]
