"""The PostGIS tool family: saved connections, their tables, SQL reads, and writes the user approves."""

from __future__ import annotations

from typing import Any

from qgis.core import QgsWkbTypes

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, gated
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.layers import add_result_layer
from geogpt_qgis.tools.postgis import catalog
from geogpt_qgis.tools.postgis.connections import (
    SavedConnection,
    allowed_connection_names,
    describe_connections,
    resolve_connection,
)
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.layers import query_layer
from geogpt_qgis.tools.postgis.query import (
    QueryResult,
    format_result,
    modified_tables,
    plan_of,
    run_query,
    run_write,
    single_statement,
    write_targets,
)
from geogpt_qgis.tools.postgis.sql_text import is_write_statement, referenced_tables
from geogpt_qgis.tools.processing.naming import slug

MAX_PREVIEW = 50
MAX_DESCRIBED = 5


class PostgisTools(ToolFamily):
    """Read-only SQL on the user's saved PostgreSQL/PostGIS connections."""

    name = "postgis"
    title = "PostGIS"
    summary = "list saved database connections and their tables, describe tables, run SQL (writes once approved)"
    prompt_hint = (
        "Databases: list_connections, list_tables, describe_table before writing SQL; run_sql runs one statement "
        "read-only (filter and aggregate in SQL; writes need write=true and the user's approval); a result with "
        "geometry becomes a layer backed by the query."
    )

    def _settings(self) -> Any:
        return PlgOptionsManager.get_plg_settings()

    def _allowed(self) -> list[str]:
        return allowed_connection_names(self._settings().postgis_connections)

    def unavailable_reason(self) -> str | None:
        try:
            import psycopg2  # noqa: F401 - only checks that it is there
        except ImportError:
            return "the psycopg2 Python package is missing"
        if not self._allowed():
            return "no saved PostgreSQL connection is enabled"
        return None

    def tools(self) -> list[ToolFunction]:
        return [self.list_connections, self.list_tables, self.describe_table, self.run_sql]

    def _connection(self, name: str) -> SavedConnection:
        return self.ctx.on_main(lambda: resolve_connection(name, self._allowed()))

    def _database(self, name: str) -> Database:
        return Database(self._connection(name), self.ctx.cancel, self._settings().sql_timeout)

    def list_connections(self) -> str:
        """List the saved PostgreSQL connections you may use."""
        return self.ctx.on_main(lambda: describe_connections(self._allowed()))

    def list_tables(self, connection: str, schema_name: str = "") -> str:
        """List tables and views: geometry column (type, SRID), estimated rows, comment.

        Args:
            connection: Saved connection name.
            schema_name: Only this schema (default: all).
        """
        with self._database(connection) as db:
            return catalog.list_tables(db, schema_name.strip())

    def describe_table(self, connection: str, tables: list[str]) -> str:
        """Describe tables: columns with types and comments, keys, common values, geometry.

        Args:
            connection: Saved connection name.
            tables: Table or view names, e.g. ["public.schools"].
        """
        if not tables:
            raise ToolError("name at least one table")
        if len(tables) > MAX_DESCRIBED:
            raise ToolError(f"describe at most {MAX_DESCRIBED} tables per call")
        with self._database(connection) as db:
            return "\n\n".join(catalog.describe_table(db, table) for table in tables)

    def preview_run_sql(
        self, connection: str, sql: str, write: bool = False, **_display: Any
    ) -> ApprovalRequest | None:
        """A write (by its keyword, by its plan, or asked for with write=true) needs the user's approval."""
        statement = single_statement(sql)
        tables: list[tuple[str, float]] = []
        if not (write or is_write_statement(statement)):
            with self._database(connection) as db:
                tables = modified_tables(plan_of(db, statement))
            if not tables:
                return None  # a read-only query
        affected = [f"table {t} (about {rows:,.0f} rows)" for t, rows in tables] or [
            f"{t} in {connection!r}" for t in write_targets(statement)
        ]
        return ApprovalRequest(
            action=f"Run SQL that changes the database {connection!r}",
            details=statement,
            language="sql",
            affected=affected or [f"the database of {connection!r}"],
            editable="sql",
        )

    @gated("preview_run_sql")
    def run_sql(
        self,
        connection: str,
        sql: str,
        output_name: str = "",
        add_table: bool = False,
        limit: int = 20,
        write: bool = False,
    ) -> str:
        """Run one SQL statement; show the first rows and the count. Geometry results become layers.

        Args:
            connection: Saved connection name.
            sql: One statement, e.g. SELECT ...; reads run read-only.
            output_name: Name for the result layer.
            add_table: Also add a result without geometry to the project as a table.
            limit: Rows to show (1-50).
            write: The statement changes data or schema (the user approves it first).
        """
        settings = self._settings()
        saved = self._connection(connection)
        preview_rows = max(1, min(int(limit), MAX_PREVIEW))
        if approval_granted():
            with Database(saved, self.ctx.cancel, settings.sql_timeout, read_only=False) as db:
                return run_write(db, single_statement(sql), preview_rows)
        if write:
            raise ToolError("this write needs the user's approval; it was not given, so nothing ran")
        with Database(saved, self.ctx.cancel, settings.sql_timeout) as db:
            result = run_query(db, sql, preview_rows, settings.sql_row_cap)
        text = format_result(result)
        if (result.geometry and result.total > 0) or (add_table and result.total > 0 and result.geometry is None):
            tables = referenced_tables(result.statement)
            base = slug(output_name) or f"{slug(tables[0].split('.')[-1]) if tables else 'query'}_sql"
            layer = query_layer(saved, result, base)
            layer.moveToThread(self.ctx.bridge.thread())
            name = self.ctx.on_main(add_result_layer, self.ctx.project, layer, base)
            text += "\n" + layer_summary(name, result)
        return text


def layer_summary(name: str, result: QueryResult) -> str:
    """What was added, from what the query pass learned (the layer itself is not scanned)."""
    fields = ", ".join(c for c in result.columns if not result.geometry or c != result.geometry.column)
    if result.geometry is None:
        return f"Added table {name!r}: {result.total:,} rows, fields: {fields} (read from the database by the query)."
    box = ", ".join(f"{v:.1f}" for v in result.extent) if result.extent else "unknown"
    kind = QgsWkbTypes.displayString(QgsWkbTypes.parseType(result.geometry.wkb_type))
    return (
        f"Added layer {name!r}: {kind}, {result.total:,} features, EPSG:{result.geometry.srid}, extent {box}, "
        f"fields: {fields} (read from the database by the query)."
    )
