"""The trap suite's harness: a trap is a question on data with a defect that changes the answer, asked of the tools.

Each case is one function decorated with ``@trap(family, warns=...)``; it runs twice:
- as a **trap** (``defect=True``): the data holds the defect (feet, a bowtie, a hole wound like a shell...);
- as its **twin** (``defect=False``): the same question on the same data without the defect.

The function writes its data with code (under ``s.tmp``), computes the right answer without QGIS
(shapely, pyproj, numpy, raw GDAL/OGR reads), asks the tools through ``s.call`` (the MCP server's
own entry point, ``McpTools.call``, in a bare project: no CRS, no ellipsoid) and returns a ``Figure``:
the value the tools gave (parsed from their text; ``None`` if they gave none) and the right one.

Judged by the harness, from the figure and all the text the tools returned (``warns`` is a regex that
names the defect):
- trap: ``right`` (the right figure), ``warned`` (a figure or a refusal, and the defect is named),
  ``unnamed`` (no figure, the defect not named), ``silent`` (a wrong figure, nothing said: the worst);
- twin: ``complete`` (the right figure and no false alarm), ``false-alarm`` (the defect named where
  there is none), ``miss`` (no right figure).
A trap passes when ``right`` or ``warned``; a twin only when ``complete``. A case the tools do not
handle yet is declared with ``trap_fails=``/``twin_fails=`` (why): it is a strict xfail, so it fails
once fixed and must then lose the mark. The suite prints the silent-error rate over traps (goal 0)
and the completion over twins (goal 100 %), and writes them with every outcome to
``evals/traps.json`` (``GEOGPT_TRAPS_JSON`` overrides the path).

Adding a module: ``tests/traps/test_<family>.py``, import ``trap, Figure, Session`` from here and the
writers from ``tests.traps.data``; nothing to register.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# Every judged case of this pytest session, in order: (module, name, family, kind, outcome, detail).
OUTCOMES: list[dict[str, Any]] = []

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")


@dataclass
class Figure:
    """What the tools answered (``got``; ``None``: no figure) and the right answer, within ``rel``/``abs``."""

    got: Any
    expected: Any
    rel: float = 1e-3
    abs: float = 0.0

    def right(self) -> bool:
        if self.got is None:
            return False
        if isinstance(self.expected, (int, float)) and not isinstance(self.expected, bool):
            try:
                got = float(self.got)
            except (TypeError, ValueError):
                return False
            return math.isclose(got, float(self.expected), rel_tol=self.rel, abs_tol=self.abs)
        return self.got == self.expected


@dataclass
class Session:
    """Calls the tools as an MCP client does; keeps every text they returned (for the judge)."""

    tools: Any  # McpTools
    project: Any  # QgsProject
    tmp: Path
    texts: list[str] = field(default_factory=list)

    def call(self, tool: str, /, **arguments: Any) -> str:
        """One tool call through ``McpTools.call`` on a worker thread (the Qt loop runs meanwhile); its text."""
        from tests.support.runs import call_in_thread

        answer = call_in_thread(lambda: asyncio.run(self.tools.call(tool, arguments, "traps")))
        text = ("Error: " if answer.is_error else "") + answer.text
        self.texts.append(text)
        return text

    def load(self, path: Path, **arguments: Any) -> str:
        return self.call("load_data", source=str(path), **arguments)

    def run(self, algorithm: str, output_name: str = "", **parameters: Any) -> str:
        return self.call("run_algorithm", algorithm=algorithm, parameters=parameters, output_name=output_name)

    def rows(self, layer: str, fields: list[str] | None = None, expression: str = "") -> list[dict[str, str]]:
        """The rows ``read_features`` gives (cells as text); ``[]`` when it gave an error or no table."""
        arguments: dict[str, Any] = {"layer": layer, "limit": 50}
        if fields:
            arguments["fields"] = fields
        if expression:
            arguments["expression"] = expression
        return table(self.call("read_features", **arguments))

    def values(self, layer: str, field_name: str, expression: str = "") -> list[float | None]:
        """A field's cells as numbers (a header may carry the unit: ``m (m², ellipsoidal on GRS 1980)``)."""
        rows = self.rows(layer, [field_name], expression)
        return [number(_cell_of(row, field_name)) for row in rows]

    def total(self, layer: str, field_name: str) -> float | None:
        """The sum of a numeric field as read back (``None`` if any cell is not a number)."""
        found = self.values(layer, field_name)
        if not found or any(v is None for v in found):
            return None
        return sum(v for v in found if v is not None)

    def measured(self, layer: str, formula: str, output: str = "measured") -> float | None:
        """``formula`` (``$area``...) per feature with the field calculator, summed as read back."""
        self.run(
            "native:fieldcalculator",
            output_name=output,
            INPUT=layer,
            FIELD_NAME="m",
            FIELD_TYPE=0,
            FIELD_LENGTH=20,
            FIELD_PRECISION=6,
            FORMULA=formula,
        )
        return self.total(output, "m")

    def text(self) -> str:
        return "\n".join(self.texts)


