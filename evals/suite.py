"""Every task of ``make eval``, and running the whole suite in an already running QGIS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.oracle import Oracle
from evals.recovery import recover_all
from evals.robustness import add_degree_layer, replay_all, summarise_replays
from evals.runner import EvalRunner, summarise
from evals.task import Task
from evals.tasks_analysis import MULTI_STEP, SINGLE
from evals.tasks_data import OGC, SQL, with_oracle
from evals.tasks_maps_arrange import MAPS_ARRANGE
from evals.tasks_maps_export import MAPS_EXPORT
from evals.tasks_maps_load import MAPS_LOAD
from evals.tasks_maps_style import MAPS_STYLE
from evals.tasks_project import DECLINE, INSPECTION
from evals.tasks_raster import RASTER


def all_tasks(oracle: Oracle) -> list[Task]:
    maps = [*MAPS_LOAD, *MAPS_ARRANGE, *MAPS_EXPORT, *MAPS_STYLE]
    return [*INSPECTION, *SINGLE, *MULTI_STEP, *SQL, *with_oracle(OGC, oracle), *DECLINE, *RASTER, *maps]


def run_suite(workdir: Path, server: Any, gpkg: Path, ctx_factory: Any, count_tokens: Any, only: str = "") -> dict:
    """Run the tasks and the weak-model recoveries (those whose id contains ``only``) and the replays; the report."""
    from qgis.core import QgsProject

    from geogpt_qgis.agent.toolkit import Toolkit
    from geogpt_qgis.tools.registry import active_families, build_families
    from harness.demo import copy_demo
    from harness.runs import call_in_thread

    oracle = Oracle(gpkg)
    runner = EvalRunner(workdir, server, oracle, ctx_factory, count_tokens)
    results = [runner.run(task) for task in all_tasks(oracle) if only in task.id]
    report = summarise(results)
    recoveries = recover_all(runner, only)

    project = QgsProject.instance()
    project.clear()
    project.read(str(copy_demo(workdir / "replays")))
    add_degree_layer(project)
    families = active_families(build_families(ctx_factory(project)))
    toolkit = Toolkit([tool for family in families for tool in family.tools()])
    report["robustness"] = summarise_replays(replay_all(toolkit, call_in_thread), recoveries)
    project.clear()
    return report
