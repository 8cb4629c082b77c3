"""The one way SQL text for SQLite is put together: fixed text from the code with quoted names in it.

SQLite has no composition module like psycopg's ``sql``; names are its only
variable part here (values go as ``?`` parameters), so one quoter suffices:
double quotes, doubled inside, as the SQL standard and SQLite read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import LiteralString  # Python 3.11; QGIS on macOS may still run an older Python


def quote_name(name: str) -> str:
    """``a"b`` -> ``"a""b"``: a table or column name as SQLite reads it, whatever characters it holds."""
    return '"' + name.replace('"', '""') + '"'


def sqlite_query(template: LiteralString, *names: str | None) -> str:
    """``template`` with each ``{}`` filled by a quoted name, or by ``NULL`` where the name is ``None``."""
    return template.format(*("NULL" if name is None else quote_name(name) for name in names))


_INSERT_ROWS = "INSERT INTO {} ({}) VALUES {}"  # a table, its quoted column names, rows of ? parameters


def insert_rows(table: str, columns: Sequence[str], rows: int) -> str:
    """``INSERT INTO "t" ("a", "b") VALUES (?, ?), (?, ?)``: ``rows`` rows of bound values, several per statement."""
    row = "(" + ", ".join("?" * len(columns)) + ")"
    names = ", ".join(quote_name(column) for column in columns)
    return _INSERT_ROWS.format(quote_name(table), names, ", ".join([row] * rows))
