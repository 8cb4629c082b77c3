"""The steps of an analysis as they ran, for rerunning it: which ones a Processing model can hold.  Qt-free.

An analysis (one answer's tool calls, or a whole conversation's) is exported
as a QGIS Processing model or a PyQGIS script (``tools/processing/model_export``).
Only the ``run_algorithm`` calls that succeeded become steps of it.  Every
other call that succeeded and did more than read (SQL, code, places, styling,
edits, charts...) is kept as a step the export *cannot* hold, so the model's
help text and the user are told of it instead of losing it silently.  Calls
that only read (describe a layer, find an algorithm) change nothing a rerun
needs; calls that failed did nothing: both are left out.  A tool this module
does not know is counted as one that did something: better named once too
often than dropped.

Steps come from the run's events (the dock's answer, the CLI's run:
``StepRecorder``) or from a stored conversation's transcript entries
(``steps_of_entries``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from geogpt_qgis.core.artifacts import EMPTY, AlgorithmRun, ToolArtifact
from geogpt_qgis.core.events import ToolFinished, ToolStarted
from geogpt_qgis.core.text import format_arguments, short

RUN_ALGORITHM = "run_algorithm"
# Calls that only read: nothing of them is needed to rerun an analysis.
READ_ONLY_TOOLS = frozenset(
    {
        "describe_layer",
        "read_features",
        "find_algorithm",
        "describe_table",
        "describe_ogc_collections",
        "find_examples",
        "describe_capabilities",
    }
)
LABEL_CHARS = 160


@dataclass(frozen=True)
class Step:
    """One tool call that succeeded: the tool, the arguments the model gave, and what it used and made."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict, hash=False)
    artifact: ToolArtifact = EMPTY

    @property
    def algorithm(self) -> AlgorithmRun | None:
        """The algorithm the call ran, for a ``run_algorithm`` call that recorded one."""
        return self.artifact.algorithm if self.tool == RUN_ALGORITHM else None

    @property
    def label(self) -> str:
        """``run_sql(sql='SELECT …', connection='demo')``: the call as the tool steps show it, on one line."""
        return short(f"{self.tool}({format_arguments(self.args)})", LABEL_CHARS)


@dataclass(frozen=True)
class Analysis:
    """The steps of an analysis: those a model holds (algorithms, in order), and those it cannot."""

    steps: tuple[Step, ...] = ()
    outside: tuple[Step, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.steps


def analysis_of(steps: Iterable[Step]) -> Analysis:
    """Split the calls of a run into the algorithm steps and the ones a model cannot hold (reads dropped)."""
    kept: list[Step] = []
    outside: list[Step] = []
    for step in steps:
        if step.algorithm is not None:
            kept.append(step)
        elif step.tool not in READ_ONLY_TOOLS:
            outside.append(step)
    return Analysis(tuple(kept), tuple(outside))


class StepRecorder:
    """The calls of a run, from its events: each ``ToolStarted`` with its ``ToolFinished``, if it succeeded."""

    def __init__(self) -> None:
        self._started: dict[str, ToolStarted] = {}
        self.steps: list[Step] = []

    def reset(self) -> None:
        self._started.clear()
        self.steps = []

    def record(self, event: object) -> None:
        if isinstance(event, ToolStarted):
            self._started[event.call_id] = event
        elif isinstance(event, ToolFinished):
            started = self._started.pop(event.call_id, None)
            if event.ok:
                args = dict(started.args) if started is not None else {}
                self.steps.append(Step(event.name, args, event.artifact or EMPTY))


def steps_of_entries(entries: Iterable[Any]) -> list[Step]:
    """The calls that succeeded among a stored conversation's transcript entries (``agent.transcript.Entry``)."""
    return [
        Step(str(entry.name), dict(entry.args), entry.artifact or EMPTY)
        for entry in entries
        if entry.kind == "tool" and entry.ok
    ]


def last_turn(entries: Sequence[Any]) -> list[Any]:
    """The entries of the last question: everything after the last user message (all of them without one)."""
    users = [index for index, entry in enumerate(entries) if entry.kind == "user"]
    return list(entries[users[-1] + 1 :] if users else entries)
