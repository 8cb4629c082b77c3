"""Describe attribute values the way an analyst needs them, from a bounded sample.

Text fields get their most common values with their share
(``type: primary 62.1%, secondary 31.0%``); numeric fields their range and mean;
near-unique text fields a few examples.  Pure Python: the caller converts
QGIS NULLs to ``None`` before handing values over.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.core.text import short

TOP_VALUES = 6
MAX_VALUE_CHARS = 40


@dataclass(frozen=True)
class FieldSummary:
    """What the sample says about one field."""

    name: str
    type_name: str
    line: str


def _fmt_number(value: float) -> str:
    return plain_number(value)  # 15,381,700 and 0.000123, never 1.538e+07


def _clip(value: object) -> str:
    return short(value, MAX_VALUE_CHARS)  # one line: values are data from whoever made the layer


def summarize_values(values: Sequence[object]) -> str:
    """One line describing a column of sampled values (``None`` is null)."""
    present = [v for v in values if v is not None and v != ""]
    nulls = len(values) - len(present)
    null_note = f"; {nulls / len(values):.0%} null" if values and nulls else ""
    if not present:
        return "all null in sample"
    if all(isinstance(v, bool) for v in present):
        counts = Counter(present)
        return ", ".join(f"{k} {c / len(present):.1%}" for k, c in counts.most_common()) + null_note
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        numbers = [float(v) for v in present]  # type: ignore[arg-type]
        distinct = len(set(numbers))
        if distinct <= TOP_VALUES and len(numbers) >= 2 * distinct:
            return _top_values(present, len(present)) + null_note
        mean = sum(numbers) / len(numbers)
        return f"min {_fmt_number(min(numbers))}, max {_fmt_number(max(numbers))}, mean {_fmt_number(mean)}{null_note}"
    if all(isinstance(v, (dt.date, dt.datetime, dt.time)) for v in present):
        ordered = sorted(present)  # type: ignore[type-var]
        return f"from {ordered[0]} to {ordered[-1]}{null_note}"
    texts = [str(v) for v in present]
    distinct = len(set(texts))
    if distinct > max(TOP_VALUES, len(texts) // 2):
        examples = ", ".join(repr(_clip(t)) for t in list(dict.fromkeys(texts))[:3])
        return f"{distinct:,} distinct of {len(texts):,} (e.g. {examples}){null_note}"
    return _top_values(texts, len(texts)) + (f" ({distinct} distinct)" if distinct > TOP_VALUES else "") + null_note


def _top_values(values: Iterable[object], total: int) -> str:
    counts = Counter(values)
    parts = [f"{_clip(value)} {count / total:.1%}" for value, count in counts.most_common(TOP_VALUES)]
    return ", ".join(parts)


def summarize_fields(
    names: Sequence[str], type_names: Sequence[str], rows: Sequence[Sequence[object]]
) -> list[FieldSummary]:
    """Summaries for each field; ``rows`` are attribute tuples in field order."""
    summaries = []
    for index, (name, type_name) in enumerate(zip(names, type_names, strict=False)):
        column = [row[index] for row in rows]
        summaries.append(FieldSummary(name, type_name, summarize_values(column)))
    return summaries
