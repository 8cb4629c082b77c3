"""Bounds on a whole tool call as the model server sends it, checked before any client library parses it.

Kept apart from ``core.bounds`` (which builds pydantic types) so that the HTTP transports under the model
clients (``agent.call_arguments``) import nothing beyond the standard library: the dock's server picker
loads them in environments that have no pydantic (the Qt 6 smoke test's venv).  Qt-free.
"""

from __future__ import annotations

import math
from typing import Any

CODE_CHARS = 20_000  # a PyQGIS snippet or SQL statement (~5,000 tokens: more than any model writes in one call)

# More than any tool reads, far less than can hurt a parser.
CALL_TEXT_CHARS = CODE_CHARS  # one text anywhere in a call's arguments (no tool reads a longer one)
CALL_CHARS = 100_000  # all of one call's arguments together, as JSON text
CALL_DEPTH = 32  # levels of objects and lists (a tool reads NESTED_DEPTH; Python's parsers fail near 1,000)
CALL_DIGITS = 18  # digits of an integer: beyond 64 bits the conversation's store cannot hold it (msgpack)
# The one argument of a call whose arguments were not read (``arguments_problem`` says why); the toolkit
# answers it with that reason and runs nothing.
REFUSED_ARGUMENTS = "(arguments not read)"


def arguments_problem(arguments: Any) -> str | None:
    """Why a tool call's decoded arguments are too large or too deep to be read, with the size and the bound.

    ``None`` when they are within ``CALL_TEXT_CHARS``, ``CALL_CHARS``,
    ``CALL_DEPTH`` and ``CALL_DIGITS``.  Walked without recursion, so any depth
    the JSON parser could build is measured.
    """
    pending: list[tuple[Any, int, str]] = [(arguments, 0, "")]
    total = 0
    while pending:
        item, depth, where = pending.pop()
        if depth > CALL_DEPTH:
            return f"{_path(where)} is nested more than {CALL_DEPTH} levels deep; at most {CALL_DEPTH} are read"
        if isinstance(item, str):
            total += len(item)
            if len(item) > CALL_TEXT_CHARS:
                return f"{_path(where)} is {len(item):,} characters; at most {CALL_TEXT_CHARS:,} are read"
        elif isinstance(item, dict):
            for key, value in item.items():
                name = str(key)
                if len(name) > CALL_TEXT_CHARS:
                    return f"an argument name is {len(name):,} characters; at most {CALL_TEXT_CHARS:,} are read"
                total += len(name) + 4
                shown = name if len(name) <= 40 else name[:39] + "…"
                pending.append((value, depth + 1, f"{where}.{shown}" if where else shown))
        elif isinstance(item, list):
            total += len(item) + 2
            pending.extend((value, depth + 1, f"{where}[{index}]") for index, value in enumerate(item))
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 10**CALL_DIGITS:
            return f"{_path(where)} is an integer of {_digits(item)} digits; at most {CALL_DIGITS} are read"
        elif isinstance(item, float) and not math.isfinite(item):
            # Python's JSON reads Infinity and NaN; the next request to the model could not be written with them.
            return f"{_path(where)} is {item}; only finite numbers are read"
        else:
            total += 8  # a number, true, false or null
        if total > CALL_CHARS:
            return f"the arguments are more than {CALL_CHARS:,} characters in all; at most {CALL_CHARS:,} are read"
    return None


def _digits(number: int) -> str:
    try:
        return f"{len(str(abs(number))):,}"
    except ValueError:  # more than Python converts to text (sys.get_int_max_str_digits)
        return "thousands of"


def _path(where: str) -> str:
    """Where in the arguments, shortened from the middle (a deep path repeats itself)."""
    if not where:
        return "the arguments"
    return where if len(where) <= 80 else f"{where[:40]}…{where[-39:]}"
