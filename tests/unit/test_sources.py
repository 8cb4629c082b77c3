"""The Sources of an answer, from its tool calls' artifacts only; artifacts typed, stored and read back (Qt-free)."""

from __future__ import annotations

import json

import pytest

from geogpt_qgis.agent.transcript import Entry, to_markdown
from geogpt_qgis.core.artifacts import (
    AddedLayer,
    AlgorithmRun,
    CollectionRef,
    LayerRef,
    Selection,
    TableRef,
    ToolArtifact,
    ToolResult,
    content_and_artifact,
    merged,
)
from geogpt_qgis.core.figures import Figure
from geogpt_qgis.core.sources import Sources, collect_sources, with_extras

BUFFER = AlgorithmRun("native:buffer", {"INPUT": "rivers", "DISTANCE": 500, "OUTPUT": "x"})
RIVERS = LayerRef("rivers", "rivers_1a")
# (tool, ok, artifact) of one turn, in order
CALLS = [
    ("list_layers", True, ToolArtifact()),
    ("describe_layer", True, ToolArtifact(layers=(RIVERS,))),
    ("run_algorithm", True, ToolArtifact(layers=(RIVERS,), algorithm=BUFFER, added=(AddedLayer("rivers_500m", "b1"),))),
    (
        "run_algorithm",
        True,
        ToolArtifact(
            layers=(LayerRef("schools", "schools_2c"), LayerRef("rivers_500m", "b1")),
            algorithm=AlgorithmRun("native:extractbylocation", {"INPUT": "schools", "INTERSECT": "rivers_500m"}),
            added=(AddedLayer("schools_near", "schools_near_1a2b"),),
        ),
    ),
    ("describe_layer", False, ToolArtifact(layers=(LayerRef("parks", "p"),))),  # failed: not a source
    (
        "run_sql",
        True,
        ToolArtifact(tables=(TableRef("demo", "public", "districts"), TableRef("demo", "", "roads"))),
    ),
    (
        "query_ogc_collection",
        True,
        ToolArtifact(
            collections=(CollectionRef("town", "hospitals", "http://t/"),), added=(AddedLayer("hospitals", "h9"),)
        ),
    ),
    ("make_chart", True, ToolArtifact(layers=(LayerRef("schools_near", "schools_near_1a2b"),), chart="/tmp/c.png")),
]


def test_sources_name_exactly_what_the_calls_used():
    sources = collect_sources(artifact for _, ok, artifact in CALLS if ok)
    assert sources.layer_names == ["rivers", "schools"]  # made on the way: results, not sources
    assert sources.layers[0] == RIVERS
    assert sources.algorithms == [
        "native:buffer (INPUT=rivers, DISTANCE=500)",
        "native:extractbylocation (INPUT=schools, INTERSECT=rivers_500m)",
    ]
    assert sources.result_names == ["rivers_500m", "schools_near", "hospitals"]
    assert [layer.layer_id for layer in sources.results] == ["b1", "schools_near_1a2b", "h9"]
    assert sources.tables == ["public.districts (demo)", "roads (demo)"]
    assert sources.collections == ["hospitals (town)"]
    assert sources.charts == ["/tmp/c.png"]
    assert Sources.from_dict(json.loads(json.dumps(sources.to_dict()))) == sources


def test_two_layers_of_one_name_stay_two_sources():
    first, second = LayerRef("buffer", "buffer_a1"), LayerRef("buffer", "buffer_b2")
    sources = collect_sources(
        [
            ToolArtifact(layers=(first,)),
            ToolArtifact(layers=(second, first)),
            ToolArtifact(added=(LayerRef("made", "m1"),)),
            ToolArtifact(layers=(LayerRef("made", "m2"),)),  # another layer that happens to be named "made": read
        ]
    )
    assert sources.layers == [first, second, LayerRef("made", "m2")]
    assert sources.results == [LayerRef("made", "m1")]


def test_sources_stored_with_bare_layer_names_read_without_ids():
    old = {"layers": ["rivers"], "results": ["rivers_500m"], "algorithms": ["native:buffer (INPUT=rivers)"]}
    sources = Sources.from_dict(old)
    assert sources.layers == [LayerRef("rivers")] and sources.results == [LayerRef("rivers_500m")]
    assert sources.algorithms == ["native:buffer (INPUT=rivers)"] and sources.files == []


