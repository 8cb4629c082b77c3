"""Headless use: ``python -m geogpt_qgis ask "QUESTION" --project FILE``.

The same agent, worker and tools as the dock, without a window: the answer
streams to stdout, tool steps and notices to stderr, and the project is saved
with any result layers when ``--save`` is given (and the run's undo beside
it: ``undo-run --project OUT.qgz`` puts it back as it was, ``cli_undo``).
The exit status is 0 when the run finished, 1 when it failed (the reason is printed), 2 for bad
arguments or an unreadable project, 130 when interrupted.  No one is there
to click Approve on a risky step (code, data changes, file writes), so
``--approval`` decides them: ``never`` (the default) refuses them and the model
is told why; ``trust`` lets them run; ``ask`` prints each step's preview on the
terminal and reads y / n / always (``cli_approval``), and without a terminal on
standard input it says so and refuses them, as ``never`` does.  With ``--store`` the conversation is kept (and
``--conversation`` continues one), as the dock keeps its own.  An
OpenAI-compatible server that is not on this machine or its network needs an
API key: when none can be read the command says so and exits 2 (a local
server, such as LM Studio or vLLM, works without one).  Settings, saved
database connections and keys come from the user's default QGIS profile, as
QGIS desktop would read them (``toolbelt.qgis_profile``).  Everything printed is
scrubbed of known secrets (``core.secrets_scrub``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from geogpt_qgis.agent.config import TOOL_CALL_MODES, TOOL_PROFILES
from geogpt_qgis.cli_export import add_export_argument, export_after
from geogpt_qgis.cli_undo import add_parser as add_undo_parser
from geogpt_qgis.cli_undo import keep_record, run_undo_command, start_recording
from geogpt_qgis.core.analysis_steps import StepRecorder
from geogpt_qgis.core.approval import POLICY_ASK, POLICY_NEVER, POLICY_TRUST, ApprovalRequest
from geogpt_qgis.core.events import (
    ApprovalRequested,
    Notice,
    ReasoningDelta,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from geogpt_qgis.core.secrets_scrub import scrub
from geogpt_qgis.core.text import format_arguments
from geogpt_qgis.toolbelt.hosts import is_local_server
from geogpt_qgis.toolbelt.log import logger
from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA, PROVIDERS
from geogpt_qgis.toolbelt.qgis_profile import user_profile_folder

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from qgis.core import QgsProject
    from qgis.PyQt.QtCore import QTimer

    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.cli_approval import TerminalApprover
    from geogpt_qgis.tools.result_store import ResultStore

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m geogpt_qgis", description="GeoGPT for QGIS, headless.")
    commands = parser.add_subparsers(dest="command", required=True)
    ask = commands.add_parser("ask", help="ask one question about a project and stream the answer")
    ask.add_argument("question", help="the question, in plain words")
    ask.add_argument("--project", required=True, help="the QGIS project (.qgz/.qgs) to work on")
    ask.add_argument("--provider", choices=PROVIDERS, help="model provider (default: plugin setting, else ollama)")
    ask.add_argument("--base-url", help="model server URL (Ollama: http://localhost:11434; OpenAI: .../v1)")
    ask.add_argument("--model", help="model name, e.g. qwen3:8b")
    ask.add_argument("--save", metavar="OUT.qgz", help="save the project, with any result layers, to this file")
    ask.add_argument("--max-steps", type=int, help="most model calls for this question")
    ask.add_argument(
        "--timeout",
        type=float,
        help="the most seconds the question may take from when it is sent, whatever the model does "
        "(also each model request's timeout)",
    )
    ask.add_argument("--max-tokens", type=int, help="the most tokens of one model reply (default: plugin setting)")
    ask.add_argument("--context-limit", type=int, help="most tokens of context to use (num_ctx cap)")
    ask.add_argument(
        "--tool-calls",
        choices=TOOL_CALL_MODES,
        help="native: the server's tool calling; guided: replies held to a JSON schema of the tools; "
        "auto: guided where native calls are missing or fail (default: plugin setting)",
    )
    ask.add_argument(
        "--tool-profile",
        choices=TOOL_PROFILES,
        help="full: every tool; compact: 8 tools and a shorter prompt, for small models; auto: from the model's "
        "size (default: plugin setting; a continued conversation keeps the profile it started with)",
    )
    ask.add_argument(
        "--approval",
        choices=(POLICY_NEVER, POLICY_ASK, POLICY_TRUST),
        default=POLICY_NEVER,
        help="steps that change data or run code: never run them (default), ask at the terminal "
        "(y / n / always for that tool), or trust this question with them",
    )
    ask.add_argument(
        "--store",
        metavar="FILE.sqlite",
        help="keep the conversation in this store (the dock's is conversations.sqlite in the QGIS profile)",
    )
    ask.add_argument("--conversation", metavar="ID", help="continue this conversation of the store")
    ask.add_argument("--quiet", action="store_true", help="do not print tool steps")
    add_export_argument(ask)
    serve = commands.add_parser("mcp", help="serve a project's tools to an MCP client over stdio")
    serve.add_argument("project", help="the QGIS project (.qgz/.qgs) whose tools to serve")
    serve.add_argument(
        "--approval",
        choices=(POLICY_NEVER, POLICY_TRUST),
        default=POLICY_NEVER,
        help="steps that change data, write files or run code: refuse them (default: no one is here to ask), "
        "or trust every client with them",
    )
    add_undo_parser(commands)
    return parser


class ScrubbedStream:
    """A text stream that removes known secrets from everything written to it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(scrub(text))

    def flush(self) -> None:
        self.stream.flush()


