"""A stored conversation as the user saw it, and as a Markdown document."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from geogpt_qgis.agent.memory import KIND, RETRY_NOTE, STATE_NOTE
from geogpt_qgis.agent.transcript import Entry, to_markdown, transcript
from geogpt_qgis.core.artifacts import AddedLayer, ToolArtifact

CALL = {"name": "run_pyqgis", "args": {"code": "print('```')"}, "id": "c1"}
MESSAGES = [
    SystemMessage(
        content="Since your last answer, the user added layer 'wells'.", additional_kwargs={KIND: STATE_NOTE}
    ),
    HumanMessage(content="How many wells?"),
    AIMessage(content="<think>count them</think>", tool_calls=[CALL]),
    ToolMessage(content="Output:\n```\n", tool_call_id="c1"),
    HumanMessage(content="Your last tool call could not be parsed", additional_kwargs={KIND: RETRY_NOTE}),
    AIMessage(content="There are **3** wells.", additional_kwargs={"reasoning_content": "easy"}),
    HumanMessage(content="thanks"),
    AIMessage(content="", tool_calls=[{"name": "list_layers", "args": {}, "id": "c2"}]),
]


def test_the_transcript_keeps_what_the_user_saw():
    entries = transcript(MESSAGES)
    assert entries == [
        Entry("note", "Since your last answer, the user added layer 'wells'."),
        Entry("user", "How many wells?"),
        Entry("reasoning", "count them"),
        Entry("tool", "Output:\n```\n", "run_pyqgis", {"code": "print('```')"}, True, "c1"),
        Entry("reasoning", "easy"),
        Entry("answer", "There are **3** wells."),
        Entry("user", "thanks"),
        Entry("tool", "(no result: the run was stopped)", "list_layers", {}, False, "c2"),
    ]


def test_markdown_export_fences_cannot_be_broken_by_results():
    markdown = to_markdown("Wells", "/data/town.qgz", 0.0, transcript(MESSAGES))
    assert markdown.startswith("# Wells\n\n*GeoGPT conversation, ")
    assert "project `/data/town.qgz`*" in markdown
    assert "## You\n\nHow many wells?" in markdown
    assert "**Tool `run_pyqgis`** ✓" in markdown
    assert "````\nOutput:\n```\n\n````" in markdown  # a longer fence around a result holding one
    assert "## GeoGPT\n\nThere are **3** wells." in markdown
    assert "> *Since your last answer, the user added layer 'wells'.*" in markdown
    assert "**Tool `list_layers`** ✗" in markdown
    assert "could not be parsed" not in markdown


def test_tool_entries_carry_the_stored_artifact_and_older_results_read_without_one():
    stored = {"layers": ["schools"], "added": [{"name": "schools_500m", "layer_id": "l1"}]}
    messages = [
        HumanMessage(content="Buffer the schools"),
        AIMessage(content="", tool_calls=[{"name": "run_algorithm", "args": {}, "id": "a"}, CALL]),
        ToolMessage(content="native:buffer finished.", tool_call_id="a", artifact=stored),
        ToolMessage(content="Output: 3", tool_call_id="c1"),  # stored before tool results had artifacts
    ]
    new, old = (e for e in transcript(messages) if e.kind == "tool")
    assert new.artifact == ToolArtifact(layers=("schools",), added=(AddedLayer("schools_500m", "l1"),))
    assert old.artifact.empty and old.text == "Output: 3" and old.ok
