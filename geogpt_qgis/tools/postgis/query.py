"""Run one read-only query: check it, preview it, count it, and plan the layer made from it (worker thread).

The statement is classified first (``tools/safety/sql.py``: PostgreSQL's own
grammar, one plain read, no function that acts outside the query); then
PostgreSQL checks names while describing the result (``LIMIT 0``), so errors
are reported before any work is done.  The preview is the first rows only; the
count stops at the row cap; a geometry result is copied once, on a read-only
session, into a GeoPackage layer (``layers.py``), so reading the layer never
runs the query again.
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from geogpt_qgis.core.figures import Figure
from geogpt_qgis.core.numbers import SQL_DIGITS, sql_number
from geogpt_qgis.core.text import markdown_table, short
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.measures import measure_figures
from geogpt_qgis.tools.postgis.sql_text import as_text, compose, embedded, ident, join, literal
from geogpt_qgis.tools.safety.sql import Classified

if TYPE_CHECKING:
    from psycopg.sql import Composable

_FAMILIES = {"POINT": "point", "LINESTRING": "line", "POLYGON": "polygon"}


@dataclass
class GeometryColumn:
    """The result's geometry: which column, and what the layer must declare."""

    column: str
    srid: int
    wkb_type: str  # e.g. MULTIPOLYGON
    expression: str  # SQL for the layer's geometry column (casts, ST_Multi)
    layer_column: str


@dataclass
class QueryResult:
    statement: str
    columns: list[str]  # unique (a, a_2...)
    preview: list[tuple[Any, ...]]
    total: int
    capped: bool
    row_cap: int
    geometry: GeometryColumn | None
    notes: list[str]
    extent: tuple[float, float, float, float] | None = None
    spatial: list[str] | None = None  # every geometry or geography column of the result
    figures: tuple[Figure, ...] = ()  # measure columns (ST_Area...) with their unit and method

    def layer_sql(self) -> str:
        """The query whose rows become the layer: one geometry column, unique field names, capped like the count.

        Columns are renamed by position (``q(a, a_2)``), so duplicate names in
        the user's query cannot clash; other geometry columns travel as WKT.
        """
        names = self.columns  # already unique (run_query renames by position)
        spatial = set(self.spatial or [])
        chosen = self.geometry.column if self.geometry else None
        parts: list[Composable] = []
        for name in names:
            if name == chosen and self.geometry:
                geometry = self.geometry
                parts.append(compose("{} AS {}", embedded(geometry.expression), ident(geometry.layer_column)))
            elif name in spatial:
                parts.append(compose("ST_AsText(q.{name}::geometry) AS {name}", name=ident(name)))
            else:
                parts.append(compose("q.{}", ident(name)))
        limit = compose(" LIMIT {}", literal(self.row_cap)) if self.capped else compose("")
        aliases = join(", ", [ident(n) for n in names])
        query = compose("SELECT {} FROM ({}\n) AS q({}){}", join(", ", parts), embedded(self.statement), aliases, limit)
        return as_text(query)


def unique_names(columns: list[str]) -> list[str]:
    """``[a, a, b]`` -> ``[a, a_2, b]`` (case-insensitively, as GeoPackage field names compare)."""
    taken: set[str] = set()
    names = []
    for column in columns:
        name, number = column or "column", 2
        while name.lower() in taken:
            name = f"{column}_{number}"
            number += 1
        taken.add(name.lower())
        names.append(name)
    return names


def modified_tables(plan: Any) -> list[tuple[str, float]]:
    """``(schema.table, estimated rows)`` for each table an EXPLAIN (FORMAT JSON) plan writes to."""
    found: list[tuple[str, float]] = []
    if isinstance(plan, dict):
        if plan.get("Node Type") == "ModifyTable":
            table = f"{plan.get('Schema', '')}.{plan.get('Relation Name', '?')}".lstrip(".")
            rows = next((p.get("Plan Rows", 0) for p in plan.get("Plans", [])), plan.get("Plan Rows", 0))
            found.append((table, rows))
        for value in plan.values():
            found += modified_tables(value)
    elif isinstance(plan, list):
        for item in plan:
            found += modified_tables(item)
    return found


def estimated_writes(db: Database, statement: Classified) -> list[tuple[str, float]]:
    """Tables an INSERT/UPDATE/DELETE/MERGE (or a writing CTE) would change, with PostgreSQL's row estimates.

    Only plans, never executes: one parsed statement, prefixed with EXPLAIN
    (no ANALYZE), sent as one prepared statement in a READ ONLY transaction
    that is rolled back.  Statements EXPLAIN cannot plan get no estimate.
    """
    if not statement.dml:
        return []
    explain = compose("EXPLAIN (FORMAT JSON) {}", embedded(statement.text))
    offset = len("EXPLAIN (FORMAT JSON) ")  # where the statement starts, for a syntax error's position
    plan = db.execute(explain, statement=statement.text, offset=offset).fetchone()[0]
    return modified_tables(plan)


