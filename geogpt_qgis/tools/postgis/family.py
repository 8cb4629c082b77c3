"""The PostGIS tool family: saved connections, their tables, SQL reads, and writes the user approves."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any

from qgis.core import QgsWkbTypes

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, approved_targets, gated
from geogpt_qgis.core.artifacts import AddedLayer, TableRef, ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Sql
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.targets import TABLE, Target, broken_contract
from geogpt_qgis.core.text import counted
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
from geogpt_qgis.tools.postgis.layers import copy_result, result_layer
from geogpt_qgis.tools.postgis.query import (
    QueryResult,
    estimated_writes,
    format_result,
    run_query,
    run_write,
)
from geogpt_qgis.tools.postgis.targets import connection_place, table_targets
from geogpt_qgis.tools.processing.naming import slug
from geogpt_qgis.tools.result_store import result_store
from geogpt_qgis.tools.result_style import style_result
from geogpt_qgis.tools.safety.sql import Classified, classify

PREVIEW_ROWS = 20  # rows the model reads; aggregate in SQL for more
MAX_DESCRIBED = 5


class PostgisTools(ToolFamily):
    """Read-only SQL on the user's saved PostgreSQL/PostGIS connections."""

    name = "postgis"
    title = "PostGIS"
    summary = "list saved database connections and their tables, describe tables, run SQL (writes once approved)"
    prompt_hint = "SQL: filter and aggregate in SQL."

    def _settings(self) -> Any:
        return PlgOptionsManager.get_plg_settings()

    def _allowed(self) -> list[str]:
        return allowed_connection_names(self._settings().postgis_connections)

    def unavailable_reason(self) -> str | None:
        for module, package in (("psycopg", "psycopg"), ("pglast", "pglast")):
            if importlib.util.find_spec(module) is None:
                return f"the {package} Python package is missing"
        if not self._allowed():
            return "no saved PostgreSQL connection is enabled"
        return None

    def tools(self) -> list[ToolFunction]:
        return [self.describe_table, self.run_sql]

    def _connection(self, name: str) -> SavedConnection:
        return self.ctx.on_main(lambda: resolve_connection(name, self._allowed()))

    def _database(self, name: str) -> Database:
        return Database(self._connection(name), self.ctx.cancel, self._settings().sql_timeout)

    def _list_tables(self, connection: str, schema_name: str = "") -> str:
        """The connections, and the tables of one: geometry, SRID, rows (``describe_table`` without tables)."""
        allowed = self._allowed()
        connections = self.ctx.on_main(lambda: describe_connections(allowed))
        if not connection.strip() and len(allowed) > 1:
            return f"{connections}\nCall describe_table with one of them as connection to see its tables."
        with self._database(connection) as db:
            return f"{connections}\n\n{catalog.list_tables(db, schema_name.strip())}"

    def describe_table(self, tables: list[str] | None = None, connection: str = "") -> ToolResult:
        """Describe tables: columns, types, keys, common values, geometry. No tables: list them.

        Args:
            tables: e.g. ["public.schools"]; "public.*" lists a schema.
            connection: Default: the only one.
        """
        # It was list_tables too (agent/aliases.py routes that name here): no tables lists them all,
        # "schema.*" the tables of one schema.
        names = [name.strip() for name in tables or [] if name.strip()]
        schemas = [name.removesuffix("*").removesuffix(".").strip('"') for name in names if name.endswith("*")]
        if len(schemas) > 1 or (schemas and len(names) > 1):
            raise ToolError('list one schema per call ("schema.*"), without other tables')
        if not names or schemas:
            return ToolResult(self._list_tables(connection, schemas[0] if schemas else ""))
        if len(names) > MAX_DESCRIBED:
            raise ToolError(f"describe at most {MAX_DESCRIBED} tables per call")
        saved = self._connection(connection)
        with Database(saved, self.ctx.cancel, self._settings().sql_timeout) as db:
            text = "\n\n".join(catalog.describe_table(db, table) for table in names)
        return ToolResult(text, ToolArtifact(tables=tuple(TableRef.named(table, saved.name) for table in names)))

    def preview_run_sql(
        self, sql: str, connection: str = "", write: bool = False, **_display: Any
    ) -> ApprovalRequest | None:
        """A write (by its parse tree, or asked for with write=true) needs the user's approval.

        The preview never executes the SQL: it is described from its parse tree,
        and a DML statement is only planned (EXPLAIN without ANALYZE, one
        prepared statement, in a READ ONLY transaction that is rolled back).
        """
        statement = classify(sql)
        if statement.read and not write:
            return None  # a query: run_sql checks its functions and runs it read-only
        saved = self._connection(connection)
        connection = saved.name
        with self._database(connection) as db:
            tables = estimated_writes(db, statement)
            targets = table_targets(db, saved, statement)
        notes = [f"{statement.kind}: table {t} (about {rows:,.0f} rows)" for t, rows in tables]
        if not targets:  # nothing resolved to a table: say what the statement names, on which server
            named = [f"{statement.kind}: {t} in {connection!r}" for t in statement.targets]
            notes += [*(named or [f"{statement.kind}: the database of {connection!r}"]), connection_place(saved)]
        return ApprovalRequest(
            action=f"Run SQL that changes the database {connection!r}",
            details=statement.text,
            language="sql",
            notes=notes,
            editable="sql",
            effects=[Effect.WRITE_DATABASE],
            targets=targets,
        )

    @gated(preview_run_sql)
    def run_sql(
        self,
        sql: Sql,
        connection: str = "",
        output_name: str = "",
        write: bool = False,
    ) -> ToolResult:
        """Run one SQL statement (read-only unless write); shows the count and first rows.

        Args:
            output_name: Add the result as a layer or table with this name.
        """
        settings = self._settings()
        saved = self._connection(connection)
        preview_rows = PREVIEW_ROWS
        if approval_granted():
            statement = classify(sql)
            with Database(saved, self.ctx.cancel, settings.sql_timeout, read_only=False) as db:
                # Checked in the write's own transaction: the tables it writes are the ones approved.
                _check_tables(approved_targets(TABLE), table_targets(db, saved, statement))
                text = run_write(db, statement, preview_rows)
            return ToolResult(text, ToolArtifact(tables=sql_tables(statement, saved.name)))
        if write:
            raise ToolError("this write needs the user's approval; it was not given, so nothing ran")
        with Database(saved, self.ctx.cancel, settings.sql_timeout) as db:
            result = run_query(db, sql, preview_rows, settings.sql_row_cap)
        text = format_result(result)
        parsed = classify(result.statement)
        read = ToolArtifact(tables=sql_tables(parsed, saved.name), figures=result.figures)
        # Rows with geometry always become a layer; a plain table only when the model names it.
        if result.total > 0 and (result.geometry or output_name.strip()):
            tables = parsed.tables
            base = slug(output_name) or f"{slug(tables[0].split('.')[-1]) if tables else 'query'}_sql"
            store = self.ctx.on_main(result_store, self.ctx.project)
            path = self.ctx.on_main(store.file_target, self.ctx.project, base)
            try:
                copy_result(saved, result, path, self.ctx.cancel, settings.sql_timeout)
                added = self.ctx.on_main(self._add_copy, path, base)
            except BaseException:
                store.release_file(path, drop=True)
                raise
            store.release_file(path)
            text += "\n" + layer_summary(added.name, result)
            read = replace(read, added=(added,))
        return ToolResult(text, read)

    def _add_copy(self, path: Path, base: str) -> AddedLayer:
        """The query's copy added to the project (main thread)."""
        layer = result_layer(path, base)
        style_result(layer)  # see-through: the project's own layers stay readable under the query's
        return AddedLayer(add_result_layer(self.ctx.project, layer, base), layer.id())