def missing_key_message(base_url: str) -> str:
    return (
        f"error: no API key for {base_url}: the key could not be read from the system keychain, "
        "QGIS's authentication database or $OPENAI_API_KEY. Save it in QGIS (Settings > Options > GeoGPT), "
        "or set OPENAI_API_KEY for this command, then try again.\n"
    )


class ConsoleRenderer:
    """Print run events: answer to ``out``, everything else to ``err``."""

    def __init__(self, out: TextIO, err: TextIO, quiet: bool = False) -> None:
        self.out, self.err, self.quiet = out, err, quiet
        self.status: str | None = None
        self.error: str | None = None
        self.pending: ApprovalRequest | None = None  # the step a paused run waits on
        self._thinking = False

    def __call__(self, _run_id: int, event: object) -> None:
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
        elif isinstance(event, ReasoningDelta) and not self.quiet:
            self.err.write(event.text)
        elif isinstance(event, ToolStarted) and not self.quiet:
            self.err.write(f"\n→ {event.name}({format_arguments(event.args)})\n")
        elif isinstance(event, ToolFinished) and not self.quiet:
            mark = "✓" if event.ok else "✗"
            first = event.result.strip().splitlines()[0] if event.result.strip() else ""
            self.err.write(f"  {mark} {event.seconds:.2f} s  {first[:200]}\n")
        elif isinstance(event, Notice):
            self.err.write(f"\n[{event.level}] {event.text}\n")
        elif isinstance(event, ApprovalRequested):
            self.pending = ApprovalRequest.from_dict(event.request)
        elif isinstance(event, RunFinished):
            self.status, self.error = event.status, event.error
            if event.status != "paused":  # a paused run goes on after the approval: the answer is not over
                self.out.write("\n")
            self.out.flush()
        self.err.flush()


