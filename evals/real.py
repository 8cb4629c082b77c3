"""``python -m evals.real`` (``make eval-real``): the inspection and single-algorithm tasks with real small models.

The scripted suite (``make eval``) shows what the agent does when the model
works as a competent one would; this shows what real weak local models make of
the same fourteen questions, so that prompt, schema and mode changes can be
judged on them.  Two models, each served by llama-cpp-python's
OpenAI-compatible server (harness/llama_server.py; ``make llama`` builds
it): Gemma 3 270M (Q4_K_M, ``--chat_format gemma``: a base model whose GGUF has
no chat template) and SmolLM2-135M-Instruct (Q4_1, instruction-tuned, its
GGUF's own ChatML template).  Each runs in both tool-call modes (native:
the server's tool calling; guided: replies constrained by a JSON schema) and
both tool profiles (full, compact), through the whole agent exactly as a user
would configure it: no request is edited.  Each task is scored as in ``make
eval`` (numbers and words of the answer, layers added), the answer without
the lines it quotes and without what it copies of the question and the project
note in front of it (``without_echo``).  Not a gate: it prints
one line per run,

    eval-real <model> <native|guided> <full|compact>: <passed>/<total> passed, <n> tasks with a tool call

then every failure with its cause, and writes evals/results-real.json.

    python -m evals.real [TASK-FILTER] [--model NAME] [--mode native|guided] [--profile full|compact]
"""

from __future__ import annotations

import argparse
import difflib
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import REPO, headless_qgis

# A run of at least these many characters that an answer shares with the question and the project note in front
# of it is an echo of the prompt, not an answer (``without_echo``).
ECHO_CHARS = 24
ANSWER_TOKENS = 256  # a bound on each answer, so a looping model costs seconds, not minutes
MAX_STEPS = 5
TASK_SECONDS = 300  # one task's bound: a run past it is stopped and fails


MODES = ("guided", "native")
PROFILES = ("full", "compact")


@dataclass(frozen=True)
class Setup:
    """One run of the tasks: a model (its server), a tool-call mode and a tool profile."""

    model: Any  # harness.llama_server.GgufModel
    mode: str
    profile: str

    @property
    def label(self) -> str:
        return f"eval-real {self.model.path.stem} {self.mode} {self.profile}"


def run_task(task: Any, server: Any, setup: Setup, oracle: Any, workdir: Path, bridge: Any) -> dict[str, Any]:
    from qgis.core import QgsProject

    from evals.runner import check_answer
    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.conversation import Conversation
    from geogpt_qgis.core.events import RunFinished
    from geogpt_qgis.core.guided_schema import EVIDENCE_HEAD
    from geogpt_qgis.tools.base import ToolContext
    from geogpt_qgis.tools.project.family import project_brief
    from harness.demo import copy_demo
    from harness.runs import RunRecorder

    folder = workdir / f"{setup.model.alias}-{setup.mode}-{setup.profile}" / task.id
    project = QgsProject.instance()
    project.clear()
    project.read(str(copy_demo(folder)))
    before = {layer.name() for layer in project.mapLayers().values()}
    given = f"{project_brief(project)}\n{task.question}"
    expected = task.expect(oracle)
    worker = Conversation(ToolContext(project=project, bridge=bridge), store_path=folder / "store.sqlite")
    recorder = RunRecorder(worker)
    config = ModelConfig(
        provider="openai",
        base_url=server.base_url,
        model=server.model,
        temperature=0.0,
        context_limit=server.n_ctx,
        timeout=120,
        max_steps=MAX_STEPS,
        max_tokens=ANSWER_TOKENS,
        tool_calls=setup.mode,
        tool_profile=setup.profile,
    )
    started = time.monotonic()
    try:
        run = worker.submit(task.question, config)
        try:
            finished = recorder.wait(run, TASK_SECONDS)
        except AssertionError:  # a model that never stops calling within the bound: stopped, scored as it stands
            worker.cancel(run)
            finished = recorder.wait(run, 60)
            finished = RunFinished("cancelled", f"it did not end within {TASK_SECONDS} s and was stopped")
    finally:
        seconds = time.monotonic() - started
        worker.shutdown()
    # Scored without the lines the answer quotes (the compact profile's evidence, shown under it): a model that
    # quotes the line with the right figure and answers another has not answered.
    answer, _, quotes = recorder.text(run).partition(f"\n\n{EVIDENCE_HEAD}\n")
    written = answer
    answer = without_echo(answer, given)
    tools = recorder.tool_results(run)
    failures = [] if finished.status == "finished" else [f"the run {finished.status}: {finished.error}"]
    failures += [f"{t.name} failed: {' '.join(t.result.split())[:160]}" for t in tools if not t.ok]
    failures += check_answer(answer, expected)
    added = {layer.name(): layer for layer in project.mapLayers().values() if layer.name() not in before}
    for name, want in expected.layers.items():
        failures += _layer_failures(task, name, want, added, tools)
    project.clear()
    return {
        "id": task.id,
        "group": task.group,
        "passed": not failures,
        "failures": failures,
        "tool_calls": [t.name for t in tools],
        # A base model continues the text it was given: an answer that repeats the question (and the project
        # note before it, which holds feature counts and CRSs) is scored without what it repeats.
        "repeats_question": task.question in written,
        "echoes_the_prompt": answer != written,
        "answer": " ".join(written.split())[:200],  # as written, echo and all
        "quoted": " ".join(quotes.split())[:300],
        "seconds": round(seconds, 1),
    }


