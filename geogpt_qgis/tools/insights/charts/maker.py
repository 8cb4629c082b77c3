"""make_chart end to end: read and aggregate the data, draw it, save it next to the conversation (worker thread).

A layer is read through a feature source (no geometry, only the chart's
fields).  A PostgreSQL layer or a SELECT is aggregated by the database: only
the aggregated cells, bins or grid cross the wire, so a million-row table
charts as fast as its GROUP BY.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qgis.core import QgsDataSourceUri, QgsFeatureRequest, QgsFeedback, QgsProviderRegistry, QgsVectorLayer

from geogpt_qgis.core.artifacts import EMPTY, LayerRef, TableRef, ToolArtifact, ToolResult
from geogpt_qgis.core.cancel import current_conversation
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.progress import progress_reporter
from geogpt_qgis.core.sqlite_text import sqlite_query
from geogpt_qgis.toolbelt.paths import profile_data_dir
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.insights.charts.data import (
    DISTINCT_CAP,
    GRID,
    SCATTER_POINTS,
    CategoryAggregator,
    ChartData,
    ChartSpec,
    NumberCollector,
    bin_count,
    histogram,
    histogram_data,
    parse_spec,
    scatter,
)
from geogpt_qgis.tools.layers import VectorReadPlan, plan_vector_read, python_value, resolve_vector_layer
from geogpt_qgis.tools.postgis.connections import SavedConnection, resolve_connection
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.sql_text import as_text, compose, embedded, ident, literal
from geogpt_qgis.tools.processing.naming import slug
from geogpt_qgis.tools.safety.sql import require_read

if TYPE_CHECKING:
    from psycopg.sql import Composable

CANCEL_EVERY = 2000
CHART_PREFIX = "Chart image: "  # the first line of a chart's result, for the model (the path is in the artifact)
NUMERIC_TYPES = frozenset({"int2", "int4", "int8", "float4", "float8", "numeric", "oid", "money"})
_PLAIN = frozenset({str, int, float})
_SELECT = re.compile(r"^\s*\(?\s*(select|with)\b", re.IGNORECASE)


def charts_dir() -> Path:
    """Where charts are kept: beside the conversation store in the profile, a folder per conversation."""
    return profile_data_dir() / "charts" / (slug(current_conversation.get() or "") or "unsaved")


@dataclass
class LayerRead:
    """How to read a layer off the main thread: its feature source, or the SQLite file and table behind it."""

    plan: VectorReadPlan
    sqlite: tuple[str, str] | None = None


@dataclass
class SqlSource:
    """A relation to aggregate in the database: ``relation`` is usable after FROM."""

    connection: SavedConnection
    relation: Composable
    label: str
    read: ToolArtifact = EMPTY  # the tables or the layer behind it, for the Sources list


class ChartMaker:
    """Makes charts for the tools of one ``ToolContext``."""

    def __init__(self, ctx: ToolContext, allowed: Any, sql_timeout: Any) -> None:
        self.ctx = ctx
        self._allowed = allowed
        self._sql_timeout = sql_timeout

    def make(self, data: str, kind: str, x: str, y: str = "", title: str = "") -> ToolResult:
        spec = parse_spec(kind, x, y, title)
        text = str(data or "").strip()
        if not text:
            raise ToolError("name the layer to chart, or give a SELECT statement")
        if _SELECT.match(text):
            source = self._select_source(text)
            chart, read = self._from_sql(spec, source), source.read
        else:
            plan = self.ctx.on_main(self._layer_plan, text, spec)
            if isinstance(plan, LayerRead):
                layer = LayerRef(plan.plan.layer_name, plan.plan.layer_id)
                chart, read = self._from_layer(spec, plan), ToolArtifact(layers=(layer,))
            else:
                chart, read = self._from_sql(spec, plan), plan.read
        self.ctx.check_cancelled()
        from geogpt_qgis.tools.insights.charts.render import render_png

        path = render_png(chart, self._png_path(chart.title))
        return ToolResult(_summary(path, chart, spec), replace(read, chart=str(path)))

    def _png_path(self, title: str) -> Path:
        folder = charts_dir()
        stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{slug(title)[:40] or 'chart'}"
        path = folder / f"{stem}.png"
        index = 2
        while path.exists():
            path = folder / f"{stem}-{index}.png"
            index += 1
        return path

    # -- layers ------------------------------------------------------------------------------
    def _layer_plan(self, ref: str, spec: ChartSpec) -> LayerRead | SqlSource:
        """Check the fields against the layer (main thread); a PostgreSQL layer is aggregated by its database."""
        layer = resolve_vector_layer(self.ctx.project, ref)
        fields = layer.fields()
        kinds = {f.name(): ("number" if f.isNumeric() else "text") for f in fields}
        _check_fields(spec, kinds, f"layer {layer.name()!r}")
        if layer.providerType() == "postgres":
            source = _postgres_layer_source(layer)
            if source is not None:
                return source
        return LayerRead(plan_vector_read(layer), _sqlite_table(layer))

    def _from_layer(self, spec: ChartSpec, read: LayerRead) -> ChartData:
        """Read only the chart's fields, without geometry, and aggregate as the rows go by."""
        source = f"layer {read.plan.layer_name!r}"
        if spec.kind in ("histogram", "scatter"):
            collector = NumberCollector(pairs=spec.kind == "scatter")
            for x, _group, y in self._rows(spec, read, "reading values"):
                collector.add(x, y)
            if spec.kind == "histogram":
                return histogram(spec, collector.x, collector.rows, source)
            return scatter(spec, collector.x, collector.y, collector.rows, source)
        aggregator = CategoryAggregator(spec)
        if read.sqlite is not None:  # SQLite groups; only the cells come back
            path, table = read.sqlite
            group = spec.group or None
            if spec.y:
                y = spec.y
                sql = sqlite_query(
                    "SELECT {}, {}, count(*), count({}), sum({}), min({}), max({}) FROM {} GROUP BY 1, 2",
                    *(spec.x, group, y, y, y, y, table),
                )
            else:
                sql = sqlite_query(
                    "SELECT {}, {}, count(*), count(*), NULL, NULL, NULL FROM {} GROUP BY 1, 2", spec.x, group, table
                )
            for cell in self._sqlite_query(path, sql):
                aggregator.add_cell(*cell)
            return aggregator.result(source)
        for x, group, y in self._rows(spec, read, "aggregating"):
            aggregator.add_row(x, group, y)
        return aggregator.result(source)

    def _rows(self, spec: ChartSpec, read: LayerRead, doing: str) -> Iterator[tuple[Any, Any, Any]]:
        """``(x, group, y)`` of every feature (worker thread; cancellable mid-scan, reports progress)."""
        if read.sqlite is not None:
            yield from self._sqlite_rows(spec, read, doing)
            return
        plan = read.plan
        cancel = self.ctx.cancel
        columns = [c for c in (spec.x, spec.group, spec.y) if c]
        request = QgsFeatureRequest()
        request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
        request.setSubsetOfAttributes(columns, plan.source.fields())
        feedback = QgsFeedback()
        release = cancel.on_cancel(feedback.cancel)
        request.setFeedback(feedback)
        # Attributes by index: a name lookup per value costs more than the read itself on big layers.
        ix = plan.field_names.index(spec.x)
        ig = plan.field_names.index(spec.group) if spec.group else -1
        iy = plan.field_names.index(spec.y) if spec.y else -1
        progress = progress_reporter()
        total = max(plan.feature_count, 1)
        try:
            for index, feature in enumerate(plan.source.getFeatures(request)):
                if index % CANCEL_EVERY == 0:
                    cancel.raise_if_cancelled()
                    progress(100.0 * index / total, doing)
                values = feature.attributes()
                yield (
                    _value(values[ix]),
                    _value(values[ig]) if ig >= 0 else None,
                    _value(values[iy]) if iy >= 0 else None,
                )
        finally:
            release()
        cancel.raise_if_cancelled()

    def _sqlite_rows(self, spec: ChartSpec, read: LayerRead, doing: str) -> Iterator[tuple[Any, Any, Any]]:
        """The same rows read straight from a GeoPackage/SQLite file, read-only: several times faster."""
        path, table = read.sqlite or ("", "")
        sql = sqlite_query("SELECT {}, {}, {} FROM {}", spec.x, spec.group or None, spec.y or None, table)
        progress = progress_reporter()
        total = max(read.plan.feature_count, 1)
        for index, row in enumerate(self._sqlite_query(path, sql)):
            if index % CANCEL_EVERY == 0:
                progress(100.0 * index / total, doing)
            yield row

    def _sqlite_query(self, path: str, sql: str) -> Iterator[tuple[Any, ...]]:
        """Rows of ``sql`` on the file opened read-only; Stop interrupts SQLite mid-query."""
        cancel = self.ctx.cancel
        database = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True, check_same_thread=False)
        release = cancel.on_cancel(database.interrupt)
        try:
            for index, row in enumerate(database.execute(sql)):
                if index % CANCEL_EVERY == 0:
                    cancel.raise_if_cancelled()
                yield row
        except sqlite3.Error as exc:
            cancel.raise_if_cancelled()
            raise ToolError(f"reading {Path(path).name} failed: {exc}") from None
        finally:
            release()
            database.close()
        cancel.raise_if_cancelled()

    # -- SQL ---------------------------------------------------------------------------------
    def _select_source(self, sql: str) -> SqlSource:
        try:
            found = require_read(sql)  # parsed: one plain read; its functions are checked in _from_sql
        except ToolError as exc:
            raise ToolError(f"a chart reads data: give one SELECT statement ({exc})") from None
        allowed = self.ctx.on_main(self._allowed)
        if not allowed:
            raise ToolError("no saved PostgreSQL connection is enabled, so a SELECT cannot be charted; chart a layer")
        if len(allowed) > 1:
            raise ToolError(
                f"several databases are enabled ({', '.join(allowed)}): run the query with run_sql and "
                "add_table=true, then chart the table it adds"
            )
        saved = self.ctx.on_main(resolve_connection, allowed[0], allowed)
        tables = tuple(TableRef.named(table, saved.name) for table in found.tables)
        relation = compose("({}\n) AS src", embedded(found.text))
        return SqlSource(saved, relation, f"SQL on {saved.name!r}", ToolArtifact(tables=tables))

    def _from_sql(self, spec: ChartSpec, source: SqlSource) -> ChartData:
        with Database(source.connection, self.ctx.cancel, self._sql_timeout()) as db:
            db.check_read(as_text(compose("SELECT * FROM {}", source.relation)))  # one read, acting nowhere else
            kinds = _sql_columns(db, source.relation)
            _check_fields(spec, kinds, source.label)
            if spec.kind == "histogram":
                return _sql_histogram(db, spec, source)
            if spec.kind == "scatter":
                return _sql_scatter(db, spec, source)
            group = ident(spec.group) if spec.group else compose("NULL")
            if spec.y:
                measures = compose("count({y}), sum({y}), min({y}), max({y})", y=ident(spec.y))
            else:
                measures = compose("count(*), NULL, NULL, NULL")
            rows = db.rows(
                compose(
                    "SELECT {}, {}, count(*), {} FROM {} GROUP BY 1, 2 LIMIT {}",
                    *(ident(spec.x), group, measures, source.relation, literal(DISTINCT_CAP + 1)),
                )
            )
        if len(rows) > DISTINCT_CAP:
            raise ToolError(f"{spec.x!r} has more than {DISTINCT_CAP:,} distinct values: not categories")
        aggregator = CategoryAggregator(spec)
        for row in rows:
            aggregator.add_cell(*row)
        return aggregator.result(source.label)