def test_an_artifact_survives_json_and_anything_else_reads_as_empty():
    artifact = ToolArtifact(
        layers=(LayerRef("schools", "schools_2c"),),
        tables=(TableRef("demo", "public", "schools"),),
        collections=(CollectionRef("town", "hospitals", "http://127.0.0.1:5000/"),),
        algorithm=AlgorithmRun("native:buffer", {"INPUT": "rivers", "DISTANCE": 500, "FIELDS": ["a", "b"]}),
        added=(AddedLayer("place_nordby", "id1"), AddedLayer("b")),
        selected=(Selection("schools", 16),),
        chart="/tmp/c.png",
        files=("/tmp/map.pdf",),
        figures=(Figure("area of 'parcels'", 92903.0, "m²", "ellipsoidal on GRS 1980"),),
    )
    stored = json.loads(json.dumps(artifact.to_dict()))
    assert ToolArtifact.from_dict(stored) == artifact
    assert stored["tables"] == [{"connection": "demo", "schema": "public", "table": "schools"}]
    assert stored["algorithm"] == {
        "id": "native:buffer",
        "parameters": {"INPUT": "rivers", "DISTANCE": 500, "FIELDS": ["a", "b"]},
    }
    assert stored["layers"] == [{"name": "schools", "layer_id": "schools_2c"}]
    assert stored["collections"] == [{"server": "town", "collection": "hospitals", "url": "http://127.0.0.1:5000/"}]
    assert ToolArtifact().to_dict() == {} and ToolArtifact.from_dict({}).empty
    # Stored before artifacts existed (None), or damaged: empty, never an error.
    for odd in (None, "text", [1, 2], {"layers": "schools", "added": ["x", {"name": 3}], "selected": 5}):
        assert ToolArtifact.from_dict(odd).layers == ()
    assert ToolArtifact.from_dict({"added": [{"name": "a"}]}).added_names == ["a"]
    assert ToolArtifact.from_dict({"selected": [{"layer": "a", "count": "many"}]}).selected == (Selection("a", 0),)
    assert ToolArtifact.from_dict({"algorithm": {"parameters": {}}}).algorithm is None  # no id: no run


def test_an_artifact_stored_with_display_strings_reads_into_the_structured_fields():
    # As conversations stored them before tables, runs and read layers were structured (issue 32).
    legacy = {
        "layers": ["schools", "rivers_500m"],
        "tables": ["public.districts (demo)", "roads (demo)", "lonely"],
        "collections": ["hospitals (town)"],
        "algorithm": "native:buffer (INPUT=rivers, DISTANCE=500, SEGMENTS=16)",
        "added": [{"name": "rivers_500m", "layer_id": "b1"}, {"name": "old"}],
        "selected": [{"layer": "schools", "count": 3}],
        "chart": "/tmp/c.png",
    }
    artifact = ToolArtifact.from_dict(legacy)
    assert artifact.layers == (LayerRef("schools"), LayerRef("rivers_500m"))
    assert artifact.tables == (
        TableRef("demo", "public", "districts"),
        TableRef("demo", "", "roads"),
        TableRef("", "", "lonely"),
    )
    assert artifact.table_labels == ("public.districts (demo)", "roads (demo)", "lonely")
    assert artifact.collections == (CollectionRef("town", "hospitals"),)
    assert artifact.collection_labels == ("hospitals (town)",)
    assert artifact.algorithm == AlgorithmRun("native:buffer", {"INPUT": "rivers", "DISTANCE": "500", "SEGMENTS": "16"})
    assert artifact.algorithm is not None and artifact.algorithm.label == legacy["algorithm"]
    assert artifact.added == (AddedLayer("rivers_500m", "b1"), AddedLayer("old"))
    assert ToolArtifact.from_dict(artifact.to_dict()) == artifact  # and written back in the new form
    # A legacy turn's Sources list reads as it did: the labels it showed, the made layer not a source.
    sources = collect_sources([artifact])
    assert sources.layer_names == ["schools"] and sources.result_names == ["rivers_500m", "old"]
    assert sources.algorithms == [legacy["algorithm"]] and sources.tables == list(artifact.table_labels)
    assert sources.collections == ["hospitals (town)"]
    assert CollectionRef.from_label("no server") == CollectionRef("", "no server")
    assert AlgorithmRun.from_label("qgis:odd").parameters == {}


def test_an_algorithm_run_keeps_what_the_model_set_without_outputs():
    run = AlgorithmRun("native:buffer", {"INPUT": "rivers", "OUTPUT": "TEMPORARY_OUTPUT", "OUTPUT_2": "/x"})
    assert dict(run.parameters) == {"INPUT": "rivers"} and run.label == "native:buffer (INPUT=rivers)"
    with pytest.raises(TypeError):
        run.parameters["INPUT"] = "other"  # type: ignore[index]
    assert hash(ToolArtifact(algorithm=run)) == hash(ToolArtifact(algorithm=run))  # artifacts stay hashable


def test_a_tool_result_holds_its_text_and_artifact_apart():
    result = ToolResult("Selected 16 of 31 features in 'schools'", ToolArtifact(selected=(Selection("schools", 16),)))
    assert result.text == "Selected 16 of 31 features in 'schools'" and type(result.text) is str
    assert result.artifact.selected[0].count == 16
    assert content_and_artifact(result) == (result.text, result.artifact)
    assert content_and_artifact("a test's stand-in") == ("a test's stand-in", ToolArtifact())
    with pytest.raises(TypeError):
        content_and_artifact(None)  # type: ignore[arg-type]
    noted = result.with_text(result.text + "\nNote: x")
    assert noted.artifact is result.artifact and noted.text.endswith("Note: x")
    with pytest.raises(TypeError):
        result + "more"  # type: ignore[operator]  # the str subclass it was returned a str without the artifact
    with pytest.raises(TypeError):
        ToolResult(result)  # type: ignore[arg-type]
    assert ToolResult("plain").artifact.empty
    both = merged(
        [ToolArtifact(layers=(RIVERS,), added=(AddedLayer("p"),)), ToolArtifact(layers=(RIVERS, LayerRef("b")))]
    )
    assert both.layers == (RIVERS, LayerRef("b")) and both.added_names == ["p"]


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