def _model_config(args: argparse.Namespace) -> ModelConfig:
    from geogpt_qgis.agent.config import model_config_from_settings
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    settings = PlgOptionsManager.get_plg_settings()
    if args.provider:
        settings.provider = args.provider
    config = model_config_from_settings(settings)
    overrides = {
        "base_url": args.base_url.rstrip("/") if args.base_url else None,
        "model": args.model,
        "max_steps": args.max_steps,
        "timeout": args.timeout,
        "max_tokens": args.max_tokens,
        "context_limit": args.context_limit,
        "tool_calls": args.tool_calls,
        "tool_profile": args.tool_profile,
    }
    return replace(config, **{k: v for k, v in overrides.items() if v is not None})


def run_ask(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Start QGIS headless, run the question, save if asked; return the exit status."""
    out, err = ScrubbedStream(out), ScrubbedStream(err)  # type: ignore[assignment]
    # The plugin's warnings go to stderr as Python's last-resort handler would print them, but scrubbed.
    warnings = logging.StreamHandler(err)
    warnings.setLevel(logging.WARNING)
    logger.addHandler(warnings)
    try:
        return _run_ask(args, out, err)
    finally:
        logger.removeHandler(warnings)


def _run_ask(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    project_path = Path(args.project)
    if not project_path.is_file():
        err.write(f"error: no project file at {project_path}\n")
        return EXIT_USAGE

    from qgis.core import QgsApplication, QgsProject

    # Platform "desktop": 3.40+ ignores the profile folder for any other platform name (its default is now "").
    app = QgsApplication([], False, user_profile_folder(), "desktop")
    app.initQgis()
    from geogpt_qgis.tools.processing.catalog import ensure_processing

    ensure_processing()
    from geogpt_qgis.tools.result_store import ResultStore, set_result_store

    # Results wait in a scratch file: asking about a project never writes beside it; --save copies them.
    scratch = Path(tempfile.mkdtemp(prefix="geogpt-results-"))
    results = ResultStore(scratch, follow_project=False)
    try:
        project = QgsProject.instance()
        if not project.read(str(project_path)):
            err.write(f"error: QGIS could not read the project {project_path}: {project.error()}\n")
            return EXIT_USAGE
        set_result_store(project, results)
        undo = start_recording(project) if args.save else None  # the state before, for undo-run (cli_undo)
        status = _ask(args, project, out, err)
        if status == EXIT_OK and args.save:
            saved = _save(project, results, Path(args.save), err)
            if saved == EXIT_OK and undo is not None:
                keep_record(undo, Path(args.save), err)
            return saved
        return status
    finally:
        QgsProject.instance().clear()
        set_result_store(QgsProject.instance(), None)
        app.exitQgis()
        shutil.rmtree(scratch, ignore_errors=True)


def _save(project: QgsProject, results: ResultStore, target: Path, err: TextIO) -> int:
    """Write the project to ``target`` with its result layers in ``<target>_results/`` beside it."""
    moved = results.relocate(project, str(target.resolve()))
    if not project.write(str(target)):
        err.write(f"error: could not save the project to {target}: {project.error()}\n")
        return EXIT_FAILED
    results.clean_up(project)
    err.write(f"Saved the project to {target}\n")
    if moved is not None:
        err.write(f"Result layers saved in {moved}\n")
    return EXIT_OK


def _ask(args: argparse.Namespace, project: QgsProject, out: TextIO, err: TextIO) -> int:
    """Run the question on the agent's worker while the main thread runs Qt's event loop."""
    from qgis.PyQt.QtCore import QEventLoop

    from geogpt_qgis.agent.conversation import Conversation
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools.base import ToolContext

    config = _model_config(args)
    if config.provider != PROVIDER_OLLAMA:
        from geogpt_qgis.toolbelt.secrets import get_api_key

        key = get_api_key(config.base_url)
        if not key and not is_local_server(config.base_url):
            err.write(missing_key_message(config.base_url))
            return EXIT_USAGE
        config = config.with_key(key or "")  # looked up: "" keeps the worker from asking the keychain again
    bridge = MainThreadBridge()
    store = Path(args.store) if args.store else None
    worker = Conversation(ToolContext(project=project, bridge=bridge, iface=None), store_path=store)
    if args.conversation:
        worker.set_thread(args.conversation)
    renderer = ConsoleRenderer(out, err, quiet=args.quiet)
    steps = StepRecorder()  # the run's calls, for --export-model
    loop = QEventLoop()
    policy, approver = _approval_front(args.approval, err)
    run = [0]  # the run under way: the question's, then each one resumed after an answer

    def on_event(run_id: int, event: object) -> None:
        if run_id != run[0]:
            return
        renderer(run_id, event)
        steps.record(event)
        if renderer.status is not None:
            loop.quit()

    worker.event.connect(on_event)
    run[0] = worker.submit(args.question, config, policy)
    ctrl_c = CtrlC(lambda: worker.cancel(run[0]))
    timed_out: list[bool] = []
    stopped_at_question = False  # Ctrl+C while the terminal asked

    def time_out() -> None:
        timed_out.append(True)
        worker.cancel(run[0])

    def wait() -> None:
        if renderer.status is None:
            with ctrl_c:
                loop.exec()

    def resume(decision: dict[str, Any]) -> None:
        run[0] = worker.resume(decision, config)

    def go_on() -> bool:  # not after Ctrl+C or the deadline
        return not (ctrl_c.pressed or timed_out)

    deadline = _deadline(args.timeout, time_out, loop.quit)
    try:
        wait()
        stopped_at_question = _answer_approvals(renderer, approver, wait, resume, go_on, deadline, err)
    finally:
        for timer in deadline:
            timer.stop()
        if store is not None:
            err.write(f"Conversation {worker.thread_id} (continue it with --conversation {worker.thread_id})\n")
        worker.shutdown(STOP_GRACE_MS if timed_out else 3000)
        bridge.close()
    code = _exit_status(renderer, args.timeout if timed_out else None, ctrl_c.pressed or stopped_at_question, err)
    code = export_after(code, args.export_model, steps, project, err)
    if (timed_out and worker.is_busy()) or worker.worker.isRunning():
        # A step that ignores cancellation, or an agent thread still winding down: leave now rather than
        # tear QGIS down under a running thread.
        err.flush()
        out.flush()
        os._exit(code)
    return code


def _exit_status(renderer: ConsoleRenderer, timed_out_after: float | None, interrupted: bool, err: TextIO) -> int:
    """The command's exit status from how the run ended, with the reason said on ``err``."""
    if timed_out_after is not None and renderer.status != "finished":
        err.write(f"error: no answer within {timed_out_after:g} s (--timeout); stopped.\n")
        return EXIT_FAILED
    if renderer.status == "finished":
        return EXIT_OK
    if renderer.status == "cancelled" or interrupted:
        err.write("Stopped.\n")
        return EXIT_INTERRUPTED
    err.write(f"error: {renderer.error or 'the run failed'}\n")
    return EXIT_FAILED


def _answer_approvals(
    renderer: ConsoleRenderer,
    approver: TerminalApprover | None,
    wait: Callable[[], None],
    resume: Callable[[dict[str, Any]], None],
    go_on: Callable[[], bool],
    deadline: list[QTimer],
    err: TextIO,
) -> bool:
    """While the run pauses on a step, ask the terminal and go on with the answer; True if Ctrl+C stopped it.

    Without an approver (policies other than ``ask``) no run pauses, and there is nothing to do.
    """
    while approver is not None and renderer.status == "paused" and renderer.pending is not None and go_on():
        try:
            with _paused(deadline), _interruptible():  # the time a person takes to answer is not the model's
                decision = approver.decide(renderer.pending)
        except KeyboardInterrupt:
            err.write("\n")
            return True
        renderer.status, renderer.pending = None, None
        resume(decision)
        wait()
    return False


def _approval_front(policy: str, err: TextIO) -> tuple[str, TerminalApprover | None]:
    """The policy the run gets, and who answers its approvals: the person at the terminal, or no one.

    ``ask`` needs someone to read the preview and type the answer: without a
    terminal on standard input (a pipe, a script, cron) it is ``never``, and
    the command says so before anything runs.
    """
    from geogpt_qgis.cli_approval import NO_TERMINAL, TerminalApprover, is_terminal

    if policy != POLICY_ASK:
        return policy, None
    if not is_terminal(sys.stdin):
        err.write(NO_TERMINAL)
        return POLICY_NEVER, None
    return POLICY_ASK, TerminalApprover(sys.stdin, err)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl+C at the question raises ``KeyboardInterrupt`` at once: Python's own handler, whatever was there.

    No Qt loop runs while the terminal is read, so nothing would act on a handler that only takes note
    (``CtrlC``'s, or one QGIS 3.40 installs), and the blocked read would wait on after Ctrl+C.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _paused(timers: list[QTimer]) -> Iterator[None]:
    """Hold the ``--timeout`` timers while a person answers, then let them run on with the time that was left."""
    left = [(timer, timer.remainingTime()) for timer in timers if timer.isActive()]
    for timer, _ms in left:
        timer.stop()
    try:
        yield
    finally:
        for timer, ms in left:
            timer.start(max(ms, 0))


class CtrlC:
    """Ctrl+C while Qt's loop runs: the signal handler only takes note; a ticking timer acts on it.

    Python runs a signal handler wherever the main thread happens to be, in the
    middle of a write to stdout say.  Cancelling from there posted the run's end,
    whose rendering wrote to stdout again: a "reentrant call" error inside a Qt
    slot, and QGIS aborted.  Qt's loop also holds Python's handlers back until
    some Python code runs: the timer is that code.
    """

    TICK_MS = 100

    def __init__(self, on_press: Callable[[], object]) -> None:
        from qgis.PyQt.QtCore import QTimer

        self.pressed = False
        self._acted = False
        self._on_press = on_press
        self._ticker = QTimer()
        self._ticker.timeout.connect(self._tick)
        self._previous: Any = None

    def __enter__(self) -> CtrlC:
        self._previous = signal.signal(signal.SIGINT, self._note)
        self._ticker.start(self.TICK_MS)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._ticker.stop()
        signal.signal(signal.SIGINT, self._previous)
        self._tick()  # pressed in the last moments: still stop the run

    def _note(self, *_args: object) -> None:
        self.pressed = True

    def _tick(self) -> None:
        if self.pressed and not self._acted:
            self._acted = True
            self._on_press()


# A run out of time is cancelled this long before the deadline, and waited for at most this long.
STOP_GRACE_MS = 1500


def _deadline(seconds: float | None, cancel: Callable[[], object], give_up: Callable[[], None]) -> list[QTimer]:
    """Timers that hold ``--timeout``: cancel the run shortly before it, stop waiting at it (none without one).

    The request timeout alone cannot: a model that streams forever never leaves
    a read waiting, and a model call is only one step of a run.
    """
    from qgis.PyQt.QtCore import QTimer

    if not seconds or seconds <= 0:
        return []
    total_ms = int(seconds * 1000)
    timers = []
    for at_ms, action in ((max(total_ms - STOP_GRACE_MS, total_ms // 2), cancel), (total_ms, give_up)):
        timer = QTimer()
        timer.setSingleShot(True)
        timer.timeout.connect(action)
        timer.start(at_ms)
        timers.append(timer)
    return timers


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "ask":
        return run_ask(args)
    if args.command == "mcp":
        from geogpt_qgis.mcp_server.stdio import serve_project

        return serve_project(args.project, args.approval, ScrubbedStream(sys.stderr))  # type: ignore[arg-type]
    if args.command == "undo-run":
        return run_undo_command(args, ScrubbedStream(sys.stderr))  # type: ignore[arg-type]
    return EXIT_USAGE