def _value(value: Any) -> Any:
    """A plain value as it is (the common case, kept fast); QGIS values (NULL, dates) converted."""
    return value if value.__class__ in _PLAIN else python_value(value)


def _sql_columns(db: Database, relation: Composable) -> dict[str, str]:
    cursor = db.execute(compose("SELECT * FROM {} LIMIT 0", relation))
    oids = [d[1] for d in cursor.description]
    names = dict(db.rows("SELECT oid, typname FROM pg_type WHERE oid = ANY(%s)", [list(set(oids))]))
    return {d[0]: ("number" if names.get(d[1]) in NUMERIC_TYPES else "text") for d in cursor.description}


def _sql_histogram(db: Database, spec: ChartSpec, source: SqlSource) -> ChartData:
    x, relation = ident(spec.x), source.relation
    rows, count, low, high = db.rows(
        compose("SELECT count(*), count({x}), min({x}), max({x}) FROM {relation}", x=x, relation=relation)
    )[0]
    if not count:
        raise ToolError(f"{spec.x!r} has no values to chart (all NULL, or no rows)")
    low, high = float(low), float(high)
    high = high if high > low else low + 1
    bins = bin_count(int(count))
    counts = [0] * bins
    for bucket, n in db.rows(
        compose(
            "SELECT least(width_bucket({x}::float8, %s, %s, %s), %s), count(*) FROM {relation} "
            "WHERE {x} IS NOT NULL GROUP BY 1",
            x=x,
            relation=relation,
        ),
        [low, high, bins, bins],
    ):
        counts[int(bucket) - 1] += int(n)
    edges = [low + (high - low) * i / bins for i in range(bins + 1)]
    return histogram_data(spec, edges, counts, int(rows), source.label)


