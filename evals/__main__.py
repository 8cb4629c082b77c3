"""``python -m evals [ID_PART]``: run the evaluation headless and print the report (also evals/results.json).

Needs what ``make eval`` starts: PostGIS with the demo town.  Starts its own
scripted model server and OGC API Features server (pygeoapi) on 127.0.0.1.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import REPO, headless_qgis

OGC_NAME = "Elvbury open data"


def _print(report: dict[str, Any]) -> None:
    print(f"Tasks: {report['passed']}/{report['tasks']} passed ({report['pass_rate']:.0%})")
    for group, row in report["groups"].items():
        print(f"  {group:<17} {row['passed']}/{row['tasks']}")
    for task, failures in report["failures"].items():
        print(f"  FAILED {task}: " + "; ".join(failures))
    print("Per task: model calls, tool calls; tokens of each model call as system + tools + history (Tekken)")
    for row in report["per_task"]:
        calls = " ".join(f"{p['system']}+{p['tools']}+{p['history']}" for p in row["prompt"])
        print(f"  {row['id']:<30} {row['model_calls']:>2} {row['tool_calls']:>2}  {calls}")
    budget = report["prompt_budget"]["every_family"]
    print(
        f"Prompt budget, every family: {budget['system_prompt_tokens']} system + {budget['schema_tokens']} schemas = "
        f"{budget['total_tokens']} tokens (goal {report['prompt_budget']['goal_tokens']}; "
        f"the agent's own estimate: {budget['estimated_total_tokens']})"
    )
    robust = report["robustness"]
    print(f"Weak-model replays: {robust['fixed']}/{robust['replays']} answered with the fix")
    for kind, row in robust["kinds"].items():
        print(f"  {kind:<32} {row['fixed']}/{row['replays']}")
    for miss in robust["not_fixed"]:
        print(f"  NOT FIXED {miss['kind']} ({miss['tool']}): {miss['reply']}")
    rows = robust["recoveries"]
    passed = sum(r["passed"] for r in rows)
    print(f"Weak-model mistakes through the agent, corrected from the answer alone: {passed}/{len(rows)}")
    for row in rows:
        print(f"  {'passed' if row['passed'] else 'FAILED'} {row['id']}: {row['mistake']}")
        print(f"    answered: {row['correction']}")
        for failure in row["failures"]:
            print(f"    {failure}")


def main(only: str = "") -> dict[str, Any]:
    from bench.common import run_child
    from bench.real_tokens import real_counter

    budget = run_child("bench.prompt_budget")  # one QGIS per process
    with headless_qgis():
        from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
        from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
        from geogpt_qgis.tools.base import ToolContext
        from harness.demo import GPKG, ensure_demo
        from harness.model_server import ScriptedModelServer
        from harness.ogc_server import running_ogc_server
        from harness.postgis import saved_connection

        ensure_demo()
        bridge = MainThreadBridge()
        workdir = Path(tempfile.mkdtemp(prefix="geogpt-eval-"))
        (workdir / "ogc").mkdir()
        with (
            ScriptedModelServer() as server,
            running_ogc_server(workdir / "ogc", GPKG) as ogc,
            saved_connection("elvbury"),
        ):
            PlgOptionsManager.set_value("ogc_servers", f"{OGC_NAME} = {ogc.url}")
            PlgOptionsManager.set_value("postgis_connections", "*")
            try:
                from evals.suite import run_suite

                report = run_suite(
                    workdir,
                    server,
                    GPKG,
                    lambda project: ToolContext(project=project, bridge=bridge),
                    real_counter(),
                    only,
                )
            finally:
                PlgOptionsManager.set_value("ogc_servers", "")
        bridge.close()
        shutil.rmtree(workdir, ignore_errors=True)
    report["prompt_budget"] = budget
    return report


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--no-examples"]
    plain = len(arguments) < len(sys.argv) - 1  # without find_examples (the prompt budget still counts it)
    if plain:
        from evals.real import without_examples

        without_examples()
    result = main(arguments[0] if arguments else "")
    name = "results-no-examples.json" if plain else "results.json"
    (REPO / "evals" / name).write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    _print(result)
