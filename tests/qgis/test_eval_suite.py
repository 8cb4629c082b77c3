"""``make eval`` runs in the test suite too: every task passes, every weak-model mistake gets its fix named."""

from __future__ import annotations

import dataclasses

import pytest

from bench.real_tokens import real_counter
from evals.oracle import Oracle
from evals.runner import EvalRunner
from evals.suite import all_tasks, run_suite
from evals.task import GROUPS, Expected
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.demo import GPKG
from tests.support.postgis import saved_connection

pytestmark = pytest.mark.postgis


@pytest.fixture
def eval_env(ogc_server, bridge, qgis_app):
    from geogpt_qgis.tools.base import ToolContext

    with saved_connection("elvbury"):
        PlgOptionsManager.set_value("ogc_servers", f"Elvbury open data = {ogc_server.url}")
        yield lambda project: ToolContext(project=project, bridge=bridge)


def test_every_task_passes_and_every_replayed_mistake_is_answered_with_its_fix(eval_env, model_server, tmp_path):
    report = run_suite(tmp_path, model_server, GPKG, eval_env, real_counter())
    assert report["tasks"] >= 30
    assert set(report["groups"]) == set(GROUPS)
    assert report["failures"] == {}
    assert report["passed"] == report["tasks"]
    for row in report["per_task"]:
        assert row["model_calls"] == row["tool_calls"] + 1  # one call per step, then the answer
        assert 0 < row["largest_prompt"] < 8192
        assert len(row["prompt"]) == row["model_calls"]
        first, last = row["prompt"][0], row["prompt"][-1]
        assert first["system"] > 200 and first["tools"] > 1000  # every call pays for both
        assert last["history"] > first["history"]  # the tool results the answer was written from
    robust = report["robustness"]
    assert robust["replays"] >= 15 and set(robust["kinds"]) == {
        "misspelt algorithm id",
        "parameter of another algorithm",
        "distance in the wrong unit",
        "JSON arguments as a string",
        "missing required argument",
        "band number out of range",
        "raster where a vector is expected",
        "class name instead of its code",
        "field that does not exist",
        "colour name instead of a hex code",
        "number of classes as text",
        "colour ramp that does not exist",
        "numeric style on a text field",
        "a worked example's placeholder copied",
        "made-up layer name",
        "tool that does not exist",
        "invalid JSON arguments",
        "arguments of another tool",
        "algorithm name instead of its id",
    }
    assert robust["not_fixed"] == [], robust["not_fixed"]
    # Through the whole agent: each mistake was answered with a correction naming the fix, and the call made
    # from that answer alone gave the task's right answer (evals/recovery.py).
    recoveries = {row["id"]: row for row in robust["recoveries"]}
    assert len(recoveries) >= 9 and all(row["passed"] for row in recoveries.values()), robust["recoveries"]
    assert "did you mean describe_layer?" in recoveries["recover-get-layers"]["correction"].lower()
    assert 'double quotes: {"layer": "hospitals"}' in recoveries["recover-single-quotes"]["correction"]
    assert "run_algorithm takes them" in recoveries["recover-other-tools-arguments"]["correction"]


def test_a_wrong_expectation_fails_the_task_with_its_reason(eval_env, model_server, tmp_path, demo_project):
    oracle = Oracle(GPKG)
    task = next(t for t in all_tasks(oracle) if t.id == "big-schools")
    right = task.expect(oracle)
    wrong = dataclasses.replace(task, expect=lambda o: Expected(numbers=[right.numbers[0] + 1], layers=right.layers))
    runner = EvalRunner(tmp_path, model_server, oracle, eval_env, real_counter())
    assert runner.run(task).passed
    failed = runner.run(wrong)
    assert not failed.passed
    assert failed.failures == [f"the answer lacks {right.numbers[0] + 1:g} (it has {right.numbers[0]:g}, 400)"]


def test_the_layer_checks_find_layers_through_the_tools_artifacts():
    from qgis.core import QgsProject, QgsVectorLayer

    from evals.runner import reported_layers
    from geogpt_qgis.core.artifacts import AddedLayer, ToolArtifact
    from geogpt_qgis.core.events import ToolFinished

    project = QgsProject()
    made = QgsVectorLayer("Point?crs=EPSG:25832", "made", "memory")
    named = QgsVectorLayer("Point?crs=EPSG:25832", "named", "memory")
    project.addMapLayers([made, named])
    results = [
        ToolFinished("c1", "run_algorithm", True, "…", 0.1, ToolArtifact(added=(AddedLayer("made", made.id()),))),
        ToolFinished("c2", "find_places", True, "…", 0.1, ToolArtifact(added=(AddedLayer("named"),))),  # by name
        ToolFinished("c3", "run_sql", False, "Error: …", 0.1, ToolArtifact(added=(AddedLayer("failed"),))),
        ToolFinished("c4", "query_ogc_collection", True, "…", 0.1, ToolArtifact(added=(AddedLayer("gone"),))),
    ]
    assert reported_layers(project, results) == {"made": made, "named": named, "gone": None}


def test_a_correction_without_the_fix_or_a_mistake_that_runs_fails_the_recovery(eval_env, model_server, tmp_path):
    from evals.recovery import RECOVERIES
    from evals.task import Call

    task = next(t for t in RECOVERIES if t.id == "recover-layer-name")
    runner = EvalRunner(tmp_path, model_server, Oracle(GPKG), eval_env, real_counter())
    unnamed = runner.run(dataclasses.replace(task, correction=("did you mean 'school_sites'",)))
    assert not unnamed.passed and unnamed.correction == "Error: no layer 'school'; did you mean 'schools'?"
    assert unnamed.failures == [f"the correction does not name \"did you mean 'school_sites'\": {unnamed.correction}"]
    not_a_mistake = dataclasses.replace(task, steps=[[Call("describe_layer", {"layer": "schools"})], *task.steps[1:]])
    assert runner.run(not_a_mistake).failures[0] == "the mistaken call was not refused"
