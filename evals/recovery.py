"""Weak-model mistakes played through the whole agent: the mistake, the agent's answer, the call made from it.

The replays of ``evals.robustness`` check one call's reply.  These check the
loop a small model lives in: it sends a call as Gemma 3 270M or
SmolLM2-135M-Instruct really did (a layer name half remembered, a tool named
after what it wants, Python quotes, a call cut off, one tool's arguments sent
to another), the agent answers it with a tool message, and the next call is
made from that message alone (``Fix``: the name it suggests, the JSON it
gives back, the tool it says takes the arguments).  A recovery passes when the
answer names what was wrong and what is valid (``Task.correction``) and the
corrected call leads to the task's right answer, checked against the oracle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from evals.runner import EvalRunner, TaskResult
from evals.task import FEATURES, Call, Expected, Fix, LayerExpect, Reads, Task

LAYER_NAME = "made-up layer name"
UNKNOWN_TOOL = "tool that does not exist"
INVALID_JSON = "invalid JSON arguments"
OTHER_TOOL = "arguments of another tool"
ALGORITHM_NAME = "algorithm name instead of its id"
KINDS = (LAYER_NAME, UNKNOWN_TOOL, INVALID_JSON, OTHER_TOOL, ALGORITHM_NAME)


# -- reading a correction as a model would: only what it says --------------------------------------------------
def suggested_name(told: str) -> str:
    """The first name in quotes after "did you mean" (a layer, a field)."""
    return _found(r"did you mean '([^']+)'", told)


def suggested_tool(told: str) -> str:
    """The tool after "Did you mean" in the answer to an unknown tool."""
    return _found(r"Did you mean (\w+)\?", told)


def suggested_algorithm(told: str) -> str:
    """The first algorithm id after "did you mean"."""
    return _found(r"did you mean ([\w]+:[\w]+)", told)


def suggested_object(told: str, after: str) -> dict[str, Any]:
    """The JSON object the answer gives back after ``after`` (the call written right)."""
    start = told.index(after) + len(after)
    value, _ = json.JSONDecoder().raw_decode(told[start:].lstrip())
    if not isinstance(value, dict):
        raise ValueError(f"not an object after {after!r}: {value!r}")
    return value


def _found(pattern: str, told: str) -> str:
    match = re.search(pattern, told, re.IGNORECASE)
    if match is None:
        raise ValueError(f"{pattern!r} not in: {told[:200]}")
    return match.group(1)


def _tool_of(told: str) -> str:
    """The tool a "your X call" or "X has no argument" answer is about."""
    return _found(r"(?:your |^Error: )(\w+) (?:call|has no argument)", told)


# -- the answers, from the corrected call's result ----------------------------------------------------------------
def _fields(reads: Reads) -> str:
    names = [n for n in re.findall(r"^- (\w+) \(", reads.last, re.MULTILINE) if n != "fid"]
    return "The layer has these fields: " + ", ".join(names) + "."


def _schools_listed(reads: Reads) -> str:
    row = next(row for row in reads.table() if row["name"] == "schools")
    return f"There are **{row['features']} schools**."


def _crs(reads: Reads) -> str:
    return "The roads are in " + _found(r"CRS: (EPSG:\d+)", reads.last) + "."


def _features(what: str) -> Any:
    return lambda reads: f"There are {reads.number(FEATURES):.0f} {what}."


def _added(layer: str, what: str) -> Any:
    return lambda reads: f"Added **{layer}**: {reads.number(FEATURES):.0f} {what}."


def _buffered(layer: str, metres: float, segments: int) -> Any:
    return lambda o: Expected(
        numbers=[len(o.rows(layer))],
        layers={
            f"{layer}_{metres:g}m": LayerExpect(
                count=len(o.rows(layer)), area=sum(g.buffer(metres, segments).area for _, g in o.rows(layer))
            )
        },
    )


def _buffer_call(layer: str, metres: float, segments: int) -> dict[str, Any]:
    return {
        "algorithm": "native:buffer",
        "parameters": {"INPUT": layer, "DISTANCE": metres, "SEGMENTS": segments},
        "output_name": f"{layer}_{metres:g}m",
    }


def _with_input(call: dict[str, Any], layer: str) -> dict[str, Any]:
    return {**call, "parameters": {**call["parameters"], "INPUT": layer}}


def _centroids(algorithm: str) -> dict[str, Any]:
    return {"algorithm": algorithm, "parameters": {"INPUT": "parks"}, "output_name": "park_centres"}


RIVERS_BUFFER = _buffer_call("rivers", 500, 32)
HOSPITALS_BUFFER = _buffer_call("hospitals", 1000, 64)

RECOVERIES = [
    Task(
        "recover-layer-name",
        LAYER_NAME,
        "What fields does the schools layer have?",
        [
            [Call("describe_layer", {"layer": "school"})],
            Fix(lambda told: Call("describe_layer", {"layer": suggested_name(told)})),
            _fields,
        ],
        lambda o: Expected(words=o.fields("schools")),
        correction=("no layer 'school'", "did you mean 'schools'"),
    ),
    Task(
        "recover-layer-in-parameters",
        LAYER_NAME,
        "Buffer the rivers by 500 m.",
        [
            [Call("run_algorithm", _with_input(RIVERS_BUFFER, "river"))],
            Fix(lambda told: Call("run_algorithm", _with_input(RIVERS_BUFFER, suggested_name(told)))),
            _added("rivers_500m", "buffered rivers"),
        ],
        _buffered("rivers", 500, 32),
        correction=("INPUT: no layer 'river'", "did you mean 'rivers'"),
    ),
    Task(
        "recover-get-layers",
        UNKNOWN_TOOL,
        "How many schools are there?",
        [
            [Call("get_layers")],
            # The answer says what the tool does: without a layer it lists them, so it is called without one.
            Fix(lambda told: Call(suggested_tool(told), {})),
            _schools_listed,
        ],
        lambda o: Expected(numbers=[len(o.rows("schools"))]),
        correction=("no tool 'get_layers'", "did you mean describe_layer?", "no layer: list them"),
    ),
    Task(
        "recover-describe-layers",
        UNKNOWN_TOOL,
        "Which coordinate reference system is the roads layer in?",
        [
            [Call("describe_layers", {"layer": "roads"})],
            Fix(lambda told: Call(suggested_tool(told), {"layer": "roads"})),
            _crs,
        ],
        lambda o: Expected(words=[f"EPSG:{o.epsg('roads')}"]),
        correction=("no tool 'describe_layers'", "did you mean describe_layer?"),
    ),
    Task(
        "recover-single-quotes",
        INVALID_JSON,
        "What fields does the hospitals layer have?",
        [
            [Call("describe_layer", raw="{'layer': 'hospitals'}")],
            Fix(lambda told: Call(_tool_of(told), suggested_object(told, "double quotes:"))),
            _fields,
        ],
        lambda o: Expected(words=o.fields("hospitals")),
        correction=("describe_layer call are not valid JSON", 'JSON needs double quotes: {"layer": "hospitals"}'),
    ),
    Task(
        "recover-cut-off",
        INVALID_JSON,
        "How many land-use parcels are there?",
        [
            [Call("describe_layer", raw='{"layer": "landu')],
            # The answer names the tool and its parameters; the layer is the one the question names.
            Fix(lambda told: Call(_tool_of(told), {_found(r"parameters are: (\w+)", told): "landuse"})),
            _features("land-use parcels"),
        ],
        lambda o: Expected(numbers=[len(o.rows("landuse"))]),
        correction=("describe_layer call are not valid JSON", "cut off", "its parameters are: layer"),
    ),
    Task(
        "recover-other-tools-arguments",
        OTHER_TOOL,
        "Buffer the hospitals by 1 km.",
        [
            [Call("describe_layer", HOSPITALS_BUFFER)],
            Fix(lambda told: Call(_found(r"(\w+) takes them", told), HOSPITALS_BUFFER)),
            _added("hospitals_1000m", "hospital zones"),
        ],
        _buffered("hospitals", 1000, 64),
        correction=("describe_layer has no argument 'algorithm'", "valid arguments: layer", "run_algorithm takes them"),
    ),
    Task(
        "recover-parameters-at-top-level",
        OTHER_TOOL,
        "Make one town boundary polygon from the districts.",
        [
            [Call("run_algorithm", {"algorithm": "native:dissolve", "INPUT": "districts", "output_name": "town"})],
            Fix(lambda told: Call(_tool_of(told), suggested_object(told, "Did you mean"))),
            _added("town", "polygon"),
        ],
        lambda o: Expected(layers={"town": LayerExpect(count=1, area=o.union("districts").area)}),
        correction=("run_algorithm has no argument 'INPUT'", '"parameters": {"INPUT": "districts"}'),
    ),
    Task(
        "recover-algorithm-name",
        ALGORITHM_NAME,
        "Make a point at the centre of each park.",
        [
            [Call("run_algorithm", _centroids("centroid"))],
            Fix(lambda told: Call("run_algorithm", _centroids(suggested_algorithm(told)))),
            _added("park_centres", "park centres"),
        ],
        lambda o: Expected(
            numbers=[len(o.rows("parks"))], layers={"park_centres": LayerExpect(count=len(o.rows("parks")))}
        ),
        correction=("no algorithm 'centroid'", "did you mean native:centroids"),
    ),
]


def recover_all(runner: EvalRunner, only: str = "") -> list[TaskResult]:
    """Play every recovery whose id contains ``only`` through the whole agent."""
    return [runner.run(task) for task in RECOVERIES if only in task.id]


def summarise_recoveries(results: Sequence[TaskResult]) -> list[dict[str, Any]]:
    """Per recovery: the mistake's kind, what the agent answered, the call made from it, and why it failed."""
    by_id = {task.id: task for task in RECOVERIES}
    rows = []
    for result in results:
        task = by_id[result.id]
        mistake = task.steps[0][0] if isinstance(task.steps[0], list) else None
        rows.append(
            {
                "id": result.id,
                "kind": result.group,
                "mistake": _shown(mistake),
                "correction": result.correction,
                "passed": result.passed,
                "failures": result.failures,
            }
        )
    return rows


def _shown(call: Call | None) -> str:
    if call is None:
        return ""
    arguments = call.raw if call.raw is not None else json.dumps(call.args, ensure_ascii=False)
    return f"{call.name} {arguments}"


__all__ = ["KINDS", "RECOVERIES", "recover_all", "summarise_recoveries"]
