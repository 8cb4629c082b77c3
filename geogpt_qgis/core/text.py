"""Text budgets and compact formatting for what tools return to the model."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from geogpt_qgis.core.numbers import exact_number

TOOL_RESULT_MAX_CHARS = 3500
TOOL_RESULT_MAX_TOKENS = 1000  # estimated; no single tool result may cost more
NAME_MAX_CHARS = 80  # a layer, field, project or collection name as the model is shown it
# Unicode categories that break a line or hide text: controls, format characters (bidi overrides,
# zero-width), line and paragraph separators, private use, unassigned.
_BREAKING = ("Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs")


def truncate(text: str, limit: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Cut ``text`` to ``limit`` characters at a line break, saying how much was left out."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    dropped = len(text) - cut
    return text[:cut].rstrip() + f"\n… ({dropped:,} more characters not shown)"


def bound_tokens(text: str, max_tokens: int = TOOL_RESULT_MAX_TOKENS) -> str:
    """``text`` cut (at a line break, saying so) until its estimated tokens are at most ``max_tokens``.

    Every tool result passes through here: one long table must not crowd a
    small local model's window.
    """
    from geogpt_qgis.core.tokens import estimate_tokens

    text = truncate(text)
    tokens = estimate_tokens(text)
    limit = len(text)
    while tokens > max_tokens and limit > 200:
        limit = int(limit * max_tokens / tokens * 0.95)
        cut = truncate(text, limit)
        tokens = estimate_tokens(cut)
        if tokens <= max_tokens:
            return cut
    return text


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A compact Markdown table; pipes inside cells are escaped."""

    def cell(value: object) -> str:
        return single_line(value).replace("|", "\\|")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def single_line(value: object) -> str:
    """``value`` as text on one line: line breaks, control and invisible format characters become spaces."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(" " if unicodedata.category(ch) in _BREAKING else ch for ch in text)


def short(value: object, limit: int = 60) -> str:
    """One value as a short single-line string."""
    text = single_line(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stored_text(value: object, limit: int = 40) -> str:
    """A field's value as stored (1234567.89, never 1.23457e+06 or 1,234,567.89): the model copies it into filters."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return exact_number(value)
    return short(value, limit)


def quoted(name: object, limit: int = NAME_MAX_CHARS) -> str:
    """A name from the data (layer, field, project, collection) as quoted, single-line, bounded data.

    Names are chosen by whoever made the data, and a name placed in a prompt
    must not read as an instruction: a name with line breaks could start a
    line of its own (``SYSTEM: ...``).  So every name that reaches a prompt
    goes through here: runs of whitespace and control characters become one
    space, long names are cut (``…``), and the result is quoted like a Python
    string literal (quotes inside are escaped), so it is plainly a value.
    """
    text = " ".join(single_line(name).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 feature``, ``0 features``, ``1,234 features``; a negative count is unknown (``an unknown number of``)."""
    if count < 0:
        return f"an unknown number of {plural or noun + 's'}"
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def format_arguments(args: Mapping[str, Any]) -> str:
    """``layer="schools", visible=true``: a tool call's arguments on one short line."""
    return ", ".join(f"{key}={short(json.dumps(value, ensure_ascii=False), 40)}" for key, value in args.items())
