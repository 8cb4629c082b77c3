"""Analyses of several steps read their stored results cleanly: no GDAL error, every count right.

Each step's result is stored in the results GeoPackage and the next step reads it back through QGIS.  When the
result's provenance was written into that GeoPackage after QGIS had opened the table, GDAL's reads failed now and
then ("database disk image is malformed", "attempt to write a readonly database": 9 to 12 of 45 tasks here), and
on QGIS 3.40/3.44 the eval suite met empty results beside such errors.  The tasks are the eval suite's own
(``evals``), run through the real agent and the scripted model server, several rounds in a row.
"""

from __future__ import annotations

import threading

import pytest

from bench.real_tokens import real_counter
from evals.oracle import Oracle
from evals.runner import EvalRunner
from evals.suite import all_tasks
from tests.support.demo import GPKG

ROUNDS = 5
TASKS = ("schools-with-district", "roads-in-centre", "parks-near-schools")  # one, two and two stored steps


@pytest.fixture
def gdal_errors():
    """GDAL's errors on every thread (the algorithm thread reads the stored results), with the thread's name."""
    from osgeo import gdal

    found: list[str] = []

    def keep(level: int, _number: int, message: str) -> None:
        if level >= gdal.CE_Failure:
            found.append(f"[{threading.current_thread().name}] {message}")

    gdal.SetErrorHandler(keep)
    yield found
    gdal.SetErrorHandler("CPLDefaultErrorHandler")


def test_stored_results_read_back_cleanly_step_after_step(model_server, bridge, tmp_path, gdal_errors):
    from geogpt_qgis.tools.base import ToolContext

    oracle = Oracle(GPKG)
    tasks = [task for task in all_tasks(oracle) if task.id in TASKS]
    assert sorted(task.id for task in tasks) == sorted(TASKS)
    failures = []
    for round_ in range(ROUNDS):
        runner = EvalRunner(
            tmp_path / f"round{round_}",
            model_server,
            oracle,
            lambda project: ToolContext(project=project, bridge=bridge),
            real_counter(),
        )
        for task in tasks:
            result = runner.run(task)
            if not result.passed:
                failures.append(f"round {round_}, {task.id}: {result.failures}")
    assert failures == [] and gdal_errors == [], (failures, gdal_errors)
