"""Places in PostGIS tables: trigram matching in the database, with a plain fallback (worker thread).

Tables qualify when they have a geometry column and a name-like text column.
With ``pg_trgm`` the database shortlists names by trigram similarity (and word
similarity, for "Søndre" in "Søndre Park Primary"), accent-insensitively with
``unaccent``; without the extensions the distinct names (up to a cap) are
read and matched in Python.  Either way the final ranking uses the same score
as project layers, so the two rank on one scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from geogpt_qgis.tools.insights.places.matching import NAME_FIELD_PATTERN, TYPE_FIELD_PATTERN
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.sql_text import as_text, compose, ident, literal

if TYPE_CHECKING:
    from psycopg.sql import Composable

FALLBACK_NAMES = 10_000  # distinct names read per table when pg_trgm is missing
SHORTLIST = 200  # names the database returns per table
FEATURES_PER_PLACE = 1000
# Accented letters folded without unaccent (one to one, as translate() needs).
_FOLDS = {
    "a": "àáâãäåā",
    "c": "çćč",
    "e": "èéêëēėę",
    "i": "ìíîïī",
    "n": "ñń",
    "o": "òóôõöøō",
    "u": "ùúûüū",
    "y": "ýÿ",
    "s": "š",
    "z": "ž",
    "l": "ł",
    "d": "đ",
}
_ACCENTED = "".join(_FOLDS.values())
_PLAIN = "".join(plain * len(accented) for plain, accented in _FOLDS.items())


@dataclass(frozen=True)
class NameTable:
    """A table with a geometry and a name column (``sql_name``: quoted for SQL use)."""

    schema: str
    table: str
    geometry: str
    srid: int
    name_column: str
    type_column: str
    rows: int

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def sql_name(self) -> Composable:
        return ident(self.schema, self.table)


def extensions(db: Database) -> set[str]:
    """Which of ``pg_trgm`` and ``unaccent`` the database has installed."""
    return {name for (name,) in db.rows("SELECT extname FROM pg_extension WHERE extname IN ('pg_trgm', 'unaccent')")}


def name_tables(db: Database) -> list[NameTable]:
    """Every readable table or view with a geometry column and a name-like text column."""
    column = compose(
        "(SELECT a.attname FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
        "AND a.atttypid IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype) AND a.attname ~* %s "
        "ORDER BY lower(a.attname) IN ('name', 'navn', 'type', 'class', 'kind') DESC, a.attnum LIMIT 1)"
    )
    rows = db.rows(
        compose(
            "SELECT g.f_table_schema, g.f_table_name, g.f_geometry_column, g.srid, {column}, {column}, "
            "greatest(c.reltuples, 0)::bigint FROM geometry_columns g "
            "JOIN pg_namespace n ON n.nspname = g.f_table_schema "
            "JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = g.f_table_name "
            "WHERE has_table_privilege(c.oid, 'SELECT') ORDER BY 1, 2",
            column=column,
        ),
        [NAME_FIELD_PATTERN, TYPE_FIELD_PATTERN],
    )
    return [
        NameTable(schema, table, geometry, int(srid or 0), name, kind or "", int(count or 0))
        for schema, table, geometry, srid, name, kind, count in rows
        if name
    ]


def _folded(column: Composable, available: set[str]) -> Composable:
    """SQL for a column lower-cased and without accents (unaccent if installed, else a translate table)."""
    lowered = compose("lower({})", column)
    if "unaccent" in available:
        return compose("unaccent({})", lowered)
    return compose("translate({}, {}, {})", lowered, literal(_ACCENTED), literal(_PLAIN))


def matching_names(
    db: Database, table: NameTable, queries: list[str], available: set[str]
) -> tuple[list[tuple[str, int, str]], bool]:
    """``(name, features, most common type)`` of the names worth scoring; and whether the list was cut short.

    ``queries`` are normalised names.  With ``pg_trgm`` the database keeps the
    names similar to any query (``%``) or containing one as words (``<%``).
    """
    name = ident(table.name_column)
    kind = (
        compose("mode() WITHIN GROUP (ORDER BY {})", ident(table.type_column)) if table.type_column else compose("''")
    )
    if "pg_trgm" in available:
        rows = db.rows(
            compose(
                "SELECT {name}, count(*), {kind} FROM {table} "
                "WHERE {folded} %% ANY(%s::text[]) OR EXISTS (SELECT 1 FROM unnest(%s::text[]) q WHERE q <%% {folded}) "
                "GROUP BY {name} ORDER BY max(greatest(similarity({folded}, %s), word_similarity(%s, {folded}))) DESC "
                "LIMIT {limit}",
                name=name,
                kind=kind,
                table=table.sql_name,
                folded=_folded(name, available),
                limit=literal(SHORTLIST),
            ),
            [queries, queries, queries[0], queries[0]],
        )
        return [(str(n), int(c), str(k or "")) for n, c, k in rows if n is not None], False
    rows = db.rows(
        compose(
            "SELECT {name}, count(*), {kind} FROM {table} WHERE {name} IS NOT NULL GROUP BY {name} LIMIT {limit}",
            name=name,
            kind=kind,
            table=table.sql_name,
            limit=literal(FALLBACK_NAMES + 1),
        )
    )
    capped = len(rows) > FALLBACK_NAMES
    return [(str(n), int(c), str(k or "")) for n, c, k in rows[:FALLBACK_NAMES]], capped


def feature_wkbs(db: Database, table: NameTable, name: str, srid: int) -> list[bytes]:
    """The geometries of the features called ``name``, as WKB in ``srid`` (the table's own when 0)."""
    geometry: Composable = ident(table.geometry)
    if srid and table.srid and srid != table.srid:
        geometry = compose("ST_Transform({}, {})", geometry, literal(int(srid)))
    rows = db.rows(
        compose(
            "SELECT ST_AsBinary({}) FROM {} WHERE {} = %s AND {} IS NOT NULL LIMIT {}",
            *(geometry, table.sql_name, ident(table.name_column), ident(table.geometry), literal(FEATURES_PER_PLACE)),
        ),
        [name],
    )
    return [bytes(wkb) for (wkb,) in rows if wkb is not None]


def subquery(table: NameTable, name: str) -> str:
    """SQL for the place's geometry, for use in run_sql: ``(SELECT ST_Union(geom) FROM ... WHERE name = '...')``."""
    query = compose(
        "(SELECT ST_Union({}) FROM {} WHERE {} = {})",
        *(ident(table.geometry), table.sql_name, ident(table.name_column), literal(name)),
    )
    return as_text(query)
