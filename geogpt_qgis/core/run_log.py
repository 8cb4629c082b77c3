"""The run log: what each run did, kept with the conversation and shown in the dock.

A run's events become small records (model calls with tokens and durations,
tool calls with arguments, results, artifacts and durations, notices, approvals, the
final status); streamed text is not logged, the answer is in the history.
``format_runs`` turns stored runs into Markdown for the dock and exports.
A run whose process died (QGIS closed, killed or crashed) is still marked
running in the store; the next start marks it stopped (``run_was_abandoned``).
Qt-free.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from geogpt_qgis.core.artifacts import ToolArtifact
from geogpt_qgis.core.events import (
    ApprovalRequested,
    ContextUsage,
    ModelCallFinished,
    Notice,
    RunFinished,
    ToolFinished,
    ToolStarted,
)
from geogpt_qgis.core.text import format_arguments, short

RESULT_CHARS = 2000  # of each tool result kept in the log
STOPPED = "stopped"
STOPPED_ERROR = (
    "QGIS closed before this run ended (it was closed, killed or crashed); the steps that had finished are kept."
)


def run_was_abandoned(pid: int | None) -> bool:
    """Whether a run still marked running, started by process ``pid``, can never end (its process is gone)."""
    if pid is None:
        return True  # written before runs recorded their process
    return pid != os.getpid() and not process_alive(pid)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (no signal is sent)."""
    if pid <= 0:
        return False
    if os.name == "nt":
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        try:
            code = ctypes.c_ulong()
            kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return True  # cannot tell: take it as alive, so nothing of it is touched
    return True


def event_record(event: object) -> tuple[str, dict[str, Any]] | None:
    """``(kind, data)`` to store for ``event``, or None for events the log skips (streamed text)."""
    if isinstance(event, ModelCallFinished):
        tokens = {"input_tokens": event.input_tokens, "output_tokens": event.output_tokens}
        return "model", {**tokens, "seconds": event.seconds}
    if isinstance(event, ToolStarted):
        return "tool_started", {"call_id": event.call_id, "name": event.name, "args": event.args}
    if isinstance(event, ToolFinished):
        record = {
            "call_id": event.call_id,
            "name": event.name,
            "ok": event.ok,
            "result": event.result[:RESULT_CHARS],
            "seconds": event.seconds,
        }
        if not event.artifact.empty:
            record["artifact"] = event.artifact.to_dict()
        return "tool", record
    if isinstance(event, ContextUsage):
        return "context", {"used": event.used, "limit": event.limit, "omitted": event.omitted}
    if isinstance(event, Notice):
        return "notice", {"text": event.text, "level": event.level}
    if isinstance(event, ApprovalRequested):
        return "approval", {"action": event.request.get("action", ""), "tool": event.request.get("tool", "")}
    if isinstance(event, RunFinished):
        return "finished", {"status": event.status, "error": event.error}
    return None


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


@dataclass
class RunRecord:
    """One stored run: what started it, how it ended, and its events ``(seconds from start, kind, data)``."""

    run_id: str
    label: str
    started: float
    ended: float | None = None
    status: str = "running"
    error: str | None = None
    events: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)

    @property
    def seconds(self) -> float | None:
        return None if self.ended is None else self.ended - self.started

    def totals(self) -> tuple[int, int, int, int]:
        """Model calls, input tokens, output tokens, tool calls."""
        models = [d for _, k, d in self.events if k == "model"]
        tools = [d for _, k, d in self.events if k == "tool"]
        return (
            len(models),
            sum(int(d.get("input_tokens", 0)) for d in models),
            sum(int(d.get("output_tokens", 0)) for d in models),
            len(tools),
        )


# Marks in characters the default fonts of Linux, Windows and macOS all draw (⏸ is missing from DejaVu Sans);
# a status without a clear mark says it in words.  LEGEND, under the runs, says what each mark means.
STATUS_MARK = {
    "finished": "✓",
    "failed": "✗",
    "cancelled": "■",
    STOPPED: "■",
    "paused": "(waiting for approval)",
    "running": "…",
}
LEGEND = "_Marks: → a tool step started · ✓ it succeeded · ✗ it failed · ■ the run was stopped before its end._"


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" if n == 1 else f"{n:,} {what}s"


def format_runs(runs: Sequence[RunRecord]) -> str:
    """The runs of a conversation as Markdown, newest last."""
    if not runs:
        return "No runs recorded for this conversation yet."
    return "\n\n".join([*(_format_run(i + 1, run) for i, run in enumerate(runs)), LEGEND])


def _format_run(number: int, run: RunRecord) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.started))
    calls, tokens_in, tokens_out, tools = run.totals()
    took = f"{run.seconds:.1f} s" if run.seconds is not None else "did not end (QGIS closed or crashed)"
    mark = STATUS_MARK.get(run.status, "")
    head = f"### Run {number}: {short(run.label, 80)}\n\n{when} · **{run.status}** {mark} · {took}"
    head += f" · {_count(calls, 'model call')}, {tokens_in:,} tokens in, {tokens_out:,} out"
    head += f" · {_count(tools, 'tool call')}"
    if run.error:
        head += f"\n\n> {run.error}"
    rows = [line for line in (_event_row(at, kind, data) for at, kind, data in run.events) if line]
    if not rows:
        return head
    table = ["| at | step | details |", "|---|---|---|", *rows]
    return head + "\n\n" + "\n".join(table)


def _event_row(at: float, kind: str, data: dict[str, Any]) -> str | None:
    if kind == "model":
        tokens = f"{data.get('input_tokens', 0):,} tokens in, {data.get('output_tokens', 0):,} out"
        return _row(at, "model call", f"{tokens}, {data.get('seconds', 0):.2f} s")
    if kind == "tool_started":
        return _row(at, f"→ {data.get('name')}", format_arguments(data.get("args") or {}))
    if kind == "tool":
        mark = "✓" if data.get("ok") else "✗"
        first = next((line for line in str(data.get("result", "")).splitlines() if line.strip()), "")
        added = ToolArtifact.from_dict(data.get("artifact")).added_names
        made = f" · added {', '.join(added)}" if added else ""
        return _row(at, f"{mark} {data.get('name')}", f"{data.get('seconds', 0):.2f} s · {short(first, 160)}{made}")
    if kind == "context":
        used, limit = int(data.get("used", 0)), int(data.get("limit", 0)) or 1
        omitted = f", {data['omitted']} older messages summarised" if data.get("omitted") else ""
        return _row(at, "context", f"{used:,} of {limit:,} tokens ({100 * used // limit}%){omitted}")
    if kind == "notice":
        return _row(at, str(data.get("level", "info")), str(data.get("text", "")))
    if kind == "approval":
        return _row(at, "approval asked", str(data.get("action", "")))
    if kind == "finished":
        error = f": {data['error']}" if data.get("error") else ""
        return _row(at, "end", f"{data.get('status')}{error}")
    return None


def _row(at: float, step: str, detail: str) -> str:
    cell = detail.replace("|", "\\|").replace("\n", " ")
    return f"| {at:6.2f} s | {step.replace('|', '/')} | {cell} |"
