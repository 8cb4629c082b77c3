"""A multi-step analysis through the whole agent: real graph, real HTTP model client, real QGIS algorithms.

"Which schools lie within 500 m of a river? Count them per district." The
scripted model does what a competent model would: find the algorithms, buffer
the rivers, extract the schools, count them per district, read the counts,
and answer.  The answer's numbers and the final layer are checked against
shapely.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shapely.ops import unary_union

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.events import ToolProgress
from tests.support.big_layers import write_big_points
from tests.support.gpkg import read_layer
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import RunRecorder

QUESTION = "Which schools lie within 500 m of a river? Count them per district."


def expected_counts(gpkg: Path) -> dict[str, int]:
    rivers = unary_union([g for _, _, g in read_layer(gpkg, "rivers")])
    near = [point for _, _, point in read_layer(gpkg, "schools") if point.distance(rivers) <= 500]
    return {
        attrs["name"]: sum(polygon.intersects(p) for p in near) for _, attrs, polygon in read_layer(gpkg, "districts")
    }


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_schools_near_rivers_per_district(provider, model_server, worker, demo_project):
    gpkg = Path(demo_project.fileName()).with_name("elvbury.gpkg")
    counts = expected_counts(gpkg)
    with_schools = {name: n for name, n in counts.items() if n}
    total = sum(counts.values())
    answer_lines = "\n".join(
        f"| {name} | {n} |" for name, n in sorted(with_schools.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    answer = (
        f"**{total} schools** lie within 500 m of a river.\n\n| district | schools |\n|---|---|\n{answer_lines}\n\n"
        "I buffered the rivers by 500 m, extracted the schools inside the buffer and counted them per district."
    )
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("find_algorithm", {"query": "buffer"})]),
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {
                            "algorithm": "native:buffer",
                            "parameters": {"INPUT": "rivers", "DISTANCE": 500, "SEGMENTS": 32},
                            "output_name": "rivers_500m",
                        },
                    )
                ]
            ),
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {
                            "algorithm": "native:extractbylocation",
                            "parameters": {"INPUT": "schools", "PREDICATE": [0], "INTERSECT": "rivers_500m"},
                            "output_name": "schools_within_500m_of_rivers",
                        },
                    )
                ]
            ),
            Turn(tool_calls=[ToolCall("search_algorithms", {"query": "count points in polygons"})]),  # old name
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {
                            "algorithm": "native:countpointsinpolygon",
                            "parameters": {
                                "POLYGONS": "districts",
                                "POINTS": "schools_within_500m_of_rivers",
                                "FIELD": "schools_near_river",
                            },
                            "output_name": "districts_schools_near_rivers",
                        },
                    )
                ]
            ),
            Turn(
                tool_calls=[
                    ToolCall(
                        "read_features",
                        {
                            "layer": "districts_schools_near_rivers",
                            "fields": ["name", "schools_near_river"],
                            "expression": '"schools_near_river" > 0',
                        },
                    )
                ]
            ),
            Turn(text=answer),
        ]
    )
    recorder = RunRecorder(worker)
    base = model_server.url if provider == "ollama" else model_server.url + "/v1"
    run = worker.submit(QUESTION, ModelConfig(provider=provider, base_url=base, model="qwen3:8b", timeout=30))
    finished = recorder.wait(run, 60)
    assert finished.status == "finished", finished.error
    results = recorder.tool_results(run)
    assert [r.name for r in results] == [
        "find_algorithm",
        "run_algorithm",
        "run_algorithm",
        "search_algorithms",
        "run_algorithm",
        "read_features",
    ]
    assert all(r.ok for r in results), [r.result for r in results if not r.ok]
    assert results[0].result.startswith("native:buffer — Buffer")  # a bare name: described
    assert results[3].result.startswith("- native:countpointsinpolygon — ")  # words: searched

    # The final layer holds the right count for every district.
    final = demo_project.mapLayersByName("districts_schools_near_rivers")
    assert len(final) == 1
    assert {f["name"]: int(f["schools_near_river"]) for f in final[0].getFeatures()} == counts
    near = demo_project.mapLayersByName("schools_within_500m_of_rivers")[0]
    assert near.featureCount() == total

    # What the model read back carries the same numbers, and the answer streamed to the user.
    table = results[-1].result
    for name, n in with_schools.items():
        assert f"| {name} | {n} |" in table
    requests = model_server.chat_requests()
    assert f"| {next(iter(with_schools))} | {with_schools[next(iter(with_schools))]} |" in str(
        requests[-1].body["messages"][-1]
    )
    assert recorder.text(run) == answer
    assert "find_algorithm" in str(requests[0].body.get("tools"))
    assert "search_algorithms" not in str(requests[0].body.get("tools"))
    assert "find_algorithm (task, then id)" in requests[0].body["messages"][0]["content"]


def test_long_algorithms_report_progress_to_the_dock(model_server, worker, demo_project, tmp_path):
    from qgis.core import QgsVectorLayer

    big = QgsVectorLayer(f"{write_big_points(tmp_path / 'big.gpkg')}|layername=big", "big", "ogr")
    demo_project.addMapLayer(big)
    model_server.script(
        [
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm", {"algorithm": "native:buffer", "parameters": {"INPUT": "big", "DISTANCE": 2}}
                    )
                ]
            ),
            Turn(text="Buffered."),
        ]
    )
    recorder = RunRecorder(worker)
    run = worker.submit("buffer the big layer", ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=30))
    assert recorder.wait(run, 120).status == "finished"
    progress = [e.percent for e in recorder.of(run, ToolProgress)]
    assert len(progress) >= 3
    assert progress == sorted(progress)
    assert progress[-1] > 90
    assert demo_project.mapLayersByName("big_buffer_2m")[0].featureCount() == big.featureCount()
