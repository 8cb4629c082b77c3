"""A saved PostgreSQL connection's table as a layer: ``connection.schema.table`` (catalogue read on the worker).

The connection is one the user saved in QGIS and enabled for GeoGPT
(``tools/postgis/connections``); the layer is QGIS's postgres provider on the
table itself, as the Browser would add it, never a copy and never a query.
"""

from __future__ import annotations

from geogpt_qgis.core.artifacts import TableRef
from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.load_plan import VECTOR, LoadPlan
from geogpt_qgis.tools.postgis.connections import SavedConnection
from geogpt_qgis.tools.postgis.database import Database


def split_table_source(source: str, connections: list[str]) -> tuple[str, str, str] | None:
    """``(connection, schema, table)`` when ``source`` starts with a saved connection's name and a dot."""
    for name in sorted(connections, key=len, reverse=True):  # "a.b" before "a"
        if source.startswith(name + ".") and len(source) > len(name) + 1:
            schema, _, table = source[len(name) + 1 :].rpartition(".")
            return name, schema or "public", table
    return None


def table_plan(
    saved: SavedConnection, schema: str, table: str, name: str, cancel: CancelToken, timeout: float
) -> LoadPlan:
    """Check the table exists and is readable, find its geometry column and key, and plan its layer."""
    from qgis.core import QgsDataSourceUri

    with Database(saved, cancel, timeout) as db:
        readable = db.readable_tables()
        wanted = f"{schema}.{table}"
        if wanted not in readable:
            bare = [t for t in readable if t.startswith(f"{schema}.")] or readable
            raise ToolError(f"connection {saved.name!r}: " + did_you_mean(wanted, bare, "table"))
        geometries = db.rows(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "WHERE a.attrelid = (quote_ident(%s) || '.' || quote_ident(%s))::regclass "
            "AND a.attnum > 0 AND NOT a.attisdropped "
            "AND format_type(a.atttypid, NULL) IN ('geometry', 'geography') ORDER BY a.attnum",
            [schema, table],
        )
        keys = db.rows(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = (quote_ident(%s) || '.' || quote_ident(%s))::regclass AND i.indisprimary",
            [schema, table],
        )
    uri = QgsDataSourceUri(saved.uri)
    geometry = geometries[0][0] if geometries else None
    uri.setDataSource(schema, table, geometry, "", ",".join(k[0] for k in keys))
    notes = [f"From the table {wanted} of the saved connection {saved.name!r} (linked, not copied)."]
    if len(geometries) > 1:
        notes.append(f"Geometry column {geometry!r} of {', '.join(g[0] for g in geometries)}.")
    return LoadPlan(
        VECTOR,
        "postgres",
        uri.uri(False),
        name or table,
        f"{wanted} ({saved.name})",
        notes=tuple(notes),
        tables=(TableRef.named(wanted, saved.name),),
    )