def _sql_scatter(db: Database, spec: ChartSpec, source: SqlSource) -> ChartData:
    from array import array

    x, y, relation = ident(spec.x), ident(spec.y), source.relation
    both = compose("{x} IS NOT NULL AND {y} IS NOT NULL", x=x, y=y)
    names = {"x": x, "y": y, "both": both, "relation": relation}
    rows, count, x_low, x_high, y_low, y_high = db.rows(
        compose(
            "SELECT count(*), count(*) FILTER (WHERE {both}), min({x}) FILTER (WHERE {both}), "
            "max({x}) FILTER (WHERE {both}), min({y}) FILTER (WHERE {both}), max({y}) FILTER (WHERE {both}) "
            "FROM {relation}",
            **names,
        )
    )[0]
    if count <= SCATTER_POINTS:
        pairs = db.rows(compose("SELECT {x}::float8, {y}::float8 FROM {relation} WHERE {both}", **names))
        return scatter(
            spec, array("d", [p[0] for p in pairs]), array("d", [p[1] for p in pairs]), int(rows), source.label
        )
    data = ChartData("scatter", spec.title or spec.default_title(), spec.x, spec.y, rows=int(rows), source=source.label)
    x_low, x_high, y_low, y_high = float(x_low), float(x_high), float(y_low), float(y_high)
    x_high, y_high = max(x_high, x_low + 1e-9), max(y_high, y_low + 1e-9)
    grid = [[0] * GRID for _ in range(GRID)]
    for i, j, n in db.rows(
        compose(
            "SELECT least(width_bucket({x}::float8, %s, %s, %s), %s), "
            "least(width_bucket({y}::float8, %s, %s, %s), %s), count(*) FROM {relation} WHERE {both} GROUP BY 1, 2",
            **names,
        ),
        [x_low, x_high, GRID, GRID, y_low, y_high, GRID, GRID],
    ):
        grid[int(i) - 1][int(j) - 1] += int(n)
    data.grid = grid
    data.edges = [x_low + (x_high - x_low) * i / GRID for i in range(GRID + 1)]
    data.y_edges = [y_low + (y_high - y_low) * i / GRID for i in range(GRID + 1)]
    data.notes.append(f"{count:,} points are drawn as a {GRID} x {GRID} density grid, not one by one")
    return data