def run_query(db: Database, sql: str, preview_rows: int, row_cap: int) -> QueryResult:
    found = db.check_read(sql)
    statement = found.text
    if found.kind in ("SHOW", "EXPLAIN"):
        cursor = db.execute(statement, statement=statement)
        rows = cursor.fetchmany(preview_rows)
        return QueryResult(statement, [d[0] for d in cursor.description], rows, len(rows), False, row_cap, None, [])
    # PostgreSQL describes the result without producing rows: names are checked first.
    described = compose("SELECT * FROM ({}\n) q LIMIT 0", embedded(statement))
    cursor = db.execute(described, statement=statement, offset=len("SELECT * FROM ("))
    # Columns renamed by position (a, a_2), so duplicate names in the query cannot be ambiguous.
    columns = unique_names([d[0] for d in cursor.description])
    source = compose("({}\n) AS q({})", embedded(statement), join(", ", [ident(c) for c in columns]))
    types = dict(db.rows("SELECT oid, typname FROM pg_type WHERE typname IN ('geometry', 'geography')"))
    spatial = [(c, types[d[1]]) for c, d in zip(columns, cursor.description, strict=True) if d[1] in types]
    notes = []
    if len(spatial) > 1:
        notes.append(f"the result has {len(spatial)} geometry columns; the layer uses {spatial[0][0]!r}")
    previews = [
        compose("GeometryType(q.{n}::geometry) || ' (SRID ' || ST_SRID(q.{n}::geometry) || ')'", n=ident(name))
        if name in dict(spatial)
        else compose("q.{}", ident(name))
        for name in columns
    ]
    preview = db.execute(
        compose("SELECT {} FROM {} LIMIT {}", join(", ", previews), source, literal(int(preview_rows))),
        statement=statement,
    ).fetchall()
    figures = measure_figures(db, found.tree, columns, found.tables)  # ST_Area & co.: their unit and method
    notes += [figure.label for figure in figures]
    geometry, extent = None, None
    bounded = compose("FROM {} LIMIT {}", source, literal(int(row_cap) + 1))
    if spatial:
        name, kind = spatial[0]
        value = compose("q.{}::geometry" if kind == "geography" else "q.{}", ident(name))
        index = columns.index(name)
        declared = _declared_geometry(db, cursor.pgresult.ftable(index), cursor.pgresult.ftablecol(index))
        zm = 0  # ST_Zmflag: 0 2D, 1 M, 2 Z, 3 ZM (a declared type names its own)
        if declared:
            # A table column typed geometry(Point, 25832): one SRID and one type by construction.
            total, box = db.rows(
                compose("SELECT count(*), ST_Extent(g)::box2d::text FROM (SELECT {} AS g {}) s", value, bounded)
            )[0]
            srids, kinds = ([declared[0]], [declared[1]]) if total else ([], [])
        else:
            # A computed geometry: one pass of plain aggregates (no DISTINCT sort) finds mixtures.
            total, low_srid, high_srid, low_type, high_type, box, zm = db.rows(
                compose(
                    "SELECT count(*), min(ST_SRID(g)), max(ST_SRID(g)), min(GeometryType(g)), max(GeometryType(g)), "
                    "ST_Extent(g)::box2d::text, max(ST_Zmflag(g)) FROM (SELECT {} AS g {}) s",
                    value,
                    bounded,
                )
            )[0]
            kinds = [k for k in {low_type, high_type} if k]
            if low_type != high_type:
                kinds = [
                    k
                    for (k,) in db.rows(
                        compose("SELECT DISTINCT GeometryType(g) FROM (SELECT {} AS g {}) s", value, bounded)
                    )
                    if k
                ]
            srids = sorted({srid for srid in (low_srid, high_srid) if srid is not None})
        geometry = _plan_geometry(name, kind, value, srids, kinds)
        if geometry and zm:
            # GeometryType() names M (POINTM) but never Z: without this a 3D point became a 2D layer's point.
            geometry = replace(geometry, wkb_type=_with_dimensions(geometry.wkb_type, zm))
            if zm in (2, 3):
                notes.append(f"the geometries of {name!r} have Z values (heights); the layer keeps them")
        extent = _parse_box(box)
    else:
        total = db.rows(compose("SELECT count(*) FROM (SELECT 1 {}) s", bounded))[0][0]
    capped = total > row_cap
    names = [n for n, _k in spatial]
    shown = min(total, row_cap)
    return QueryResult(
        statement, columns, preview, shown, capped, row_cap, geometry, notes, extent, names, tuple(figures)
    )


