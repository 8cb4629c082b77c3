"""Tool calls as weak local models really make them, replayed against the real tools.

Each replay is a call with one typical mistake and what the reply must name
for the model to fix it (or, for mistakes the tools can undo safely, such as
JSON sent as a string, that the call simply works).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals import recovery
from evals.recovery import ALGORITHM_NAME

KINDS = (
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
)


@dataclass(frozen=True)
class Replay:
    kind: str
    tool: str
    args: Any
    names: list[str] = field(default_factory=list)  # what the error must name; empty: the call must work
    note: str = ""  # for calls that work: what the result must say


COLOUR_NAME = "colour name instead of a hex code"


def _buffer(**parameters: Any) -> dict[str, Any]:
    return {"algorithm": "native:buffer", "parameters": parameters}


REPLAYS = [
    Replay(
        KINDS[0], "run_algorithm", {"algorithm": "native:bufer", "parameters": {"INPUT": "rivers"}}, ["native:buffer"]
    ),
    Replay(
        KINDS[0],
        "run_algorithm",
        {"algorithm": "native:extractbylocaton", "parameters": {"INPUT": "schools"}},
        ["native:extractbylocation"],
    ),
    Replay(KINDS[0], "find_algorithm", {"query": "buffer"}, [], note="native:buffer"),
    # SmolLM2-135M-Instruct's call under a JSON schema (issue 35): a title only one algorithm has is its id.
    Replay(
        ALGORITHM_NAME,
        "run_algorithm",
        {"algorithm": "buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100}},
        [],
        note="native:buffer finished",
    ),
    Replay(KINDS[0], "find_algorithm", {"query": "native:dissolv"}, ["native:dissolve"]),
    # The old name, as models taught on older transcripts call it (agent/aliases.py routes it).
    Replay(KINDS[0], "describe_algorithm", {"algorithm": "native:dissolv"}, ["native:dissolve"]),
    Replay(KINDS[1], "run_algorithm", _buffer(INPUT="rivers", DIST=100), ["DISTANCE"]),
    Replay(
        KINDS[1],
        "run_algorithm",
        {"algorithm": "native:clip", "parameters": {"INPUT": "roads", "MASK": "districts"}},
        ["OVERLAY"],
    ),
    Replay(
        KINDS[1],
        "run_algorithm",
        {
            "algorithm": "native:extractbylocation",
            "parameters": {"INPUT": "schools", "PREDICATE": [0], "OVERLAY": "rivers"},
        },
        ["INTERSECT"],
    ),
    Replay(
        KINDS[1],
        "run_algorithm",
        {"algorithm": "native:countpointsinpolygon", "parameters": {"POLYGONS": "districts", "INPUT": "schools"}},
        ["POINTS"],
    ),
    Replay(KINDS[2], "run_algorithm", _buffer(INPUT="rivers", DISTANCE="500 m"), ["DISTANCE=500"]),
    Replay(KINDS[2], "run_algorithm", _buffer(INPUT="rivers", DISTANCE="1 km"), ["DISTANCE=1000"]),
    Replay(KINDS[2], "run_algorithm", _buffer(INPUT="stations_wgs84", DISTANCE=500), [], note="metres"),
    Replay(KINDS[2], "run_algorithm", _buffer(INPUT="rivers", DISTANCE="0.5km"), ["DISTANCE=500"]),
    Replay(KINDS[3], "describe_layer", '{"layer": "schools"}', []),
    Replay(KINDS[3], "run_algorithm", {"algorithm": "native:centroids", "parameters": '{"INPUT": "parks"}'}, []),
    Replay(KINDS[3], "read_features", {"layer": "schools", "fields": '["name", "pupils"]', "limit": 3}, []),
    Replay(KINDS[4], "read_features", {}, ["layer"]),  # describe_layer without a layer lists them (no mistake)
    Replay(KINDS[4], "run_algorithm", {"algorithm": "native:buffer"}, ["parameters"]),
    Replay(KINDS[4], "run_algorithm", _buffer(DISTANCE=100), ["INPUT"]),
    Replay(KINDS[4], "select_features", {"layer": "schools"}, ["expression"]),
    Replay(
        KINDS[5],
        "run_algorithm",
        {"algorithm": "gdal:slope", "parameters": {"INPUT": "elevation", "BAND": 2}},
        ["BAND=2", "only band 1"],
    ),
    Replay(
        KINDS[5],
        "run_algorithm",
        {"algorithm": "native:zonalstatisticsfb", "parameters": {"INPUT": "districts", "INPUT_RASTER": "elevation"}},
        [],
        note="finished",
    ),
    Replay(KINDS[6], "run_algorithm", _buffer(INPUT="elevation", DISTANCE=100), ["INPUT", "raster"]),
    Replay(KINDS[6], "read_features", {"layer": "landcover"}, ["raster layer", "vector layer"]),
    Replay(KINDS[6], "describe_layer", {"layer": "schools", "at": "hospitals"}, ["vector layer", "raster layer"]),
    Replay(
        KINDS[7],
        "run_algorithm",
        {
            "algorithm": "native:reclassifybytable",
            "parameters": {
                "INPUT_RASTER": "landcover",
                "RASTER_BAND": 1,
                "TABLE": [3, 3, 1, "Farmland", "Farmland", 1],
            },
        },
        ["'farmland' is a class label", "code is 4"],
    ),
    Replay(
        KINDS[7],
        "run_algorithm",
        {
            "algorithm": "native:reclassifybytable",
            "parameters": {"INPUT_RASTER": "landcover", "RASTER_BAND": 1, "TABLE": ["Grass", "Grass", 1]},
        },
        ["'grass' is a class label", "code is 2"],
    ),
    Replay(KINDS[8], "label_layer", {"layer": "parks", "text": "park_name"}, ["did you mean 'name'"]),
    Replay(KINDS[8], "label_layer", {"layer": "parks", "text": '"name" || "area"'}, ["'area_ha'"]),
    Replay(KINDS[8], "style_layer", {"layer": "districts", "method": "quantile", "field": "pop"}, ["'population'"]),
    Replay(COLOUR_NAME, "style_layer", {"layer": "parks", "color": "forest green"}, [], note="#228b22"),
    Replay(COLOUR_NAME, "style_layer", {"layer": "parks", "color": "grass"}, ["not a colour", "'#1f78b4'"]),
    Replay(
        "number of classes as text",
        "style_layer",
        {"layer": "districts", "method": "quantile", "field": "population", "classes": "5 classes"},
        ["'classes'", "valid integer"],
    ),
    Replay(
        "number of classes as text",
        "style_layer",
        {"layer": "districts", "method": "jenks", "field": "population", "classes": "5"},
        [],
        note="5 Jenks classes",
    ),
    Replay(
        "colour ramp that does not exist",
        "style_layer",
        {"layer": "districts", "method": "quantile", "field": "population", "color": "viridian"},
        ["did you mean 'Viridis'"],
    ),
    Replay(
        "colour ramp that does not exist",
        "style_layer",
        {"layer": "elevation", "method": "pseudocolor", "color": "terrain"},
        ["no colour ramp 'terrain'", "Spectral"],
    ),
    Replay(
        "numeric style on a text field",
        "style_layer",
        {"layer": "districts", "method": "jenks", "field": "name"},
        ["not numeric", "numeric fields: population"],
    ),
    Replay(  # SmolLM2-135M, guided, four times over: the example's expression as it was shown
        "a worked example's placeholder copied",
        "select_features",
        {"layer": "schools", "expression": "\"<field>\" = '<value>'"},
        ["placeholder", "'type'", "'pupils'"],
    ),
]


@dataclass
class ReplayResult:
    kind: str
    tool: str
    fixed: bool
    reply: str


def judge(replay: Replay, ok: bool, text: str) -> bool:
    if not replay.names:
        return ok and replay.note.lower() in text.lower()
    return not ok and all(name.lower() in text.lower() for name in replay.names)


def add_degree_layer(project: Any) -> None:
    """A point layer in EPSG:4326, for buffering "500" meant as metres."""
    from qgis.core import QgsFeature, QgsGeometry, QgsPointXY, QgsVectorLayer

    layer = QgsVectorLayer("Point?crs=EPSG:4326", "stations_wgs84", "memory")
    feature = QgsFeature()
    feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(9.0, 55.9)))
    layer.dataProvider().addFeatures([feature])
    project.addMapLayer(layer)


def replay_all(toolkit: Any, call_in_thread: Any) -> list[ReplayResult]:
    results = []
    for replay in REPLAYS:
        outcome = call_in_thread(lambda r=replay: asyncio.run(toolkit.run(r.tool, r.args)), timeout=120)
        results.append(ReplayResult(replay.kind, replay.tool, judge(replay, outcome.ok, outcome.text), outcome.text))
    return results


def summarise_replays(results: list[ReplayResult], recoveries: Sequence[Any] = ()) -> dict[str, Any]:
    """The replays and the recoveries played through the agent (``evals.recovery``), counted by kind."""
    by_id = {task.id: task for task in recovery.RECOVERIES}
    results = [
        *results,
        *(
            ReplayResult(
                r.group, _first_tool(by_id[r.id]), r.passed, r.correction if r.passed else "; ".join(r.failures)
            )
            for r in recoveries
        ),
    ]
    kinds = {}
    for kind in dict.fromkeys([*KINDS, *recovery.KINDS]):
        mine = [r for r in results if r.kind == kind]
        kinds[kind] = {"replays": len(mine), "fixed": sum(r.fixed for r in mine)}
    return {
        "replays": len(results),
        "fixed": sum(r.fixed for r in results),
        "kinds": kinds,
        "not_fixed": [{"kind": r.kind, "tool": r.tool, "reply": r.reply[:300]} for r in results if not r.fixed],
        "recoveries": recovery.summarise_recoveries(recoveries),
    }


def _first_tool(task: Any) -> str:
    first = task.steps[0]
    return first[0].name if isinstance(first, list) and first else ""
