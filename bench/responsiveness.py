"""Main-thread responsiveness and rendering cost while the real dock streams answers.

The dock streams answers from the scripted model server while a heartbeat on
the main thread records the longest stall: the first message (which imports
the agent stack on the worker), then, three times each, 500- and 2,000-token
answers and a heavy tool (a 200,000-feature expression scan) followed by
2,000 tokens; the median of the three is reported beside the same heartbeat
with nothing running (the machine's own noise).  Rendering 500 and 2,000
tokens into the chat view (fastest of five, no network) shows whether
rendering is linear (about 4x) or re-renders the transcript (about 16x).

    python -m bench.responsiveness     prints one JSON line
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import GOAL_STALL_MS, Heartbeat, headless_qgis, idle_stall_ms, sized

TOKENS_PER_SECOND = sized(500, 5000)  # faster than local models stream
REPEATS = sized(3, 1)
SMALL_TOKENS, LARGE_TOKENS = sized((500, 2000), (100, 400))
BIG_LAYER_POINTS = sized(200_000, 5_000)


def markdown_answer(tokens: int) -> str:
    """A realistic answer of about ``tokens`` streamed tokens: paragraphs, lists, tables, code."""
    from harness.model_server import split_tokens

    parts: list[str] = []
    index = 0
    while len(split_tokens("".join(parts))) < tokens:
        index += 1
        kind = index % 4
        if kind == 1:
            sentence = (
                f"The district number {index} has **{index * 37} residents** and several schools near the river. "
            )
            parts.append(sentence * 3 + "\n\n")
        elif kind == 2:
            parts.append("".join(f"- school {index}-{j}: {j * 40} pupils\n" for j in range(6)) + "\n")
        elif kind == 3:
            rows = "".join(f"| d{index}-{j} | {j * 3} | {j * 120} |\n" for j in range(5))
            parts.append(f"| district | schools | pupils |\n|---|---|---|\n{rows}\n")
        else:
            parts.append(f"```python\nlayer = project.mapLayersByName('schools')[0]\nprint({index})\n```\n\n")
    return "".join(split_tokens("".join(parts))[:tokens])


def render_cost_ms(tokens: int, repeats: int = sized(5, 1), tokens_per_flush: int = 20) -> float:
    """Main-thread time to render an answer of ``tokens`` tokens into the chat view, as the dock does.

    Fed in flushes of ``tokens_per_flush`` with the event loop run after each,
    no network involved; the fastest of ``repeats`` is kept (the least
    disturbed on a shared machine).
    """
    from qgis.PyQt.QtWidgets import QApplication

    from geogpt_qgis.gui.chat_view import ChatView
    from harness.model_server import split_tokens

    pieces = split_tokens(markdown_answer(tokens))
    best = float("inf")
    for _ in range(repeats):
        view = ChatView()
        view.resize(480, 800)
        view.show()
        QApplication.processEvents()
        started = time.perf_counter()
        for index in range(0, len(pieces), tokens_per_flush):
            view.append_text("".join(pieces[index : index + tokens_per_flush]))
            QApplication.processEvents()
        view.end_turn("finished")
        QApplication.processEvents()
        best = min(best, time.perf_counter() - started)
        view.deleteLater()
    return round(best * 1000, 1)


def measure() -> dict[str, Any]:
    from qgis.core import QgsProject, QgsVectorLayer
    from qgis.PyQt.QtCore import QCoreApplication, QEvent

    from geogpt_qgis.gui.dock import ChatDock
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from harness.big_layers import write_big_points
    from harness.demo import copy_demo
    from harness.iface import FaithfulIface
    from harness.model_server import ScriptedModelServer, ToolCall, Turn, split_tokens
    from harness.runs import wait_until

    with tempfile.TemporaryDirectory() as work, ScriptedModelServer() as server:
        work_dir = Path(work)
        project = QgsProject.instance()
        project.read(str(copy_demo(work_dir / "demo")))
        points = write_big_points(work_dir / "big.gpkg", BIG_LAYER_POINTS)
        big = QgsVectorLayer(f"{points}|layername=big", "big", "ogr")
        project.addMapLayer(big)
        PlgOptionsManager.set_value("provider", "ollama")
        PlgOptionsManager.set_value("ollama_url", server.url)
        PlgOptionsManager.set_value("ollama_model", "qwen3:8b")
        iface = FaithfulIface()
        dock = ChatDock(iface, project, store_path=work_dir / "store.sqlite")
        dock.resize(480, 800)
        dock.show()
        panel = dock.panel
        idle = [idle_stall_ms() for _ in range(REPEATS)]
        statuses: list[str] = []
        panel.run_finished.connect(statuses.append)

        def run(turns: list, question: str) -> dict[str, Any]:
            server.script(turns)
            panel.view.new_conversation()
            panel.runs.render_seconds = 0.0
            count = len(statuses)
            started = time.perf_counter()
            with Heartbeat() as heartbeat:
                panel.runs.send(question)
                wait_until(lambda: len(statuses) > count, 300)
            return {
                "status": statuses[-1],
                "wall_seconds": round(time.perf_counter() - started, 3),
                "render_ms": round(panel.runs.render_seconds * 1000, 1),
                "longest_stall_ms": heartbeat.longest_stall_ms,
            }

        def repeated(turns: list, question: str) -> dict[str, Any]:
            runs = [run(list(turns), question) for _ in range(REPEATS)]
            stalls = [r["longest_stall_ms"] for r in runs]
            return {
                "statuses": [r["status"] for r in runs],
                "longest_stall_ms": statistics.median(stalls),
                "worst_stall_ms": max(stalls),
                "render_ms": statistics.median(r["render_ms"] for r in runs),
            }

        delay = 1.0 / TOKENS_PER_SECOND
        small_text, large_text = markdown_answer(SMALL_TOKENS), markdown_answer(LARGE_TOKENS)
        # The first message imports the agent stack on the worker thread (once per session).
        first = run([Turn(text=small_text, chunk_delay=delay)], "first message")
        small = repeated([Turn(text=small_text, chunk_delay=delay)], "short answer")
        large = repeated([Turn(text=large_text, chunk_delay=delay)], "long answer")
        scan = '"v" % 7 = 0 AND regexp_match(to_string("v"), \'^[0-9]+$\')'
        with_tool = repeated(
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
    render_small, render_large = render_cost_ms(SMALL_TOKENS), render_cost_ms(LARGE_TOKENS)
    steady = (small, large, with_tool)
    return {
        "tokens": {"small": len(split_tokens(small_text)), "large": len(split_tokens(large_text))},
        "repeats": REPEATS,
        "idle_longest_stall_ms": statistics.median(idle),
        "first_message_500_tokens": first,
        "stream_500_tokens": small,
        "stream_2000_tokens": large,
        "tool_then_2000_tokens": {**with_tool, "features_scanned": scanned, "selected": selected},
        "render_500_tokens_ms": render_small,
        "render_2000_tokens_ms": render_large,
        "render_ratio_2000_vs_500": round(render_large / render_small, 2),
        "linear_would_be": 4.0,
        "quadratic_would_be": 16.0,
        "goal_stall_ms": GOAL_STALL_MS,
        "meets_stall_goal": max(r["longest_stall_ms"] for r in steady) <= GOAL_STALL_MS,
    }


if __name__ == "__main__":
    with headless_qgis():
        print(json.dumps(measure()))
