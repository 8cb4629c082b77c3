"""Play each task through the whole agent and score it; collect calls and prompt sizes per model call."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evals.oracle import Oracle
from evals.task import GROUPS, Call, Expected, Fix, LayerExpect, Reads, Task
from harness.model_server import ScriptedModelServer, ToolCall, Turn

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass
class TaskResult:
    id: str
    group: str
    passed: bool
    failures: list[str] = field(default_factory=list)
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    seconds: float = 0.0
    prompt: list[dict[str, int]] = field(default_factory=list)  # per model call: system, tools, history, total
    correction: str = ""  # what the agent answered a task's deliberate mistake with (``Task.correction``)


def script_for(task: Task) -> Any:
    """The scripted model: each request gets the next step; answers are written from the tool results read."""
    steps = list(task.steps)
    counter = itertools.count()

    def next_turn(body: dict[str, Any]) -> Turn:
        if not steps:
            return Turn(text="(the trace has ended)")
        step = steps.pop(0)
        results = [str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "tool"]
        if isinstance(step, Fix):
            try:
                step = [step.make(results[-1])]
            except (ValueError, KeyError, IndexError, AttributeError) as exc:
                return Turn(text=f"(could not make a call from the answer: {type(exc).__name__}: {exc})")
        if isinstance(step, list):
            return Turn(tool_calls=[_tool_call(c, f"call_{next(counter)}") for c in step])
        try:
            return Turn(text=step(Reads(results)))
        except (ValueError, KeyError, IndexError, StopIteration, AttributeError) as exc:
            return Turn(text=f"(could not read the tool results: {type(exc).__name__}: {exc})")

    return next_turn


def _tool_call(call: Call, call_id: str) -> ToolCall:
    """``call`` as the model sends it; raw arguments travel as one JSON text, as small models' templates send them."""
    if call.raw is not None:
        return ToolCall(call.name, raw_arguments=call.raw, ollama_string=True, call_id=call_id)
    return ToolCall(call.name, dict(call.args), call_id=call_id)


def correction_failures(answer: str, ok: bool, names: tuple[str, ...]) -> list[str]:
    """Why the answer to a deliberate mistake is not a usable correction (empty: it is)."""
    if ok:
        return ["the mistaken call was not refused"]
    lowered = answer.lower()
    return [f"the correction does not name {name!r}: {answer[:300]}" for name in names if name.lower() not in lowered]


def prompt_sizes(body: dict[str, Any], count: Any) -> dict[str, int]:
    """Tokens of one request: the system prompt, the tool schemas and the rest (history and the new message)."""
    messages = body.get("messages", [])
    system = sum(count(str(m.get("content", ""))) for m in messages if m.get("role") == "system")
    history = sum(count(json.dumps(m, ensure_ascii=False)) for m in messages if m.get("role") != "system")
    tools = count(json.dumps(body.get("tools", []), ensure_ascii=False))
    return {"system": system, "tools": tools, "history": history, "total": system + tools + history}


def answer_numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(text)]


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= max(tolerance * abs(b), 1e-6)


def check_answer(answer: str, expected: Expected) -> list[str]:
    failures = []
    found = answer_numbers(answer)
    for number in expected.numbers:
        if not any(_close(n, float(number), expected.tolerance) for n in found):
            failures.append(
                f"the answer lacks {number:g} (it has {', '.join(f'{n:g}' for n in found) or 'no numbers'})"
            )
    lowered = answer.lower()
    failures += [f"the answer does not mention {word!r}" for word in expected.words if word.lower() not in lowered]
    return failures


