"""Benchmarks for the foundation: start-up cost and main-thread responsiveness.

    python -m bench            prints the figures and writes bench/results.json

1. Start-up: ``classFactory`` + ``initGui`` in a fresh QGIS process (median of
   several processes), the heavy modules it imported (none expected), and, beside
   it, the cost of importing the agent stack (paid on the worker thread when the
   first message is sent).
2. Responsiveness: the real dock streams answers from the scripted model server
   while a heartbeat timer on the main thread records the longest stall; once
   with a 2,000-token answer after a heavy tool (a 200,000-feature expression
   scan), and the main-thread time spent rendering 500- and 2,000-token answers.
   Linear rendering costs about 4x more for 4x the tokens; re-rendering the
   transcript per token would cost about 16x.

These machines are shared and noisy: compare ratios from one run, not absolute
times across runs.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results.json"
STARTUP_RUNS = 7
GOAL_STARTUP_MS = 50.0
GOAL_STALL_MS = 50.0
RUN_LABELS = {
    "first_message_500_tokens": "first message (imports the agent stack on the worker)",
    "stream_500_tokens": "500 tokens",
    "stream_2000_tokens": "2,000 tokens",
    "tool_then_2000_tokens": "tool (200k-feature scan) + 2,000 tokens",
}


def bench_startup() -> dict:
    reports = []
    for _ in range(STARTUP_RUNS):
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.startup_probe"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            timeout=180,
            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        )
        reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
    load_ms = [r["load_seconds"] * 1000 for r in reports]
    panel_ms = [r["panel_seconds"] * 1000 for r in reports]
    agent_ms = [r["agent_import_seconds"] * 1000 for r in reports]
    return {
        "runs": STARTUP_RUNS,
        "plugin_load_ms_median": round(statistics.median(load_ms), 1),
        "plugin_load_ms_min": round(min(load_ms), 1),
        "dock_first_show_ms_median": round(statistics.median(panel_ms), 1),
        "agent_stack_import_ms_median": round(statistics.median(agent_ms), 1),
        "heavy_modules_at_start": sorted({m for r in reports for m in r["heavy"]}),
        "goal_ms": GOAL_STARTUP_MS,
        "meets_goal": statistics.median(load_ms) <= GOAL_STARTUP_MS and not any(r["heavy"] for r in reports),
    }


def markdown_answer(tokens: int) -> str:
    """A realistic answer of about ``tokens`` streamed tokens: paragraphs, lists, tables, code."""
    from tests.support.model_server import split_tokens

    parts: list[str] = []
    index = 0
    while len(split_tokens("".join(parts))) < tokens:
        index += 1
        kind = index % 4
        if kind == 1:
            parts.append(
                f"The district number {index} has **{index * 37} residents** and several schools near the river. " * 3
                + "\n\n"
            )
        elif kind == 2:
            parts.append("".join(f"- school {index}-{j}: {j * 40} pupils\n" for j in range(6)) + "\n")
        elif kind == 3:
            rows = "".join(f"| d{index}-{j} | {j * 3} | {j * 120} |\n" for j in range(5))
            parts.append(f"| district | schools | pupils |\n|---|---|---|\n{rows}\n")
        else:
            parts.append(f"```python\nlayer = project.mapLayersByName('schools')[0]\nprint({index})\n```\n\n")
    words = split_tokens("".join(parts))[:tokens]
    return "".join(words)


def bench_responsiveness() -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(REPO))
    from qgis.core import QgsApplication, QgsProject, QgsVectorLayer
    from qgis.PyQt.QtCore import QCoreApplication, QEvent, QTimer

    app = QgsApplication([], True)
    app.initQgis()
    try:
        from geogpt_qgis.gui.dock import ChatDock
        from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
        from tests.support.big_layers import write_big_points
        from tests.support.demo import copy_demo
        from tests.support.iface import FaithfulIface
        from tests.support.model_server import ScriptedModelServer, ToolCall, Turn, split_tokens
        from tests.support.runs import wait_until

        with tempfile.TemporaryDirectory() as work, ScriptedModelServer() as server:
            work_dir = Path(work)
            project = QgsProject.instance()
            project.read(str(copy_demo(work_dir / "demo")))
            big = QgsVectorLayer(f"{write_big_points(work_dir / 'big.gpkg')}|layername=big", "big", "ogr")
            project.addMapLayer(big)
            PlgOptionsManager.set_value("provider", "ollama")
            PlgOptionsManager.set_value("ollama_url", server.url)
            PlgOptionsManager.set_value("ollama_model", "qwen3:8b")
            iface = FaithfulIface()
            dock = ChatDock(iface, project, store_path=work_dir / "store.sqlite")
            dock.resize(480, 800)
            dock.show()
            panel = dock.panel
            statuses: list[str] = []
            panel.run_finished.connect(statuses.append)

            def run(turns: list, question: str) -> dict:
                server.script(turns)
                panel.new_conversation()
                panel.render_seconds = 0.0
                ticks: list[float] = []
                heartbeat = QTimer()
                heartbeat.setInterval(5)
                heartbeat.timeout.connect(lambda: ticks.append(time.perf_counter()))
                heartbeat.start()
                started = time.perf_counter()
                count = len(statuses)
                panel.send(question)
                wait_until(lambda: len(statuses) > count, 300)
                elapsed = time.perf_counter() - started
                heartbeat.stop()
                gaps = [b - a for a, b in itertools.pairwise(ticks)]
                return {
                    "status": statuses[-1],
                    "wall_seconds": round(elapsed, 3),
                    "render_ms": round(panel.render_seconds * 1000, 1),
                    "longest_stall_ms": round(max(gaps) * 1000, 1) if gaps else None,
                    "heartbeats": len(ticks),
                }

            delay = 0.002  # 500 tokens/s: faster than local models stream
            small_text, large_text = markdown_answer(500), markdown_answer(2000)
            # The first message imports the agent stack on the worker thread (once per session).
            first = run([Turn(text=small_text, chunk_delay=delay)], "first message")
            small = run([Turn(text=small_text, chunk_delay=delay)], "short answer")
            large = run([Turn(text=large_text, chunk_delay=delay)], "long answer")
            scan = '"v" % 7 = 0 AND regexp_match(to_string("v"), \'^[0-9]+$\')'
            with_tool = run(
                [
                    Turn(tool_calls=[ToolCall("select_features", {"layer": "big", "expression": scan})]),
                    Turn(text=large_text, chunk_delay=delay),
                ],
                "select and explain",
            )
            selected, scanned = big.selectedFeatureCount(), big.featureCount()
            dock.shutdown()
            project.clear()
            # Widgets must go before QGIS does, or their late destruction crashes the process.
            dock.deleteLater()
            iface.mainWindow().deleteLater()
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        ratio = large["render_ms"] / small["render_ms"] if small["render_ms"] else None
        return {
            "tokens": {"small": len(split_tokens(small_text)), "large": len(split_tokens(large_text))},
            "first_message_500_tokens": first,
            "stream_500_tokens": small,
            "stream_2000_tokens": large,
            "tool_then_2000_tokens": {**with_tool, "features_scanned": scanned, "selected": selected},
            "render_ratio_2000_vs_500": round(ratio, 2) if ratio else None,
            "linear_would_be": 4.0,
            "quadratic_would_be": 16.0,
            "goal_stall_ms": GOAL_STALL_MS,
            "meets_stall_goal": max(run_["longest_stall_ms"] for run_ in (first, small, large, with_tool))
            <= GOAL_STALL_MS,
        }
    finally:
        app.exitQgis()


def main() -> int:
    results = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "startup": bench_startup(),
    }
    startup = results["startup"]
    print(
        f"start-up: classFactory+initGui median {startup['plugin_load_ms_median']} ms "
        f"(goal <= {GOAL_STARTUP_MS:g} ms); the dock's first show (builds the chat panel) "
        f"{startup['dock_first_show_ms_median']} ms; importing the agent stack "
        f"{startup['agent_stack_import_ms_median']} ms (on the worker, with the first message); "
        f"heavy modules at start: {startup['heavy_modules_at_start'] or 'none'}"
    )
    results["responsiveness"] = bench_responsiveness()
    r = results["responsiveness"]
    print(
        f"rendering on the main thread: 500 tokens {r['stream_500_tokens']['render_ms']} ms, "
        f"2,000 tokens {r['stream_2000_tokens']['render_ms']} ms; "
        f"ratio {r['render_ratio_2000_vs_500']} (linear 4, quadratic 16)"
    )
    stalls = {name: r[name]["longest_stall_ms"] for name in RUN_LABELS}
    print(
        "longest main-thread stall: "
        + ", ".join(f"{label} {stalls[name]} ms" for name, label in RUN_LABELS.items())
        + f" (goal <= {GOAL_STALL_MS:g} ms)"
    )
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"wrote {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
