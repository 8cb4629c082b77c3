"""Processing tool overhead, main-thread stalls during a run, and search speed.

1. Buffer a 100,000-point layer through the run_algorithm tool (called from a
   worker thread, as the agent does) and directly with ``processing.run`` on
   the same job, each after an untimed warm-up, each side in a QGIS process of
   its own (in one process, whichever side ran second paid for what the first
   left behind).  The overhead is the ratio of the medians (goal: within
   10%, issue 34), with the ratio of the fastest runs (the least disturbed on
   a shared machine) beside it.  The tool is called as
   within an agent run, where its result is added at once and copied into
   a GeoPackage of its own after the call (``tools.result_copies``); each
   round then finishes that copy as the run's next step would, checks that
   the layer reads its stored table (a store of the bench's own), and
   reports when it did, and the time of the copy itself, R-tree included.
   A heartbeat records the longest main-thread stall over the call and the
   copy's finish (goal: 50 ms or less).
2. Search (``bench.algorithm_search``): top-5 accuracy on the analyst queries
   of the test suite and the time per query (goals: at least 90%, under
   50 ms), the one-off cost of building the index, and the same figures for
   the hand-written BM25F the SQLite FTS5 index replaced.

    python -m bench.processing     prints one JSON line
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import algorithm_search
from bench.common import GOAL_STALL_MS, Heartbeat, headless_qgis, idle_stall_ms, run_child, sized

FEATURES = sized(100_000, 2_000)
ROUNDS = sized(5, 1)
PARAMETERS = {"DISTANCE": 5, "SEGMENTS": 8}
DIRECT = "--direct"  # the processing.run side, run by measure() in a QGIS process of its own
GOAL_OVERHEAD = 0.10  # run_algorithm within 10% of processing.run, median vs median (issue 34)


def measure() -> dict[str, Any]:
    from qgis.core import QgsProject, QgsVectorLayer

    from geogpt_qgis.core import result_files
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools import result_copies
    from geogpt_qgis.tools.base import ToolContext
    from geogpt_qgis.tools.measures import warm_measure_caches
    from geogpt_qgis.tools.processing.family import ProcessingTools
    from geogpt_qgis.tools.result_store import ResultStore, set_result_store
    from harness.big_layers import write_big_points
    from harness.runs import call_in_thread

    project = QgsProject.instance()
    with tempfile.TemporaryDirectory() as work:
        path = write_big_points(Path(work) / "points.gpkg", FEATURES)
        layer = QgsVectorLayer(f"{path}|layername=big", "points", "ogr")
        project.addMapLayer(layer)
        store = ResultStore(Path(work) / "scratch")  # results kept as in QGIS, in result GeoPackages of our own
        set_result_store(project, store)
        store_seconds = _time_store_copies(store)
        tools = ProcessingTools(ToolContext(project=project, bridge=MainThreadBridge(), iface=None))
        warm_measure_caches()  # as the plugin does on the main thread when QGIS has sat idle after start-up
        idle = idle_stall_ms()
        tool_seconds, stored_seconds, stalls = [], [], []
        # An untimed call before the rounds: the algorithm thread starts, building its PROJ context.
        call_in_thread(_in_a_run, tools.run_algorithm, "native:buffer", {"INPUT": "points", **PARAMETERS}, "warm_up")
        call_in_thread(result_copies.finish)
        project.removeMapLayer(project.mapLayersByName("warm_up")[0].id())
        for round_ in range(ROUNDS):
            _settle()
            name = f"buffered_{round_}"
            with Heartbeat() as heartbeat:
                started = time.perf_counter()
                call_in_thread(_in_a_run, tools.run_algorithm, "native:buffer", {"INPUT": "points", **PARAMETERS}, name)
                tool_seconds.append(time.perf_counter() - started)
                # What a run does before its next call or its end: the copy finished, the layer repointed.
                call_in_thread(result_copies.finish)
                stored_seconds.append(time.perf_counter() - started)
            stalls.append(heartbeat.longest_stall_ms)
            added = project.mapLayersByName(name)[0]
            assert added.featureCount() == FEATURES
            stored = store.scratch_folder / f"{name}.gpkg"
            assert added.source() == f"{stored}|layername={name}"  # stored, not a temporary layer
            assert name in result_files.result_tables(stored)
            project.removeMapLayer(added.id())
        # processing.run in a QGIS process of its own.  Run after the tool's rounds in this one, it ran slower
        # than alternated (0.82 s against 0.71 s: what the tool's results left behind); alternated, each freed
        # result slowed the next tool round instead (+26 %, stalls of 98 ms).  Apart, neither pays for the other.
        direct_seconds = run_child("bench.processing", args=(DIRECT,))["direct_processing_run_seconds"]
        search = algorithm_search.measure()
        project.clear()
        set_result_store(project, None)
    direct, tool = statistics.median(direct_seconds), statistics.median(tool_seconds)
    overhead = min(tool_seconds) / min(direct_seconds) - 1
    return {
        "features": FEATURES,
        "rounds": ROUNDS,
        "direct_processing_run_seconds": [round(s, 3) for s in direct_seconds],
        "tool_seconds": [round(s, 3) for s in tool_seconds],
        "median_direct_seconds": round(direct, 3),
        "median_tool_seconds": round(tool, 3),
        # Within an agent run the copy into its GeoPackage runs after the call, while the model reads
        # the result (tools.result_copies): from the call's start to the layer reading its stored table.
        "stored_seconds": [round(s, 3) for s in stored_seconds],
        "median_stored_seconds": round(statistics.median(stored_seconds), 3),
        "tool_overhead": round(overhead, 4),
        "tool_overhead_of_medians": round(tool / direct - 1, 4),
        # Where the tool's extra time goes: its copy into its GeoPackage, R-tree included (algorithm thread).
        "median_store_copy_seconds": round(statistics.median(store_seconds), 3),
        "goal_overhead": GOAL_OVERHEAD,
        "meets_overhead_goal": tool / direct - 1 <= GOAL_OVERHEAD,
        "longest_stall_ms_during_tool_runs": max(s for s in stalls if s is not None),
        "median_longest_stall_ms_per_run": statistics.median(s for s in stalls if s is not None),
        "idle_longest_stall_ms": idle,
        "goal_stall_ms": GOAL_STALL_MS,
        "meets_stall_goal": statistics.median(s for s in stalls if s is not None) <= GOAL_STALL_MS,
        **search,
    }


def direct_rounds() -> dict[str, Any]:
    """``processing.run`` on the same job, after one untimed run, in this process only (``--direct``)."""
    import processing
    from qgis.core import QgsVectorLayer

    from harness.big_layers import write_big_points

    seconds = []
    with tempfile.TemporaryDirectory() as work:
        path = write_big_points(Path(work) / "points.gpkg", FEATURES)
        layer = QgsVectorLayer(f"{path}|layername=big", "points", "ogr")
        processing.run("native:buffer", {"INPUT": layer, **PARAMETERS, "OUTPUT": "TEMPORARY_OUTPUT"})  # untimed
        for _round in range(ROUNDS):
            _settle()
            started = time.perf_counter()
            result = processing.run("native:buffer", {"INPUT": layer, **PARAMETERS, "OUTPUT": "TEMPORARY_OUTPUT"})
            seconds.append(time.perf_counter() - started)
            assert result["OUTPUT"].featureCount() == FEATURES
            del result
        del layer
    return {"direct_processing_run_seconds": seconds}


def _settle() -> None:
    """Let what the last run left go: Python's garbage, then the layers QGIS deletes later, in the event loop."""
    from qgis.PyQt.QtCore import QEventLoop, QTimer

    gc.collect()
    loop = QEventLoop()
    QTimer.singleShot(int(sized(300, 50)), loop.quit)
    loop.exec()


def _in_a_run(tool: Any, *args: Any) -> Any:
    """Call ``tool`` as within an agent run (``agent.session``): its results are stored after it returns."""
    from geogpt_qgis.tools import result_copies

    with result_copies.deferring():
        return tool(*args)


def _time_store_copies(store: Any) -> list[float]:
    """Record how long each copy into ``store`` takes (its features and GDAL's R-tree, built when the table closes)."""
    seconds: list[float] = []
    write = store.write

    def timed(*args: Any) -> None:
        started = time.perf_counter()
        try:
            write(*args)
        finally:
            seconds.append(time.perf_counter() - started)

    store.write = timed
    return seconds


if __name__ == "__main__":
    with headless_qgis():
        print(json.dumps(direct_rounds() if DIRECT in sys.argv[1:] else measure()))
