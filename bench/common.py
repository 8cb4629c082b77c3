"""Shared helpers for the benchmark modules: a headless QGIS, the heartbeat, child-process runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOAL_STALL_MS = 50.0
# ``make bench-quick`` (``python -m bench --quick``) sets this for every child: the same code on small
# sizes, so that a benchmark broken by a change fails in ``make test`` instead of rotting unseen.
QUICK_ENV = "GEOGPT_BENCH_QUICK"


def quick() -> bool:
    """Whether this is the quick run (small sizes; the figures mean nothing, only that it works)."""
    return os.environ.get(QUICK_ENV) == "1"


def sized(full: Any, small: Any) -> Any:
    """``full`` for ``make bench``, ``small`` for ``make bench-quick``."""
    return small if quick() else full


@contextmanager
def headless_qgis() -> Iterator[Any]:
    """A QgsApplication with Processing loaded, exited at the end."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(REPO))
    from qgis.core import QgsApplication

    app = QgsApplication([], True)
    app.initQgis()
    from geogpt_qgis.tools.processing.catalog import ensure_processing

    ensure_processing()
    try:
        yield app
    finally:
        app.exitQgis()


class Heartbeat:
    """A 5 ms timer on the main thread; the longest gap between its ticks is the longest stall.

    The block's start and end count as ticks: a main-thread job that runs before the first tick (the first
    thing a tool asks of the main thread) or after the last one is a stall too.
    """

    def __init__(self) -> None:
        from qgis.PyQt.QtCore import QTimer

        self.ticks: list[float] = []
        self._timer = QTimer()
        self._timer.setInterval(5)
        self._timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def __enter__(self) -> Heartbeat:
        self.ticks[:] = [time.perf_counter()]
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.stop()
        self.ticks.append(time.perf_counter())

    @property
    def longest_stall_ms(self) -> float | None:
        gaps = [b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False)]
        return round(max(gaps) * 1000, 1) if gaps else None


def idle_stall_ms(seconds: float | None = None) -> float | None:
    """The longest main-thread stall while nothing at all runs (2 s by default): this machine's noise floor."""
    from qgis.PyQt.QtCore import QEventLoop, QTimer

    seconds = seconds if seconds is not None else sized(2.0, 0.2)

    with Heartbeat() as heartbeat:
        loop = QEventLoop()
        QTimer.singleShot(int(seconds * 1000), loop.quit)
        loop.exec()
    return heartbeat.longest_stall_ms


# Children started ahead by ``start_child``, by (module, args): ``run_child`` takes their result.
_STARTED: dict[tuple[str, tuple[str, ...]], Future[dict[str, Any]]] = {}


def start_child(module: str, timeout: float = 900, args: tuple[str, ...] = ()) -> None:
    """Start ``run_child(module, timeout, args)`` now, on a thread of its own; its next ``run_child`` waits for it.

    ``make bench-quick`` runs the prompt cache (a one-thread model server, waited on most of the time) this way,
    beside the other benchmarks, whose figures it does not keep.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=module)
    _STARTED[(module, args)] = pool.submit(_run_child, module, timeout, args)
    pool.shutdown(wait=False)


def run_child(module: str, timeout: float = 900, args: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run ``python -m module *args`` (one QGIS per process) and return the JSON it prints last."""
    started = _STARTED.pop((module, args), None)
    return started.result() if started is not None else _run_child(module, timeout, args)


def _run_child(module: str, timeout: float, args: tuple[str, ...]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    lines = [line for line in done.stdout.strip().splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{module} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])
