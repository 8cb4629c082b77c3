"""What is in a database, told from its catalogue and statistics (worker thread).

Tables, views, geometry columns with type and SRID, estimated row counts and
comments come from the system catalogue; the common values of columns come
from ``pg_stats`` (what ANALYZE gathered), or, for a table never analysed,
from a bounded sample.  Nothing here scans a whole table, so a 10-million-row
table is described in well under a second.
"""

from __future__ import annotations

import decimal
from collections import defaultdict
from typing import Any

from geogpt_qgis.core.field_stats import summarize_values
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.text import markdown_table, short, single_line
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.ranges import APPROXIMATE, ORDERED_TYPES, exact_ranges, range_text
from geogpt_qgis.tools.postgis.sql_text import compose, ident, join, literal

MAX_TABLES = 200
SAMPLE_ROWS = 10_000
TOP_VALUES = 6
# PostGIS's own bookkeeping tables are not the user's data.
POSTGIS_INTERNALS = frozenset(
    {"spatial_ref_sys", "geometry_columns", "geography_columns", "raster_columns", "raster_overviews"}
)
_KINDS = {"r": "table", "p": "table", "v": "view", "m": "materialized view", "f": "foreign table"}


def has_postgis(db: Database) -> bool:
    found: bool = db.rows("SELECT to_regclass('geometry_columns') IS NOT NULL")[0][0]
    return found


def list_tables(db: Database, schema: str = "") -> str:
    postgis = has_postgis(db)
    geometry_join = compose(
        "LEFT JOIN geometry_columns g ON g.f_table_schema = n.nspname AND g.f_table_name = c.relname"
        if postgis
        else "LEFT JOIN (SELECT NULL::name AS f_geometry_column, NULL::text AS type, NULL::int AS srid) g ON false"
    )
    where_schema = compose("AND n.nspname = %s" if schema else "")
    rows = db.rows(
        compose(
            "SELECT n.nspname, c.relname, c.relkind, c.reltuples::bigint, obj_description(c.oid, 'pg_class'), "
            "g.f_geometry_column, g.type, g.srid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "{} WHERE c.relkind IN ('r','v','m','f','p') "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%%' "
            "AND has_table_privilege(c.oid, 'SELECT') {} ORDER BY 1, 2 LIMIT {}",
            geometry_join,
            where_schema,
            literal(MAX_TABLES * 3),
        ),
        [schema] if schema else None,
    )
    tables: dict[tuple[str, str], dict[str, Any]] = {}
    for nsp, name, kind, estimate, comment, geom, geom_type, srid in rows:
        if name in POSTGIS_INTERNALS:
            continue
        entry = tables.setdefault(
            (nsp, name), {"kind": _KINDS.get(kind, kind), "rows": estimate, "comment": comment, "geoms": []}
        )
        if geom:
            entry["geoms"].append(f"{geom} ({geom_type}, SRID {srid})")
    if not tables:
        if schema:
            schemas = [
                s for (s,) in db.rows("SELECT nspname FROM pg_namespace WHERE has_schema_privilege(oid, 'USAGE')")
            ]
            raise ToolError(did_you_mean(schema, schemas, "schema"))
        return "No readable tables or views."
    shown = list(tables.items())[:MAX_TABLES]
    table_rows = [
        (
            f"{nsp}.{name}",
            info["kind"],
            "; ".join(info["geoms"]) or "-",
            _estimate(info["rows"], info["kind"]),
            short(info["comment"] or "", 60),
        )
        for (nsp, name), info in shown
    ]
    head = f"{len(tables)} tables and views" + (f" in schema {schema}" if schema else "")
    more = f' (first {MAX_TABLES}; tables=["schema.*"] lists one schema)' if len(tables) > MAX_TABLES else ""
    return f"{head}{more}:\n" + markdown_table(("table", "kind", "geometry", "rows (estimate)", "comment"), table_rows)


def _estimate(estimate: int | None, kind: str) -> str:
    if kind == "view":
        return "-"
    if estimate is None or estimate < 0:
        return "unknown (not analysed)"
    return f"~{estimate:,}"


def resolve_table(db: Database, name: str) -> tuple[int, str, str, str, int]:
    """``(oid, schema, table, kind, estimated rows)`` for a table name as the model wrote it."""
    cleaned = name.strip()
    try:
        oid = db.rows("SELECT to_regclass(%s)::oid", [cleaned])[0][0] if cleaned else None
    except ToolError:  # PostgreSQL could not read it as a name ("invalid name syntax")
        raise ToolError(
            f"{short(cleaned, 60)!r} is not a table name: write table or schema.table "
            "(describe_table without tables lists them)"
        ) from None
    if oid is None:
        tables = db.readable_tables()
        bare = {t.split(".", 1)[1]: t for t in tables}
        message = did_you_mean(cleaned.split(".")[-1], list(bare), "table or view")
        for short_name, full in bare.items():
            message = message.replace(f"'{short_name}'", f"'{full}'")
        raise ToolError(message)
    schema, table, kind, estimate = db.rows(
        "SELECT n.nspname, c.relname, c.relkind, c.reltuples::bigint FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s",
        [oid],
    )[0]
    return oid, schema, table, kind, estimate