def without_echo(answer: str, given: str) -> str:
    """``answer`` without each run of ECHO_CHARS or more characters it copies from ``given``.

    ``given``: the question and the project note in front of it (which holds
    feature counts and CRSs).  A base model continues the text it was given:
    Gemma 3 270M, asked natively "How many schools are there?", wrote the
    project note back, "'schools' (Point, 31 features)" in it, and the 31
    scored as an answer.  What the model copied from its tools' results is
    kept: quoting a result is how an answer shows its figure.
    """
    while True:
        blocks = difflib.SequenceMatcher(None, answer, given, autojunk=False).get_matching_blocks()
        copied = [block for block in blocks if block.size >= ECHO_CHARS]
        if not copied:
            return answer
        for block in reversed(copied):  # from the end, so earlier positions stay valid
            answer = f"{answer[: block.a]} {answer[block.a + block.size :]}"


def _layer_failures(task: Any, name: str, want: Any, added: dict[str, Any], tools: list[Any]) -> list[str]:
    """What is wrong with the layer the task expects: by its name, or one the same algorithm added under another.

    The questions do not give the layer's name (the scripted run's, such as
    ``rivers_500m``): a model that ran the scripted algorithm under a name of
    its own (``rivers_buffer``) did the task if that layer passes the same
    checks.
    """
    from evals.runner import check_layer

    if name in added:
        return check_layer(name, added[name], want)
    algorithm = next(
        (
            call.args.get("algorithm")
            for step in task.steps
            if isinstance(step, list)
            for call in step
            if call.name == "run_algorithm" and call.args.get("output_name") == name
        ),
        None,
    )
    made = {
        ref.name
        for t in tools
        if t.ok and t.artifact.algorithm is not None and t.artifact.algorithm.id == algorithm
        for ref in t.artifact.added
    }
    if any(_passes(check_layer, other, layer, want) for other, layer in added.items() if other in made):
        return []
    return [f"no layer {name!r} was added, nor another by {algorithm} that passes its checks"]


def _passes(check: Any, name: str, layer: Any, want: Any) -> bool:
    """Whether ``layer`` passes the checks (a layer without a field they read does not)."""
    try:
        return not check(name, layer, want)
    except KeyError:
        return False