def _read_facts(layer: Any) -> str:
    """Whether a short read is the file's or the reading's: the table's rows by SQLite, a second read, the source."""
    import contextlib
    import sqlite3

    from qgis.core import QgsProviderRegistry

    from geogpt_qgis.core.sqlite_text import sqlite_query

    facts = [f"valid={layer.isValid()}", f"featureCount={layer.featureCount()}"]
    facts.append(f"read again={sum(1 for _ in layer.getFeatures())}")
    parts = QgsProviderRegistry.instance().decodeUri(layer.providerType(), layer.source())
    path, table = str(parts.get("path") or ""), str(parts.get("layerName") or "")
    if path.endswith(".gpkg") and table:
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                (rows,) = db.execute(sqlite_query("SELECT count(*) FROM {}", table)).fetchone()
            facts.append(f"SQLite rows={rows}")
        except sqlite3.Error as exc:
            facts.append(f"SQLite: {exc}")
    return ", ".join([*facts, f"source={layer.source()}"])


def check_layer(name: str, layer: Any, want: LayerExpect) -> list[str]:
    failures = []
    features = list(layer.getFeatures())
    if want.count is not None and len(features) != want.count:
        failures.append(f"layer {name!r} has {len(features)} features, expected {want.count} ({_read_facts(layer)})")
    if want.area is not None:
        area = sum(f.geometry().area() for f in features)
        if not _close(area, want.area, want.tolerance):
            failures.append(f"layer {name!r} covers {area:,.0f} m², expected {want.area:,.0f} m²")
    if want.length is not None:
        length = sum(f.geometry().length() for f in features)
        if not _close(length, want.length, want.tolerance):
            failures.append(f"layer {name!r} is {length:,.1f} m long, expected {want.length:,.1f} m")
    if want.values is not None:
        key, value, expected = want.values
        # The question names no field (the scripted run's "n"): a field of the model's own naming that holds
        # exactly the expected values does the task.
        names = layer.fields().names()
        field = (
            value
            if value in names
            else next((n for n in names if n != key and not _misses(features, key, n, expected, want)), None)
        )
        if field is None:
            return [*failures, f"layer {name!r} has no field {value!r}, nor another holding its values"]
        for k, got, v in _misses(features, key, field, expected, want):
            failures.append(f"layer {name!r}: {key}={k!r} has {field}={got!r}, expected {v!r}")
    return failures


def _misses(
    features: list[Any], key: str, field: str, expected: dict[Any, Any], want: LayerExpect
) -> list[tuple[Any, Any, Any]]:
    """``(key value, found, expected)`` for each expected value ``field`` does not hold."""
    actual = {f[key]: f[field] for f in features}
    return [(k, actual.get(k), v) for k, v in expected.items() if not _matches(actual.get(k), v, want.tolerance)]


def _matches(got: Any, want: Any, tolerance: float) -> bool:
    if got is None:
        return False
    if isinstance(want, (int, float)):
        try:
            return _close(float(got), float(want), tolerance)
        except (TypeError, ValueError):
            return False
    return str(got) == str(want)


def reported_layers(project: Any, results: list[Any]) -> dict[str, Any]:
    """The layers the task's tool calls report adding (their artifacts), by name: the project's layer, or None."""
    reported: dict[str, Any] = {}
    for result in results:
        for added in result.artifact.added if result.ok else ():
            layer = project.mapLayer(added.layer_id) if added.layer_id else None
            reported[added.name] = layer or next(iter(project.mapLayersByName(added.name)), None)
    return reported