def table(text: str) -> list[dict[str, str]]:
    """The first Markdown table in ``text`` as dicts by header."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    if len(lines) < 2:
        return []
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=False)))
    return rows


def _cell_of(row: dict[str, str], field_name: str) -> str:
    for header, cell in row.items():
        if header == field_name or header.startswith(field_name + " ("):
            return cell
    return ""


def number(text: str) -> float | None:
    """The first number in ``text`` (thousands commas allowed), or ``None``."""
    found = _NUMBER.search(text or "")
    return float(found.group().replace(",", "")) if found else None


def numbers_after(text: str, label: str) -> float | None:
    """The first number after ``label`` in ``text`` (e.g. ``"mean"``), or ``None``."""
    at = text.find(label)
    return None if at < 0 else number(text[at + len(label) :])


def judge(kind: str, figure: Figure, text: str, warns: str) -> str:
    named = re.search(warns, text, re.IGNORECASE) is not None
    if kind == "twin":
        if named:
            return "false-alarm"
        return "complete" if figure.right() else "miss"
    if figure.right():
        return "right"
    if named:
        return "warned"
    return "silent" if figure.got is not None else "unnamed"


PASSING = {"right", "warned", "complete"}


def trap(
    family: str, warns: str, trap_fails: str = "", twin_fails: str = ""
) -> Callable[[Callable[[Session, bool], Figure]], Callable[..., None]]:
    """Make ``case(s, defect) -> Figure`` a pytest test run as a trap and as its twin (see the module docstring)."""

    def wrap(case: Callable[[Session, bool], Figure]) -> Callable[..., None]:
        params = [
            pytest.param("trap", marks=[pytest.mark.xfail(strict=True, reason=trap_fails)] if trap_fails else []),
            pytest.param("twin", marks=[pytest.mark.xfail(strict=True, reason=twin_fails)] if twin_fails else []),
        ]

        @pytest.mark.parametrize("kind", params)
        def test(kind: str, trap_session: Session) -> None:
            figure = case(trap_session, kind == "trap")
            text = trap_session.text()
            outcome = judge(kind, figure, text, warns)
            OUTCOMES.append(
                {
                    "case": f"{case.__module__.rsplit('.', 1)[-1]}::{case.__name__}",
                    "family": family,
                    "kind": kind,
                    "outcome": outcome,
                    "got": figure.got if isinstance(figure.got, (int, float, str, type(None))) else str(figure.got),
                    "expected": figure.expected,
                    "said": text[-2000:],
                }
            )
            assert outcome in PASSING, (
                f"{kind} {outcome}: got {figure.got!r}, expected {figure.expected!r}; the tools said:\n{text[-3000:]}"
            )

        test.__name__ = case.__name__
        test.__qualname__ = case.__qualname__
        test.__doc__ = case.__doc__
        test.__module__ = case.__module__
        test.family = family  # type: ignore[attr-defined]
        return test

    return wrap


def summary(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """The two figures (silent-error rate over traps, completion over twins) and the counts per family."""
    traps = [o for o in outcomes if o["kind"] == "trap"]
    twins = [o for o in outcomes if o["kind"] == "twin"]
    silent = sum(o["outcome"] == "silent" for o in traps)
    passed = sum(o["outcome"] in PASSING for o in traps)
    complete = sum(o["outcome"] == "complete" for o in twins)
    families: dict[str, dict[str, int]] = {}
    for o in outcomes:
        entry = families.setdefault(o["family"], {"traps": 0, "silent": 0, "twins": 0, "complete": 0})
        if o["kind"] == "trap":
            entry["traps"] += 1
            entry["silent"] += o["outcome"] == "silent"
        else:
            entry["twins"] += 1
            entry["complete"] += o["outcome"] == "complete"
    return {
        "traps": len(traps),
        "silent_errors": silent,
        "silent_error_rate": round(silent / len(traps), 4) if traps else None,
        "traps_passed": passed,
        "twins": len(twins),
        "twins_complete": complete,
        "twin_completion": round(complete / len(twins), 4) if twins else None,
        "project": "bare (no CRS, no ellipsoid), tools called as the MCP server calls them",
        "families": families,
        "cases": outcomes,
    }


def summary_line(figures: dict[str, Any]) -> str:
    return (
        f"Traps: silent errors {figures['silent_errors']}/{figures['traps']} "
        f"({100 * (figures['silent_error_rate'] or 0):.1f} %, goal 0); "
        f"traps passed {figures['traps_passed']}/{figures['traps']}; "
        f"twins completed {figures['twins_complete']}/{figures['twins']} "
        f"({100 * (figures['twin_completion'] or 0):.1f} %, goal 100 %)"
    )
