"""Start-up cost of the plugin, measured in fresh QGIS processes (see harness/startup_probe.py)."""

from __future__ import annotations

import statistics

from bench.common import run_child, sized

STARTUP_RUNS = 7  # processes (one in make bench-quick)
GOAL_STARTUP_MS = 50.0


def bench_startup() -> dict:
    runs = sized(STARTUP_RUNS, 1)
    reports = [run_child("harness.startup_probe", timeout=180) for _ in range(runs)]
    load_ms = [r["load_seconds"] * 1000 for r in reports]
    panel_ms = [r["panel_seconds"] * 1000 for r in reports]
    agent_ms = [r["agent_import_seconds"] * 1000 for r in reports]
    heavy = sorted({m for r in reports for m in r["heavy"]})
    return {
        "runs": runs,
        "plugin_load_ms_median": round(statistics.median(load_ms), 1),
        "plugin_load_ms_min": round(min(load_ms), 1),
        "dock_first_show_ms_median": round(statistics.median(panel_ms), 1),
        "agent_stack_import_ms_median": round(statistics.median(agent_ms), 1),
        "heavy_modules_at_start": heavy,
        "goal_ms": GOAL_STARTUP_MS,
        "meets_goal": statistics.median(load_ms) <= GOAL_STARTUP_MS and not heavy,
    }