class EvalRunner:
    """Runs tasks in one QGIS: a fresh copy of the demo project and a fresh agent per task."""

    def __init__(
        self, workdir: Path, server: ScriptedModelServer, oracle: Oracle, ctx_factory: Any, count_tokens: Any
    ) -> None:
        self.workdir = workdir
        self.server = server
        self.oracle = oracle
        self.ctx_factory = ctx_factory  # project -> ToolContext
        self.count = count_tokens

    def run(self, task: Task) -> TaskResult:
        from qgis.core import QgsProject

        from geogpt_qgis.agent.config import ModelConfig
        from geogpt_qgis.agent.conversation import Conversation
        from harness.demo import copy_demo
        from harness.runs import RunRecorder

        folder = self.workdir / task.id
        shutil.rmtree(folder, ignore_errors=True)
        project = QgsProject.instance()
        project.clear()
        if not project.read(str(copy_demo(folder))):
            return TaskResult(task.id, task.group, False, [f"the demo project did not open: {project.error()}"])
        before = {layer.name() for layer in project.mapLayers().values()}
        expected = task.expect(self.oracle)
        worker = Conversation(self.ctx_factory(project), store_path=folder / "store.sqlite")
        recorder = RunRecorder(worker)
        first_request = len(self.server.chat_requests())
        self.server.script(script_for(task))
        started = time.monotonic()
        try:
            run = worker.submit(
                task.question,
                ModelConfig(model="qwen3:8b", base_url=self.server.url, timeout=60, max_steps=15),
                task.policy,
            )
            finished = recorder.wait(run, 180)
        finally:
            seconds = time.monotonic() - started
            worker.shutdown()
        requests = self.server.chat_requests()[first_request:]
        results = recorder.tool_results(run)
        outcome = TaskResult(
            task.id,
            task.group,
            False,
            model_calls=len(requests),
            tool_calls=len(results),
            tool_errors=sum(not r.ok for r in results),
            seconds=round(seconds, 2),
            prompt=[prompt_sizes(r.body, self.count) for r in requests],
        )
        failures = []
        if finished.status != "finished":
            failures.append(f"the run {finished.status}: {finished.error}")
        if task.correction:  # the model read the answer to its mistake in the next request, as a tool message
            told = requests[1].tool_messages() if len(requests) > 1 else []
            outcome.correction = str(told[-1].get("content", "")) if told else ""
            failures += correction_failures(outcome.correction, bool(results) and results[0].ok, task.correction)
            results = results[1:]
        failures += [f"{r.name} failed: {r.result[:200]}" for r in results if not r.ok]
        failures += check_answer(recorder.text(run), expected)
        added = reported_layers(project, results)
        new = [layer.name() for layer in project.mapLayers().values() if layer.name() not in before]
        unreported = [name for name in new if name not in added]
        if unreported:
            failures.append(f"layers were added that no tool result reports: {', '.join(unreported)}")
        for name, want in expected.layers.items():
            if name not in added:
                failures.append(f"no layer {name!r} was added (added: {', '.join(added) or 'none'})")
            elif added[name] is None:
                failures.append(f"layer {name!r} was reported added but is not in the project")
            else:
                failures += check_layer(name, added[name], want)
        if expected.no_new_layers and (added or new):
            failures.append(f"layers were added where none should be: {', '.join(dict.fromkeys([*added, *new]))}")
        for check in expected.project:
            failures += check(project)
        outcome.failures = failures
        outcome.passed = not failures
        project.clear()
        return outcome


def summarise(results: list[TaskResult]) -> dict[str, Any]:
    """Pass rate per group and overall, the failures, and the cost of each task."""
    groups = {}
    for group in GROUPS:
        mine = [r for r in results if r.group == group]
        if mine:
            groups[group] = {"tasks": len(mine), "passed": sum(r.passed for r in mine)}
            groups[group]["pass_rate"] = round(groups[group]["passed"] / len(mine), 3)
    largest = max((p for r in results for p in r.prompt), key=lambda p: p["total"], default=None)
    return {
        "tasks": len(results),
        "passed": sum(r.passed for r in results),
        "pass_rate": round(sum(r.passed for r in results) / len(results), 3) if results else 0.0,
        "groups": groups,
        "failures": {r.id: r.failures for r in results if not r.passed},
        "largest_prompt": largest,
        "per_task": [
            {k: v for k, v in asdict(r).items() if k != "failures"}
            | {"largest_prompt": max((p["total"] for p in r.prompt), default=0)}
            for r in results
        ],
    }


__all__ = ["Call", "EvalRunner", "TaskResult", "summarise"]
