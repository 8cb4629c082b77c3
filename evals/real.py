"""``python -m evals.real`` (``make eval-real``): the inspection and single-algorithm tasks with a real small model.

The scripted suite (``make eval``) shows what the agent does when the model
works as a competent one would; this shows what a real weak local model makes
of the same questions, so that prompt and schema changes can be judged on one.
The model is Gemma 3 270M (Q4_K_M) served by llama-cpp-python's OpenAI-compatible
server with ``--chat_format gemma`` (tests/support/llama_server.py; ``make llama``
builds it), through the whole agent exactly as a user would configure it: no
request is edited.  Each task is scored as in ``make eval`` (numbers and words
of the answer, layers added).  Not a gate: it prints the pass rate and every
failure, and writes evals/results-real.json.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, headless_qgis

ANSWER_TOKENS = 256  # a bound on each answer, so a looping model costs seconds, not minutes
MAX_STEPS = 6


def run_task(task: Any, server: Any, oracle: Any, workdir: Path, bridge: Any) -> dict[str, Any]:
    from qgis.core import QgsProject

    from evals.runner import check_answer, check_layer
    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.conversation import Conversation
    from geogpt_qgis.tools.base import ToolContext
    from tests.support.demo import copy_demo
    from tests.support.llama_server import MODEL_ALIAS
    from tests.support.runs import RunRecorder

    folder = workdir / task.id
    project = QgsProject.instance()
    project.clear()
    project.read(str(copy_demo(folder)))
    before = {layer.name() for layer in project.mapLayers().values()}
    expected = task.expect(oracle)
    worker = Conversation(ToolContext(project=project, bridge=bridge), store_path=folder / "store.sqlite")
    recorder = RunRecorder(worker)
    config = ModelConfig(
        provider="openai",
        base_url=server.base_url,
        model=MODEL_ALIAS,
        temperature=0.0,
        context_limit=server.n_ctx,
        timeout=120,
        max_steps=MAX_STEPS,
        max_tokens=ANSWER_TOKENS,
    )
    started = time.monotonic()
    try:
        run = worker.submit(task.question, config)
        finished = recorder.wait(run, 600)
    finally:
        seconds = time.monotonic() - started
        worker.shutdown()
    answer = recorder.text(run)
    tools = recorder.tool_results(run)
    failures = [] if finished.status == "finished" else [f"the run {finished.status}: {finished.error}"]
    failures += [f"{t.name} failed: {t.result[:160]}" for t in tools if not t.ok]
    failures += check_answer(answer, expected)
    added = {layer.name(): layer for layer in project.mapLayers().values() if layer.name() not in before}
    for name, want in expected.layers.items():
        failures += check_layer(name, added[name], want) if name in added else [f"no layer {name!r} was added"]
    project.clear()
    return {
        "id": task.id,
        "group": task.group,
        "passed": not failures,
        "failures": failures,
        "tool_calls": [t.name for t in tools],
        # A base model continues the text it was given: an answer that repeats the question (and the project
        # note before it, which holds feature counts and CRSs) can score without answering anything.
        "repeats_question": task.question in answer,
        "answer": " ".join(answer.split())[:200],
        "seconds": round(seconds, 1),
    }


def main(only: str = "") -> dict[str, Any]:
    with headless_qgis():
        from evals.oracle import Oracle
        from evals.tasks_analysis import SINGLE
        from evals.tasks_project import INSPECTION
        from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
        from tests.support.demo import GPKG, ensure_demo
        from tests.support.llama_server import MODEL_PATH, running_llama_server

        ensure_demo()
        bridge = MainThreadBridge()
        workdir = Path(tempfile.mkdtemp(prefix="geogpt-eval-real-"))
        oracle = Oracle(GPKG)
        started = time.monotonic()
        try:
            with running_llama_server(workdir / "server", n_ctx=8192) as server:
                tasks = [task for task in [*INSPECTION, *SINGLE] if only in task.id]
                results = [run_task(task, server, oracle, workdir, bridge) for task in tasks]
        finally:
            bridge.close()
            shutil.rmtree(workdir, ignore_errors=True)
    passed = sum(r["passed"] for r in results)
    return {
        "model": MODEL_PATH.name,
        "server": "llama-cpp-python server, --chat_format gemma",
        "tasks": len(results),
        "passed": passed,
        "pass_rate": round(passed / len(results), 3) if results else 0.0,
        "tasks_with_a_tool_call": sum(bool(r["tool_calls"]) for r in results),
        "passed_repeating_the_question": sum(r["passed"] and r["repeats_question"] for r in results),
        "seconds": round(time.monotonic() - started, 1),
        "results": results,
    }


def _print(report: dict[str, Any]) -> None:
    print(f"Real model {report['model']} ({report['server']}), {report['seconds']} s")
    print(
        f"Tasks: {report['passed']}/{report['tasks']} passed ({report['pass_rate']:.0%}); "
        f"{report['tasks_with_a_tool_call']} with at least one tool call; "
        f"{report['passed_repeating_the_question']} of the passes repeat the question (and the project note) verbatim"
    )
    for row in report["results"]:
        mark = "passed" if row["passed"] else "FAILED"
        mark += " (repeats the question)" if row["repeats_question"] else ""
        tools = ", ".join(row["tool_calls"]) or "no tool call"
        print(f"  {mark} {row['id']} ({row['group']}, {row['seconds']} s; {tools}): {row['answer']!r}")
        for failure in row["failures"]:
            print(f"      - {failure}")


def without_examples() -> None:
    """Leave the find_examples family out of every run (``--no-examples``), to measure what it changes."""
    from geogpt_qgis.tools import registry

    registry.FAMILY_TYPES = tuple(f for f in registry.FAMILY_TYPES if f.name != "examples")


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--no-examples"]
    plain = len(arguments) < len(sys.argv) - 1
    if plain:
        without_examples()
    report = main(arguments[0] if arguments else "")
    report["find_examples"] = not plain
    text = json.dumps(report, indent=1, ensure_ascii=False)
    name = "results-real-no-examples.json" if plain else "results-real.json"
    (REPO / "evals" / name).write_text(text, encoding="utf-8")
    _print(report)
