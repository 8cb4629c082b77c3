"""The Sources of an answer, from its tool calls only (Qt-free)."""

from __future__ import annotations

from geogpt_qgis.agent.transcript import Entry, to_markdown
from geogpt_qgis.core.sources import CHART_PREFIX, ToolCallRecord, chart_path, collect_sources, with_extras

CALLS = [
    ToolCallRecord("list_layers", {}, True, "7 layers"),
    ToolCallRecord("search_algorithms", {"query": "buffer"}, True, "- native:buffer"),
    ToolCallRecord("describe_layer", {"layer": "rivers"}, True, "Layer 'rivers'"),
    ToolCallRecord(
        "run_algorithm",
        {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 500, "OUTPUT": "x"}},
        True,
        "native:buffer finished.\nOUTPUT: added layer 'rivers_500m': Polygon, 2 features",
    ),
    ToolCallRecord(
        "run_algorithm",
        {"algorithm": "native:extractbylocation", "parameters": {"INPUT": "schools", "INTERSECT": "rivers_500m"}},
        True,
        "OUTPUT: added layer 'schools_near': Point, 9 features",
    ),
    ToolCallRecord("describe_layer", {"layer": "parks"}, False, "Error: no layer"),  # failed: not a source
    ToolCallRecord(
        "run_sql",
        {"connection": "demo", "sql": 'SELECT * FROM public.districts d JOIN "roads" r ON 1=1'},
        True,
        "9 rows",
    ),
    ToolCallRecord(
        "query_ogc_collection", {"collection": "hospitals", "server": "town"}, True, "Added layer 'hospitals'"
    ),
    ToolCallRecord(
        "make_chart", {"data": "schools_near", "kind": "bar", "x": "district"}, True, f"{CHART_PREFIX}/tmp/c.png\n…"
    ),
]


def test_sources_name_exactly_what_the_calls_used():
    sources = collect_sources(CALLS)
    assert sources.layers == ["rivers", "schools"]
    assert sources.algorithms == [
        "native:buffer (INPUT=rivers, DISTANCE=500)",
        "native:extractbylocation (INPUT=schools, INTERSECT=rivers_500m)",
    ]
    assert sources.results == ["rivers_500m", "schools_near", "hospitals"]
    assert sources.tables == ["public.districts (demo)", "roads (demo)"]
    assert sources.collections == ["hospitals (town)"]
    assert sources.charts == ["/tmp/c.png"]
    assert chart_path("no chart") is None


def test_stored_turns_get_their_charts_and_sources_back():
    entries = [
        Entry("user", "q1"),
        *[Entry("tool", c.result, c.name, c.args, c.ok, f"id{i}") for i, c in enumerate(CALLS)],
        Entry("answer", "done"),
        Entry("user", "q2"),
        Entry("answer", "no tools, no sources"),
    ]
    shown = with_extras(entries)
    kinds = [e.kind for e in shown]
    assert kinds.count("chart") == 1 and kinds.count("sources") == 1
    assert kinds.index("chart") == kinds.index("tool") + len(CALLS)  # right after the make_chart step
    assert kinds.index("sources") == kinds.index("answer") + 1
    markdown = to_markdown("t", "", 0, shown)
    assert "![chart](</tmp/c.png>)" in markdown and "**Sources**" in markdown and "`native:buffer" in markdown