def _declared_geometry(db: Database, table: int, attnum: int) -> tuple[int, str] | None:
    """``(srid, TYPE)`` when the result column is a table column declared with both, else ``None``."""
    if not table or not attnum:
        return None
    found = db.rows(
        "SELECT postgis_typmod_srid(atttypmod), upper(postgis_typmod_type(atttypmod)) FROM pg_attribute "
        "WHERE attrelid = %s AND attnum = %s AND atttypmod > 0",
        [table, attnum],
    )
    if not found or not found[0][0] or found[0][1] in (None, "GEOMETRY", "GEOMETRYCOLLECTION", "GEOGRAPHY"):
        return None
    srid, kind = found[0]
    return srid, kind


def _with_dimensions(kind: str, zm_flag: int) -> str:
    """``POINT`` or ``POINTM`` with ST_Zmflag 2 -> ``POINTZ``; 3 -> ``POINTZM`` (the type a layer declares)."""
    base = kind.removesuffix("M") if zm_flag in (1, 3) else kind
    return base + {0: "", 1: "M", 2: "Z", 3: "ZM"}[zm_flag]


def _parse_box(box: str | None) -> tuple[float, float, float, float] | None:
    """``BOX(1 2,3 4)`` -> (1, 2, 3, 4)."""
    if not box:
        return None
    numbers = box[box.find("(") + 1 : box.rfind(")")].replace(",", " ").split()
    xmin, ymin, xmax, ymax = (float(n) for n in numbers)
    return xmin, ymin, xmax, ymax


def _plan_geometry(
    name: str, kind: str, value: Composable, srids: list[int], kinds: list[str]
) -> GeometryColumn | None:
    if not srids:
        return None  # no geometries at all: nothing to map
    if len(srids) > 1:
        listed = " and ".join(str(s) for s in sorted(srids))
        raise ToolError(
            f"the geometry column {name!r} mixes SRIDs {listed}; a layer needs one: "
            f"use ST_Transform({name}, {sorted(srids)[-1]}) (or filter on ST_SRID)"
        )
    srid = srids[0]
    if srid == 0:
        raise ToolError(f"the geometries in {name!r} have no SRID (0); set it with ST_SetSRID({name}, <EPSG code>)")
    families = {_FAMILIES.get(k.removeprefix("MULTI"), k) for k in kinds}
    if len(families) > 1:
        raise ToolError(
            f"the geometry column {name!r} mixes {', '.join(sorted(kinds))}; a layer holds one kind: "
            "filter with GeometryType() or split the query"
        )
    wkb_type = sorted(kinds)[0] if len(kinds) == 1 else "MULTI" + next(iter(kinds)).removeprefix("MULTI")
    layer_column, expression = name, as_text(value)
    if len(kinds) > 1:  # single and multi parts together: the layer takes the multi type
        layer_column, expression = f"{name}_multi", as_text(compose("ST_Multi({})", value))
    elif kind == "geography":
        layer_column = f"{name}_geom"
    return GeometryColumn(name, srid, wkb_type, expression, layer_column)


def run_write(db: Database, statement: Classified, preview_rows: int) -> str:
    """Run an approved write (one parsed statement, extended protocol) and commit it; what PostgreSQL reports."""
    cursor = db.execute(statement.text, statement=statement.text)
    rows = cursor.fetchmany(preview_rows) if cursor.description else []
    status = cursor.statusmessage or "done"
    affected = cursor.rowcount
    db.commit()
    rows_note = f"; {affected:,} row{'s' if affected != 1 else ''} affected" if affected >= 0 else ""
    text = f"Done and committed: {status}{rows_note}."
    if rows:
        columns = [d[0] for d in cursor.description]
        text += "\n" + markdown_table(columns, [[_cell(v) for v in row] for row in rows])
    return text


def format_result(result: QueryResult) -> str:
    if result.capped:
        count = f"more than {result.row_cap:,} rows (capped at {result.row_cap:,}; refine the query)"
    else:
        count = f"{result.total:,} row{'s' if result.total != 1 else ''}"
    head = f"{count}; first {len(result.preview)}:" if result.total > len(result.preview) else f"{count}:"
    if not result.preview:
        return f"{count}."
    table = markdown_table(result.columns, [[_cell(v) for v in row] for row in result.preview])
    lines = [head, table, *(f"Note: {note}" for note in result.notes)]
    rounded = [
        name
        for index, name in enumerate(result.columns)
        if any(sql_number(row[index])[1] for row in result.preview if isinstance(row[index], decimal.Decimal))
    ]
    if rounded:
        lines.append(
            f"Note: numeric values of {', '.join(map(repr, rounded))} with more than {SQL_DIGITS} significant "
            f"digits are rounded to {SQL_DIGITS}; to filter on one, compare with round(value, n)."
        )
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (float, decimal.Decimal)):
        # As stored (no exponent, commas or rounding: it can go back into SQL); a computed numeric's
        # endless digits (466.6666666666666667) rounded to SQL_DIGITS, which format_result says.
        return sql_number(value)[0]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, memoryview)):
        return "<binary>"
    return short(value, 50)