def summary(setup: Setup, results: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    passed = sum(r["passed"] for r in results)
    return {
        "model": setup.model.path.name,
        "server": "llama-cpp-python server, "
        + (f"--chat_format {setup.model.chat_format}" if setup.model.chat_format else "the GGUF's chat template"),
        "mode": setup.mode,
        "profile": setup.profile,
        "line": f"{setup.label}: {passed}/{len(results)} passed, "
        f"{sum(bool(r['tool_calls']) for r in results)} tasks with a tool call",
        "tasks": len(results),
        "passed": passed,
        "pass_rate": round(passed / len(results), 3) if results else 0.0,
        "tasks_with_a_tool_call": sum(bool(r["tool_calls"]) for r in results),
        "passed_repeating_the_question": sum(r["passed"] and r["repeats_question"] for r in results),
        "echoes_of_the_prompt": sum(r["echoes_the_prompt"] for r in results),
        "seconds": round(seconds, 1),
        "results": results,
    }


def main(
    only: str = "",
    models: tuple[str, ...] = (),
    modes: tuple[str, ...] = MODES,
    profiles: tuple[str, ...] = PROFILES,
    on_run: Any = None,
) -> dict[str, Any]:
    """Every (model, mode, profile) run asked for; one server per model, shared by its runs."""
    with headless_qgis():
        from evals.oracle import Oracle
        from evals.tasks_analysis import SINGLE
        from evals.tasks_project import INSPECTION
        from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
        from harness.demo import GPKG, ensure_demo
        from harness.llama_server import GEMMA, SMOLLM2, running_llama_server

        chosen = [m for m in (SMOLLM2, GEMMA) if not models or m.alias in models or m.path.stem in models]
        ensure_demo()
        bridge = MainThreadBridge()
        workdir = Path(tempfile.mkdtemp(prefix="geogpt-eval-real-"))
        oracle = Oracle(GPKG)
        tasks = [task for task in [*INSPECTION, *SINGLE] if only in task.id]
        runs = []
        started = time.monotonic()
        try:
            for model in chosen:
                with running_llama_server(workdir / f"server-{model.alias}", model=model, n_ctx=8192) as server:
                    for mode in modes:
                        for profile in profiles:
                            setup = Setup(model, mode, profile)
                            run_started = time.monotonic()
                            results = [run_task(task, server, setup, oracle, workdir, bridge) for task in tasks]
                            runs.append(summary(setup, results, time.monotonic() - run_started))
                            _print_run(runs[-1])
                            if on_run is not None:
                                on_run(runs)
        finally:
            bridge.close()
            shutil.rmtree(workdir, ignore_errors=True)
    return {"seconds": round(time.monotonic() - started, 1), "runs": runs}


def _print_run(run: dict[str, Any]) -> None:
    print(run["line"], flush=True)
    for row in run["results"]:
        for failure in row["failures"]:
            tools = ", ".join(row["tool_calls"]) or "no tool call"
            print(f"  {row['id']} ({tools}): {failure}", flush=True)


def _print(report: dict[str, Any]) -> None:
    print(f"eval-real: {len(report['runs'])} runs in {report['seconds']} s", flush=True)
    for run in report["runs"]:
        print(f"  {run['line']} ({run['seconds']} s)")


def without_examples() -> None:
    """Leave the find_examples family out of every run (``--no-examples``), to measure what it changes."""
    from geogpt_qgis.tools import registry

    registry.FAMILY_TYPES = tuple(f for f in registry.FAMILY_TYPES if f.name != "examples")


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evals.real", description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="?", default="", help="run only the tasks whose id contains this")
    parser.add_argument("--model", action="append", default=[], help="gemma3 or smollm2 (repeatable; default both)")
    parser.add_argument("--mode", action="append", choices=MODES, default=[], help="default: both")
    parser.add_argument("--profile", action="append", choices=PROFILES, default=[], help="default: both")
    parser.add_argument("--no-examples", action="store_true", help="leave the find_examples family out")
    parser.add_argument("--out", default="", help="write the results here (default: evals/results-real.json)")
    return parser.parse_args(argv)


def _write(path: Path, runs: list[dict[str, Any]], started: float, complete: bool, examples: bool) -> None:
    """The results so far (after each run: a long evaluation that is stopped keeps what it measured)."""
    report = {"seconds": round(time.monotonic() - started, 1), "runs": runs, "complete": complete}
    report["find_examples"] = examples
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    options = _arguments(sys.argv[1:])
    if options.no_examples:
        without_examples()
    whole = not (options.only or options.model or options.mode or options.profile)
    name = "results-real-no-examples.json" if options.no_examples else "results-real.json"
    out = Path(options.out) if options.out else (REPO / "evals" / name if whole else None)
    began = time.monotonic()
    examples = not options.no_examples

    def saved(runs: list[dict[str, Any]]) -> None:
        if out is not None:
            _write(out, runs, began, False, examples)

    report = main(
        options.only,
        tuple(options.model),
        tuple(options.mode) or MODES,
        tuple(options.profile) or PROFILES,
        on_run=saved,
    )
    if out is not None:
        _write(out, report["runs"], began, True, examples)
    _print(report)