def _check_tables(approved: list[Target], now: list[Target]) -> None:
    """Refuse a write whose tables are not the ones approved (dropped and made again, another database...)."""
    if not approved:
        return  # approved without tables (the user edited the SQL: what they wrote is what they approved)
    problem = broken_contract(approved, now)
    if problem is not None:
        raise ToolError(
            f"not run: {problem}. Nothing was changed. If the change is still wanted, call run_sql again: "
            "the user will be asked about it as it is now."
        )


def sql_tables(statement: Classified, connection: str) -> tuple[TableRef, ...]:
    """Each relation the parsed statement reads or writes (CTE names too), on ``connection``."""
    names = statement.tables + statement.targets
    return tuple(dict.fromkeys(TableRef.named(name, connection) for name in names if name))


def layer_summary(name: str, result: QueryResult) -> str:
    """What was added, from what the query pass learned (the layer itself is not scanned)."""
    fields = ", ".join(c for c in result.columns if not result.geometry or c != result.geometry.column)
    if result.geometry is None:
        return f"Added table {name!r}: {result.total:,} rows, fields: {fields} (a copy of the query's result)."
    box = ", ".join(f"{v:.1f}" for v in result.extent) if result.extent else "unknown"
    kind = QgsWkbTypes.displayString(QgsWkbTypes.parseType(result.geometry.wkb_type))
    return (
        f"Added layer {name!r}: {kind}, {counted(result.total, 'feature')}, EPSG:{result.geometry.srid}, extent {box}, "
        f"fields: {fields} (a copy of the query's result)."
    )
