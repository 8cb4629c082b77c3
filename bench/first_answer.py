"""The first answer after QGIS starts: Send to its first event, with the agent stack preloaded and without.

Each figure is the median over fresh QGIS processes (``harness.first_answer_probe``):
the plugin loaded as QGIS loads it, the first question sent through the dock to
the scripted model server once the background import (``gui.agent_preload``)
has ended, against the same question sent at once (the import then happens on
the agent's thread after Send, as it did before the preload).
"""

from __future__ import annotations

import statistics

from bench.common import run_child, sized

RUNS = 3  # processes per mode (one in make bench-quick)
GOAL_FIRST_EVENT_SECONDS = 0.3


def bench_first_answer() -> dict:
    runs = sized(RUNS, 1)  # read here: ``python -m bench --quick`` imports this module before it says "quick"
    result: dict = {"runs": runs, "goal_seconds": GOAL_FIRST_EVENT_SECONDS}
    for mode in sized(("preloaded", "cold"), ("preloaded",)):  # the cold path: tests/qgis/test_agent_preload.py
        reports = [run_child("harness.first_answer_probe", timeout=300, args=(mode,)) for _ in range(runs)]
        failed = [r["status"] for r in reports if r["status"] != "finished" or r["first_event_seconds"] is None]
        if failed:
            raise RuntimeError(f"first answer ({mode}): runs ended {failed}")
        result[mode] = {
            "first_event_seconds_median": round(statistics.median(r["first_event_seconds"] for r in reports), 3),
            "first_text_seconds_median": round(statistics.median(r["first_text_seconds"] for r in reports), 3),
        }
        if mode == "preloaded":
            result["preload_seconds_median"] = round(statistics.median(r["preload_seconds"] for r in reports), 3)
            result["preload_threads"] = sorted({r["preload_thread"] for r in reports})
            # The import holds the GIL in stretches (pydantic building schemas): the main thread's longest stall.
            for stall in ("preload_longest_stall_ms", "idle_longest_stall_ms"):
                result[f"{stall}_median"] = statistics.median(r[stall] for r in reports)
    result["meets_goal"] = result["preloaded"]["first_event_seconds_median"] <= GOAL_FIRST_EVENT_SECONDS
    return result
