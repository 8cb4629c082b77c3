"""The one way SQL text for PostgreSQL is put together: psycopg's ``sql`` module, never an f-string.

Names go in as ``sql.Identifier`` and values as ``sql.Literal`` or query
parameters, so a table called ``a"b`` or a name with a quote in it cannot end
a string or an identifier early.  Text that is already SQL (the model's
statement after the classifier, the table or filter of a QGIS layer) goes in
through ``embedded`` only, and every such composition is checked by
``Database.check_read`` (or was, as the statement it embeds) before it runs.
plugins.qgis.org's Bandit scan (B608) holds the rest of the package to it.

psycopg is imported when a statement is composed, not when this module is:
importing it costs about 0.3 s, paid by the first PostGIS call only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import LiteralString  # Python 3.11; QGIS on macOS may still run an older Python

    from psycopg.sql import SQL, Composable, Composed, Identifier, Literal


def compose(template: LiteralString, *parts: Any, **named: Any) -> Composed:
    """``template`` (fixed text in the code) with its ``{}`` filled by composables: names, literals, fragments."""
    from psycopg import sql

    return sql.SQL(template).format(*parts, **named)


def ident(*names: str) -> Identifier:
    """A quoted name; several make a dotted one (``schema.table``)."""
    from psycopg import sql

    return sql.Identifier(*names)


def literal(value: Any) -> Literal:
    """A value written into the text (for SQL that is shown or reused as text, where parameters cannot go)."""
    from psycopg import sql

    return sql.Literal(value)


def join(separator: LiteralString, parts: Sequence[Composable]) -> Composed:
    """The parts with ``separator`` between them (a list of names, of select items)."""
    from psycopg import sql

    return sql.SQL(separator).join(parts)


def embedded(text: str) -> SQL:
    """SQL text taken as it is: a statement the classifier passed, or a QGIS layer's own table or filter.

    The composition that holds it is classified again (``Database.check_read``)
    before it runs, the layer's own text included.
    """
    from psycopg import sql

    return sql.SQL(text)  # not a literal string: this function is the one door for such text


def as_text(query: Composable) -> str:
    """The composed text, for a layer's source or for the model (quoting needs no connection)."""
    return query.as_string(None)