def describe_table(db: Database, name: str) -> str:
    oid, schema, table, kind, estimate = resolve_table(db, name)
    comment = db.rows("SELECT obj_description(%s, 'pg_class')", [oid])[0][0]
    columns = db.rows(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, col_description(a.attrelid, a.attnum), "
        "t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        [oid],
    )
    primary = [
        r[0]
        for r in db.rows(
            "SELECT a.attname FROM pg_index i "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = %s AND i.indisprimary",
            [oid],
        )
    ]
    foreign = db.rows(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s AND contype = 'f'", [oid]
    )
    geometry = _geometry_info(db, schema, table) if has_postgis(db) else {}
    ranged = [c[0] for c in columns if c[4] in ORDERED_TYPES]
    stats = _column_stats(db, schema, table, ranged)
    spatial_types = {"geometry", "geography", "raster"}
    sampled: dict[str, str] = {}
    missing = [c[0] for c in columns if c[0] not in stats and c[4] not in spatial_types]
    if missing:
        sampled = _sample_summaries(db, schema, table, kind, estimate, missing)
    rows_label = _estimate(estimate, _KINDS.get(kind, kind))
    lines = [
        f"{_KINDS.get(kind, kind).capitalize()} {single_line(schema)}.{single_line(table)}: {rows_label} rows"
        + (f" — {short(comment, 300)}" if comment else "")  # names and comments are data: one line each
    ]
    if primary:
        lines.append(f"Primary key: {', '.join(primary)}")
    lines += [f"Foreign key {name}: {definition}" for name, definition in foreign]
    lines.append("Columns:")
    for column, type_name, not_null, column_comment, _base_type in columns:
        notes = ["not null"] if not_null else []
        if column in geometry:
            detail = geometry[column]
        elif column in stats:
            detail = stats[column]
        else:
            detail = sampled.get(column, "")
        note = f" ({', '.join(notes)})" if notes else ""
        remark = f" — {short(column_comment, 160)}" if column_comment else ""
        lines.append(f"- {single_line(column)}: {type_name}{note}{remark}" + (f": {detail}" if detail else ""))
    sources = ["values from the database's statistics"] if stats else []
    if sampled:
        sources.append(f"values sampled from up to {SAMPLE_ROWS:,} rows")
    if sources:
        lines.append(f"({'; '.join(sources).capitalize()}.)")
    return "\n".join(lines)


def _geometry_info(db: Database, schema: str, table: str) -> dict[str, str]:
    info = {}
    for column, geom_type, srid, dims in db.rows(
        "SELECT f_geometry_column, type, srid, coord_dimension FROM geometry_columns "
        "WHERE f_table_schema = %s AND f_table_name = %s",
        [schema, table],
    ):
        extent = db.rows("SELECT ST_EstimatedExtent(%s, %s, %s)::text", [schema, table, column])[0][0]
        where = f", extent ~{extent}" if extent else ""
        info[column] = f"{geom_type}, SRID {srid}, {dims}D{where}"
    return info


def _column_stats(db: Database, schema: str, table: str, ordered: list[str]) -> dict[str, str]:
    """Per column, what ANALYZE knows: common values with shares, null share; ranges read exactly.

    ``ordered``: columns of a type whose range means something (numbers, dates); with a
    histogram (text too), a column's range is its true min and max (``ranges``), or the
    histogram's bounds marked approximate when reading them would cost too much.
    """
    found = db.rows(
        "SELECT attname, null_frac, n_distinct, most_common_vals::text::text[], most_common_freqs, "
        "histogram_bounds::text::text[] FROM pg_stats WHERE schemaname = %s AND tablename = %s",
        [schema, table],
    )
    wanted = [row[0] for row in found if row[0] in ordered or row[5]]
    exact = exact_ranges(db, schema, table, wanted) if found else {}
    summaries = {}
    for column, null_frac, n_distinct, common, freqs, bounds in found:
        parts = []
        categorical = 0 < (n_distinct or 0) <= 50 or (common and freqs and sum(freqs) >= 0.2)
        if categorical and common and freqs:
            shares = ", ".join(
                f"{short(v, 30)} {f:.1%}" for v, f in list(zip(common, freqs, strict=False))[:TOP_VALUES]
            )
            covered = sum(freqs)
            parts.append(
                shares
                + (f" (others {1 - covered - (null_frac or 0):.1%})" if covered + (null_frac or 0) < 0.995 else "")
            )
        if exact is not None and column in exact and exact[column][0] is not None:
            parts.append(range_text(*exact[column]))
        elif bounds:
            parts.append(f"from {short(bounds[0], 30)} to {short(bounds[-1], 30)} ({APPROXIMATE})")
        if n_distinct:
            distinct = f"{int(n_distinct):,}" if n_distinct > 0 else f"~{-n_distinct:.0%} of rows"
            parts.append(f"distinct values: {distinct}")
        if null_frac:
            parts.append(f"{null_frac:.0%} null")
        if parts:
            summaries[column] = "; ".join(parts)
    return summaries


def _sample_summaries(
    db: Database, schema: str, table: str, kind: str, estimate: int, columns: list[str]
) -> dict[str, str]:
    """Summaries from a bounded sample (TABLESAMPLE on big tables; LIMIT on views)."""
    quoted = join(", ", [ident(c) for c in columns])
    sample = compose("")
    if kind in ("r", "m", "p") and estimate and estimate > SAMPLE_ROWS:
        percent = round(min(100.0, SAMPLE_ROWS * 100.0 / estimate), 6)
        sample = compose(" TABLESAMPLE SYSTEM ({})", literal(percent))
    rows = db.rows(compose("SELECT {} FROM {}{} LIMIT {}", quoted, ident(schema, table), sample, literal(SAMPLE_ROWS)))
    by_column: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            by_column[column].append(float(value) if isinstance(value, decimal.Decimal) else value)
    return {column: summarize_values(values) for column, values in by_column.items()}
