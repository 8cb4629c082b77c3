"""The Sources of an answer, from its tool calls' artifacts only (Qt-free)."""

from __future__ import annotations

import json

from geogpt_qgis.agent.transcript import Entry, to_markdown
from geogpt_qgis.core.artifacts import AddedLayer, Selection, ToolArtifact, ToolResult, algorithm_label, merged
from geogpt_qgis.core.sources import Sources, collect_sources, with_extras

BUFFER = algorithm_label("native:buffer", {"INPUT": "rivers", "DISTANCE": 500, "OUTPUT": "x"})
# (tool, ok, artifact) of one turn, in order
CALLS = [
    ("list_layers", True, ToolArtifact()),
    ("describe_layer", True, ToolArtifact(layers=("rivers",))),
    ("run_algorithm", True, ToolArtifact(layers=("rivers",), algorithm=BUFFER, added=(AddedLayer("rivers_500m"),))),
    (
        "run_algorithm",
        True,
        ToolArtifact(
            layers=("schools", "rivers_500m"),
            algorithm="native:extractbylocation (INPUT=schools, INTERSECT=rivers_500m)",
            added=(AddedLayer("schools_near", "schools_near_1a2b"),),
        ),
    ),
    ("describe_layer", False, ToolArtifact(layers=("parks",))),  # failed: not a source
    ("run_sql", True, ToolArtifact(tables=("public.districts (demo)", "roads (demo)"))),
    ("query_ogc_collection", True, ToolArtifact(collections=("hospitals (town)",), added=(AddedLayer("hospitals"),))),
    ("make_chart", True, ToolArtifact(layers=("schools_near",), chart="/tmp/c.png")),
]


def test_sources_name_exactly_what_the_calls_used():
    sources = collect_sources(artifact for _, ok, artifact in CALLS if ok)
    assert sources.layers == ["rivers", "schools"]  # made on the way: results, not sources
    assert sources.algorithms == [
        "native:buffer (INPUT=rivers, DISTANCE=500)",
        "native:extractbylocation (INPUT=schools, INTERSECT=rivers_500m)",
    ]
    assert sources.results == ["rivers_500m", "schools_near", "hospitals"]
    assert sources.tables == ["public.districts (demo)", "roads (demo)"]
    assert sources.collections == ["hospitals (town)"]
    assert sources.charts == ["/tmp/c.png"]
    assert Sources.from_dict(sources.to_dict()) == sources


def test_an_artifact_survives_json_and_anything_else_reads_as_empty():
    artifact = ToolArtifact(
        layers=("schools",),
        tables=("public.schools (demo)",),
        collections=("hospitals (town)",),
        algorithm=BUFFER,
        added=(AddedLayer("place_nordby", "id1"), AddedLayer("b")),
        selected=(Selection("schools", 16),),
        chart="/tmp/c.png",
    )
    stored = json.loads(json.dumps(artifact.to_dict()))
    assert ToolArtifact.from_dict(stored) == artifact
    assert ToolArtifact().to_dict() == {} and ToolArtifact.from_dict({}).empty
    # Stored before artifacts existed (None), or damaged: empty, never an error.
    for odd in (None, "text", [1, 2], {"layers": "schools", "added": ["x", {"name": 3}], "selected": 5}):
        assert ToolArtifact.from_dict(odd).layers == ()
    assert ToolArtifact.from_dict({"added": [{"name": "a"}]}).added_names == ["a"]
    assert ToolArtifact.from_dict({"selected": [{"layer": "a", "count": "many"}]}).selected == (Selection("a", 0),)


def test_a_tool_result_is_its_text_for_every_reader_and_carries_the_artifact():
    result = ToolResult("Selected 16 of 31 features in 'schools'", ToolArtifact(selected=(Selection("schools", 16),)))
    assert result == "Selected 16 of 31 features in 'schools'" and result.startswith("Selected 16")
    assert result.artifact.selected[0].count == 16 and type(result.text) is str
    assert ToolResult("plain").artifact.empty
    both = merged([ToolArtifact(layers=("a",), added=(AddedLayer("p"),)), ToolArtifact(layers=("a", "b"))])
    assert both.layers == ("a", "b") and both.added_names == ["p"]


def test_stored_turns_get_their_charts_and_sources_back():
    entries = [
        Entry("user", "q1"),
        *[Entry("tool", "…", name, {}, ok, f"id{i}", artifact) for i, (name, ok, artifact) in enumerate(CALLS)],
        Entry("answer", "done"),
        Entry("user", "q2"),
        Entry("tool", "an old result", "make_chart", {"data": "schools"}, True, "old"),  # stored before artifacts
        Entry("answer", "no artifacts, no sources"),
    ]
    shown = with_extras(entries)
    kinds = [e.kind for e in shown]
    assert kinds.count("chart") == 1 and kinds.count("sources") == 1
    assert kinds.index("chart") == kinds.index("tool") + len(CALLS)  # right after the make_chart step
    assert kinds.index("sources") == kinds.index("answer") + 1
    markdown = to_markdown("t", "", 0, shown)
    assert "![chart](</tmp/c.png>)" in markdown and "**Sources**" in markdown and "`native:buffer" in markdown
