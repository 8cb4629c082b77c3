"""The run log: which events are kept, and how runs read."""

from __future__ import annotations

import json

from geogpt_qgis.core.artifacts import AddedLayer, ToolArtifact
from geogpt_qgis.core.events import (
    ApprovalRequested,
    ContextUsage,
    ModelCallFinished,
    Notice,
    ReasoningDelta,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from geogpt_qgis.core.run_log import RunRecord, dumps, event_record, format_runs


def test_streamed_text_is_not_logged_everything_else_is():
    assert event_record(TextDelta("x")) is None
    assert event_record(ReasoningDelta("x")) is None
    assert event_record(ModelCallFinished(120, 30, 1.5)) == (
        "model",
        {"input_tokens": 120, "output_tokens": 30, "seconds": 1.5},
    )
    kind, data = event_record(ToolFinished("c1", "describe_layer", True, "x" * 5000, 0.2))
    assert kind == "tool" and len(data["result"]) == 2000
    assert event_record(ApprovalRequested({"action": "Run PyQGIS code", "tool": "run_pyqgis"}))[0] == "approval"


def test_runs_read_as_markdown_with_totals():
    events = [
        ModelCallFinished(1200, 40, 0.8),
        ToolStarted("c1", "select_features", {"layer": "schools", "expression": "\"type\" = 'primary'"}),
        ToolFinished("c1", "select_features", True, "Selected 16 of 31 features in 'schools'", 0.05),
        ContextUsage(2400, 8192, 1024, 12),
        Notice("Approved automatically", "info"),
        RunFinished("finished"),
    ]
    run = RunRecord("r1", "Select the primary schools", 1_700_000_000.0, 1_700_000_003.5, "finished")
    run.events = [(i * 0.5, *event_record(e)) for i, e in enumerate(events)]
    text = format_runs([run, RunRecord("r2", "and then", 1_700_000_010.0, None, "running")])
    first, second = text.split("\n\n### ")
    assert first.startswith("### Run 1: Select the primary schools")
    assert "**finished** ✓ · 3.5 s · 1 model call, 1,200 tokens in, 40 out · 1 tool call" in first
    assert '|   0.50 s | → select_features | layer="schools", expression=' in first
    assert "| ✓ select_features | 0.05 s · Selected 16 of 31 features in 'schools' |" in first
    assert "2,400 of 8,192 tokens (29%), 12 older messages summarised" in first
    assert second.startswith("Run 2: and then") and "did not end (QGIS closed or crashed)" in second
    assert format_runs([]) == "No runs recorded for this conversation yet."


def test_every_mark_is_drawn_by_the_default_fonts_and_explained():
    """No mark outside the characters DejaVu Sans, Segoe UI and the macOS fonts all have (⏸ was not drawn)."""
    paused = RunRecord("r1", "Delete the parks", 1_700_000_000.0, 1_700_000_001.0, "paused")
    stopped = RunRecord("r2", "Buffer", 1_700_000_002.0, 1_700_000_003.0, "cancelled")
    stopped.events = [(0.1, *event_record(ToolStarted("c1", "run_algorithm", {})))]
    text = format_runs([paused, stopped])
    assert "**paused** (waiting for approval)" in text and "**cancelled** ■" in text
    assert "⏸" not in text
    legend = text.split("\n\n")[-1]
    assert all(mark in legend for mark in ("→", "✓", "✗", "■"))
    assert "0 model calls" in text and "0 tool calls" in text
    drawn = {"→", "✓", "✗", "■", "…", "·", "—"}
    assert {c for c in text if ord(c) > 0x2000} <= drawn


def test_a_tool_record_keeps_the_artifact_and_the_log_names_the_layers_it_added():
    artifact = ToolArtifact(layers=("rivers",), algorithm="native:buffer", added=(AddedLayer("rivers_500m", "l1"),))
    kind, data = event_record(ToolFinished("c1", "run_algorithm", True, "native:buffer finished.", 1.25, artifact))
    assert ToolArtifact.from_dict(json.loads(dumps(data))["artifact"]) == artifact
    assert "artifact" not in event_record(ToolFinished("c2", "list_layers", True, "7 layers", 0.1))[1]
    run = RunRecord("r1", "Buffer the rivers", 1_700_000_000.0, 1_700_000_002.0, "finished")
    run.events = [(0.5, kind, data)]
    assert "| ✓ run_algorithm | 1.25 s · native:buffer finished. · added rivers_500m |" in format_runs([run])
