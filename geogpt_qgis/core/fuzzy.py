"""Closest-name suggestions for "did you mean ...?" messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MIN_SIMILARITY = 0.6
MARGIN = 0.12  # alternatives must be nearly as similar as the best match


def closest_names(name: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """The candidates most similar to ``name``, best first, case-insensitively.

    A candidate containing the name (or contained in it) counts as a near
    match (``school`` finds ``schools_near_rivers``); otherwise difflib's
    similarity decides.  Only candidates close to the best one are returned,
    so a clear winner is not drowned by weak alternatives.
    """
    if not name.strip():
        return []
    scored: list[tuple[float, str]] = []
    for candidate in dict.fromkeys(candidates):
        ratio = similarity(name, candidate)
        if ratio >= MIN_SIMILARITY:
            scored.append((ratio, candidate))
    if not scored:
        return []
    scored.sort(key=lambda item: (-item[0], item[1]))
    best = scored[0][0]
    return [candidate for ratio, candidate in scored if ratio >= best - MARGIN][:limit]


def similarity(name: str, candidate: str) -> float:
    """How alike two names are, 0 to 1, case-insensitively; one containing the other counts at least 0.9."""
    needle, lowered = name.lower().strip(), candidate.lower()
    ratio = difflib.SequenceMatcher(None, needle, lowered).ratio()
    if needle and (needle in lowered or lowered in needle):
        ratio = max(ratio, 0.9)
    return ratio


def did_you_mean(name: str, candidates: Iterable[str], what: str, limit: int = 3) -> str:
    """``no layer 'schol'; did you mean 'schools'?`` (or the valid names when nothing is close)."""
    pool = list(candidates)
    close = closest_names(name, pool, limit)
    if close:
        return f"no {what} {name!r}; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if not pool:
        return f"no {what} {name!r}; there are none"
    shown = ", ".join(repr(c) for c in pool[:12]) + (", ..." if len(pool) > 12 else "")
    return f"no {what} {name!r}; valid names: {shown}"
