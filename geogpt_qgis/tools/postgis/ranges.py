"""Exact column ranges for describe_table, at a bounded cost.

``pg_stats.histogram_bounds`` leave out the most common values: a column whose
minimum is also its most frequent value was described "from 120 to 935" when it
held 90, and the model copies a range it is given.  So the range is read with
``min``/``max`` (one scan for every column of the table at once, or an index
scan where PostgreSQL has one), under a short statement timeout inside a
savepoint: when that costs more than ``RANGE_TIMEOUT_MS`` the statistics' range
is given, marked approximate.  Worker thread.
"""

from __future__ import annotations

import contextlib
import decimal
from typing import Any

from geogpt_qgis.core.numbers import exact_number
from geogpt_qgis.core.text import short
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.sql_text import compose, ident, join

RANGE_TIMEOUT_MS = 2000
# Base types whose order is their value's: a range says something (text has one too, from its histogram).
ORDERED_TYPES = frozenset(
    {"int2", "int4", "int8", "float4", "float8", "numeric", "money", "date", "time", "timetz", "timestamp",
     "timestamptz", "interval"}
)  # fmt: skip
APPROXIMATE = "approximate, from the database's statistics, which leave out the most common values"


def exact_ranges(db: Database, schema: str, table: str, columns: list[str]) -> dict[str, tuple[Any, Any]] | None:
    """``{column: (min, max)}`` read from the table, or ``None`` when that would take too long."""
    if not columns:
        return {}
    items = join(", ", [compose("min({0}), max({0})", ident(column)) for column in columns])
    db.execute("SAVEPOINT geogpt_ranges")
    try:
        db.execute("SELECT set_config('statement_timeout', %s, true)", [str(min(RANGE_TIMEOUT_MS, db.timeout_ms))])
        row = db.rows(compose("SELECT {} FROM {}", items, ident(schema, table)))[0]
    except ToolError:  # the bounded scan timed out (or failed): the transaction goes back to before it
        # An error other than the timeout has already rolled the whole transaction back and restarted it.
        with contextlib.suppress(ToolError):
            db.execute("ROLLBACK TO SAVEPOINT geogpt_ranges")
        return None
    db.execute("SELECT set_config('statement_timeout', %s, true)", [str(db.timeout_ms)])
    db.execute("RELEASE SAVEPOINT geogpt_ranges")
    return {column: (row[2 * i], row[2 * i + 1]) for i, column in enumerate(columns)}


def range_text(low: Any, high: Any) -> str:
    """``from 90 to 935``: values as stored, so that they filter correctly when copied into SQL."""
    return f"from {_value(low)} to {_value(high)}"


def _value(value: Any) -> str:
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return exact_number(value)
    return short(value, 30)
