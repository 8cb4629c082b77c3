"""What a task is: a question, a scripted trace, and the expected result."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FEATURES = r"([\d,]+) features"  # the count in a tool's summary of a layer
GROUPS = ("inspection", "single algorithm", "multi-step", "SQL", "OGC API", "decline", "maps")


@dataclass(frozen=True)
class Call:
    """One tool call of the trace; ``raw`` sends the arguments as that literal (maybe broken) JSON text."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None


@dataclass(frozen=True)
class Fix:
    """A step made from the answer to the call before it alone: the call a model makes from that message."""

    make: Callable[[str], Call]


class Reads:
    """What the tools returned so far in this task, as the model read it."""

    def __init__(self, results: list[str]) -> None:
        self.results = results

    @property
    def last(self) -> str:
        return self.results[-1] if self.results else ""

    def number(self, pattern: str, index: int = -1) -> float:
        """The number captured by ``pattern``'s first group in result ``index`` (commas allowed)."""
        match = re.search(pattern, self.results[index])
        if match is None:
            raise ValueError(f"{pattern!r} not found in: {self.results[index][:300]}")
        return float(match.group(1).replace(",", ""))

    def table(self, index: int = -1) -> list[dict[str, str]]:
        """The rows of the first Markdown table in result ``index``."""
        lines = [line for line in self.results[index].splitlines() if line.startswith("|")]
        if len(lines) < 2:
            return []
        header = [cell.strip() for cell in lines[0].strip("|").split("|")]
        return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=False)) for line in lines[2:]]


Answer = Callable[[Reads], str]
Step = list[Call] | Fix | Answer


@dataclass(frozen=True)
class LayerExpect:
    """What a layer the task adds must hold; ``None`` means not checked.

    ``values`` maps a key field's value to another field's expected value
    (``key_field``, ``value_field``, {key: value}); sums are over all features.
    """

    count: int | None = None
    area: float | None = None
    length: float | None = None
    values: tuple[str, str, dict[Any, Any]] | None = None
    tolerance: float = 0.01


@dataclass(frozen=True)
class Expected:
    """The independent answer: numbers and words the reply must contain, layers the project must gain."""

    numbers: list[float] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    layers: dict[str, LayerExpect] = field(default_factory=dict)
    no_new_layers: bool = False
    tolerance: float = 0.005
    # Checks of the project the run leaves (labels, layer order, renderers...): each returns its failures.
    project: list[Callable[[Any], list[str]]] = field(default_factory=list)


def top_of(values: dict[str, float]) -> Expected:
    """The answer names the key with the largest value, and that value."""
    name = max(values, key=lambda k: values[k])
    return Expected(words=[name], numbers=[values[name]])


@dataclass(frozen=True)
class Task:
    id: str
    group: str
    question: str
    steps: list[Step]
    expect: Callable[[Any], Expected]  # given the oracle
    # The run's approval policy: "trust" stands for a user who approves the gated steps (a file written).
    policy: str = "ask"
    # A weak model's mistake comes first: its answer must be an error naming each of these (case-insensitively).
    correction: tuple[str, ...] = ()
