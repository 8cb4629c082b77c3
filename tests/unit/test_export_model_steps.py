"""Which calls of a run an exported model holds, which it lists as left out, and which it drops (reads, failures)."""

from __future__ import annotations

from types import SimpleNamespace

from geogpt_qgis.core.analysis_steps import Step, StepRecorder, analysis_of, last_turn, steps_of_entries
from geogpt_qgis.core.artifacts import AlgorithmRun, LayerRef, ToolArtifact
from geogpt_qgis.core.events import RunFinished, ToolFinished, ToolStarted

BUFFER = ToolArtifact(
    layers=(LayerRef("rivers", "r1"),),
    algorithm=AlgorithmRun("native:buffer", {"INPUT": "rivers", "DISTANCE": 100, "OUTPUT": "TEMPORARY_OUTPUT"}),
    added=(LayerRef("rivers_buffer", "b1"),),
)


def test_export_model_keeps_algorithms_lists_what_changed_something_and_drops_reads():
    steps = [
        Step("describe_layer", {"layer": "rivers"}),
        Step("run_algorithm", {"algorithm": "native:buffer"}, BUFFER),
        Step("run_sql", {"sql": "SELECT 1", "connection": "demo"}, ToolArtifact(added=(LayerRef("q", "q1"),))),
        Step("style_layer", {"layer": "rivers_buffer"}),
        Step("brand_new_tool", {}),  # unknown: counted as one that did something, never dropped
        Step("run_algorithm", {"algorithm": "native:buffer"}),  # no algorithm recorded: not a model step
    ]
    analysis = analysis_of(steps)
    assert [step.tool for step in analysis.steps] == ["run_algorithm"]
    assert analysis.steps[0].algorithm is not None and analysis.steps[0].algorithm.id == "native:buffer"
    assert [step.tool for step in analysis.outside] == ["run_sql", "style_layer", "brand_new_tool", "run_algorithm"]
    assert analysis.outside[0].label == 'run_sql(sql="SELECT 1", connection="demo")'
    assert not analysis.empty and analysis_of(steps[2:4]).empty


def test_export_model_records_a_runs_successful_calls_from_its_events():
    recorder = StepRecorder()
    recorder.record(ToolStarted("1", "run_algorithm", {"algorithm": "native:buffer"}))
    recorder.record(ToolStarted("2", "run_sql", {"sql": "DROP TABLE x"}))
    recorder.record(ToolFinished("2", "run_sql", False, "refused", 0.1))  # failed: it did nothing
    recorder.record(ToolFinished("1", "run_algorithm", True, "done", 0.5, BUFFER))
    recorder.record(RunFinished("finished"))
    assert recorder.steps == [Step("run_algorithm", {"algorithm": "native:buffer"}, BUFFER)]
    recorder.reset()
    assert recorder.steps == []


def test_export_model_reads_a_stored_conversations_entries_and_its_last_turn():
    def entry(kind: str, name: str = "", ok: bool = True, artifact: ToolArtifact | None = None) -> SimpleNamespace:
        return SimpleNamespace(kind=kind, name=name, args={}, ok=ok, artifact=artifact)

    entries = [
        entry("user"),
        entry("tool", "run_algorithm", artifact=BUFFER),
        entry("answer"),
        entry("user"),
        entry("tool", "run_sql", ok=False),
        entry("tool", "set_layer"),
        entry("answer"),
    ]
    assert [s.tool for s in steps_of_entries(entries)] == ["run_algorithm", "set_layer"]
    assert [s.tool for s in steps_of_entries(last_turn(entries))] == ["set_layer"]
    assert steps_of_entries(entries)[1].artifact.empty  # stored before artifacts existed: read as empty