def _sqlite_table(layer: QgsVectorLayer) -> tuple[str, str] | None:
    """``(file, table)`` when a layer is a whole, unedited GeoPackage/SQLite table: then SQLite reads it directly.

    A filter or unsaved edits only QGIS's own reader applies, so those layers go through it.
    """
    if layer.providerType() != "ogr" or layer.subsetString() or layer.isEditable():
        return None
    if layer.dataProvider().storageType() not in ("GPKG", "SQLite"):
        return None
    parts = QgsProviderRegistry.instance().decodeUri("ogr", layer.source())
    path, table = parts.get("path") or "", parts.get("layerName") or ""
    return (path, table) if table and Path(path).is_file() else None


def _postgres_layer_source(layer: QgsVectorLayer) -> SqlSource | None:
    """The layer's table or query, with its filter, for the database to aggregate (main thread)."""
    uri = QgsDataSourceUri(layer.source())
    table = uri.table()
    if not table:
        return None
    # A query layer's "(SELECT ...)" and a filter are the layer's own SQL; _from_sql classifies them before use.
    relation: Composable = embedded(table) if table.startswith("(") else ident(uri.schema() or "public", table)
    if uri.sql():
        relation = compose("(SELECT * FROM {} AS t WHERE {})", relation, embedded(uri.sql()))
    where = f"{uri.host() or 'localhost'}/{uri.database()}"
    saved = SavedConnection(layer.name(), layer.source(), uri.connectionInfo(True), where)
    label = f"layer {layer.name()!r} (PostgreSQL {where})"
    return SqlSource(saved, compose("{} AS src", relation), label, ToolArtifact(layers=(LayerRef.of(layer),)))


def _check_fields(spec: ChartSpec, kinds: dict[str, str], where: str) -> None:
    """Unknown fields get the closest names; a measure that is not a number is refused with the numeric ones."""
    names = list(kinds)
    for name in (spec.x, spec.group, spec.y):
        if name and name not in kinds:
            raise ToolError(did_you_mean(name, names, f"field in {where}"))
    numeric = [n for n, k in kinds.items() if k == "number"]
    listed = ", ".join(numeric) if numeric else "none"
    need = [spec.y] if spec.y else []
    if spec.kind in ("histogram", "scatter"):
        need.insert(0, spec.x)
    for name in need:
        if kinds[name] != "number":
            what = (
                "a histogram"
                if spec.kind == "histogram"
                else ("a scatter chart" if spec.kind == "scatter" else spec.aggregate)
            )
            raise ToolError(
                f"{name!r} in {where} is not numeric, and {what} needs numbers. Numeric fields: {listed}. "
                "To count features per value, leave y empty."
            )


def _summary(path: Path, chart: ChartData, spec: ChartSpec) -> str:
    kind = {"bar": "Grouped bar chart" if spec.group else "Bar chart", "histogram": "Histogram"}.get(
        chart.kind, f"{chart.kind.capitalize()} chart"
    )
    lines = [
        f"{CHART_PREFIX}{path}",
        f"{kind} {chart.title!r} from {chart.source} ({chart.rows:,} rows), shown to the user in the chat.",
        chart.table(),
        *(f"Note: {note}" for note in chart.notes),
    ]
    return "\n".join(lines)
