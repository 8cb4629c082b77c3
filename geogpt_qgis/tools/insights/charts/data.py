"""What a chart shows, computed from rows: the spec the model asked for and the aggregation of the data.  Qt-free.

The model names the chart type, the fields and the title; every number comes
from the data.  Rows are never plotted raw: categories are aggregated with
mergeable statistics (count, sum, min, max, so the database can do the same
work and bins can merge them), a histogram is counted into equal-width bins,
and a scatter of more than ``SCATTER_POINTS`` rows becomes a density grid.
A million rows thus become at most a few hundred numbers before matplotlib
sees them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
import re
from array import array
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from geogpt_qgis.core.numbers import exact_number, fixed_number, plain_number, step_decimals
from geogpt_qgis.core.text import markdown_table
from geogpt_qgis.tools.base import ToolError

KINDS = {
    "bar": "bar",
    "bars": "bar",
    "column": "bar",
    "grouped bar": "bar",
    "grouped_bar": "bar",
    "groupedbar": "bar",
    "line": "line",
    "lines": "line",
    "pie": "pie",
    "donut": "pie",
    "histogram": "histogram",
    "hist": "histogram",
    "scatter": "scatter",
    "scatterplot": "scatter",
    "scatter plot": "scatter",
}
AGGREGATES = ("count", "sum", "mean", "min", "max")
SCATTER_POINTS = 5000  # more rows than this are drawn as a density grid
GRID = 60  # cells per side of that grid
MAX_BARS = 25
MAX_SLICES = 8
MAX_GROUPS = 8
MAX_LINE_POINTS = 500  # a line over more distinct x values is binned
DISTINCT_CAP = 200_000  # distinct categories kept while aggregating
OTHER = "other"
_AGGREGATE = re.compile(r"^\s*(\w+)\s*\(\s*(.*?)\s*\)\s*$")


@dataclass(frozen=True)
class ChartSpec:
    """The chart as asked: kind, the category field (and series field), the measure and its aggregate."""

    kind: str
    x: str
    group: str = ""
    y: str = ""  # empty for a count
    aggregate: str = "count"
    title: str = ""

    @property
    def measure_label(self) -> str:
        if self.kind in ("histogram", "scatter"):
            return self.y or "count"
        return "count" if self.aggregate == "count" else f"{self.aggregate} of {self.y}"

    def default_title(self) -> str:
        if self.kind == "histogram":
            return f"Distribution of {self.x}"
        if self.kind == "scatter":
            return f"{self.y} against {self.x}"
        split = f" and {self.group}" if self.group else ""
        return f"{self.measure_label.capitalize()} by {self.x}{split}"


TITLE_CHARS = 200  # a title longer than this cannot be drawn legibly (and a huge one overflows the raster)


def parse_spec(kind: str, x: str, y: str = "", title: str = "") -> ChartSpec:
    """Check what the model asked for, before any data is read (fields are checked against the data later)."""
    if len(str(title)) > TITLE_CHARS:
        raise ToolError(f"the title is {len(str(title)):,} characters; at most {TITLE_CHARS}: give a short title")
    chart = KINDS.get(" ".join(str(kind).lower().replace("-", " ").split()))
    if chart is None:
        raise ToolError(f"unknown chart kind {kind!r}; use bar, line, pie, histogram or scatter")
    fields = [part.strip().strip('"') for part in str(x).split(",") if part.strip()]
    if not fields:
        raise ToolError("name the field for x")
    if len(fields) > 2:
        raise ToolError("x takes one field, or two (category,series) for grouped bars or several lines")
    if len(fields) == 2 and chart not in ("bar", "line"):
        raise ToolError(f"a {chart} chart takes one x field; grouped series are for bar and line charts")
    group = fields[1] if len(fields) == 2 else ""
    measure, aggregate = _measure(y, chart)
    if chart == "scatter" and not measure:
        raise ToolError("a scatter chart needs two numeric fields: x and y")
    if chart == "histogram":
        measure, aggregate = "", "count"
    return ChartSpec(chart, fields[0], group, measure, aggregate, " ".join(str(title).split()))


def _measure(y: str, chart: str) -> tuple[str, str]:
    text = str(y or "").strip().strip('"')
    if not text or text.lower() in ("count", "count(*)", "*", "n"):
        return "", "count"
    match = _AGGREGATE.match(text)
    if match:
        function, argument = match.group(1).lower(), match.group(2).strip().strip('"')
        function = {"avg": "mean", "average": "mean", "total": "sum"}.get(function, function)
        if function not in AGGREGATES:
            raise ToolError(f"unknown aggregate {function!r}; use sum, mean, min, max or count")
        if chart == "scatter":
            raise ToolError("a scatter chart plots the values of y as they are; give a field, not an aggregate")
        if function == "count":
            return "", "count"
        return argument, function
    return text, "sum"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _sort_key(value: Any) -> tuple:
    if value is None:
        return (2, "")
    if is_number(value):
        return (0, float(value), "")
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return (0, 0.0, value.isoformat())
    return (1, str(value).casefold())


def label(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return exact_number(value)  # 0.00001 and 3, never 1e-05 or 3.0
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    return str(value)


@dataclass
class Stats:
    """Mergeable statistics of one cell."""

    count: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.low = min(self.low, value)
        self.high = max(self.high, value)

    def merge(self, other: Stats) -> None:
        self.count += other.count
        self.total += other.total
        self.low = min(self.low, other.low)
        self.high = max(self.high, other.high)

    def value(self, aggregate: str) -> float:
        if aggregate == "count":
            return float(self.count)
        if self.count == 0:
            return math.nan
        return {
            "sum": self.total,
            "mean": self.total / self.count,
            "min": self.low,
            "max": self.high,
        }[aggregate]


@dataclass
class ChartData:
    """The numbers a chart shows, and where they came from."""

    kind: str
    title: str
    x_label: str
    y_label: str
    categories: list[str] = field(default_factory=list)
    series: dict[str, list[float]] = field(default_factory=dict)  # series name ("" alone) -> one value per category
    edges: list[float] = field(default_factory=list)  # histogram bins, or the density grid's x edges
    y_edges: list[float] = field(default_factory=list)  # the density grid's y edges
    counts: list[int] = field(default_factory=list)  # histogram counts
    grid: list[list[int]] = field(default_factory=list)  # density grid counts, [x bin][y bin]
    points: list[tuple[float, float]] = field(default_factory=list)  # a scatter's raw points (few)
    rows: int = 0  # rows the chart was computed from
    source: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self, limit: int = MAX_BARS) -> str:
        """The chart's numbers as a Markdown table, for the model to quote."""
        if self.kind == "histogram":
            decimals = edge_decimals(self.edges)
            bins = [
                (f"{fixed_number(lo, decimals)} – {fixed_number(hi, decimals)}", f"{n:,}")
                for lo, hi, n in zip(self.edges, self.edges[1:], self.counts, strict=False)
            ]
            return markdown_table((self.x_label, "count"), bins[:limit])
        if self.kind == "scatter":
            return "" if self.grid else f"{len(self.points):,} points."
        names = list(self.series)
        headers = [self.x_label, *(names if names != [""] else [self.y_label])]
        rows = [
            [category, *(_fmt(self.series[name][i]) for name in names)] for i, category in enumerate(self.categories)
        ]
        more = f"\n… {len(rows) - limit} more rows" if len(rows) > limit else ""
        return markdown_table(headers, rows[:limit]) + more


def _fmt(value: float) -> str:
    """A statistic as the model quotes it: 17,901.1, never 1.79e+04."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NULL"
    return plain_number(value)


def edge_decimals(edges: list[float]) -> int:
    """Decimals for bin edges: enough that adjacent edges never read alike (55.949 – 55.9536, not 55.95 – 55.95)."""
    steps = [hi - lo for lo, hi in itertools.pairwise(edges) if hi > lo]
    return step_decimals(min(steps)) if steps else 0


class CategoryAggregator:
    """Statistics per (category, series) cell, fed row by row or with cells the database aggregated."""

    def __init__(self, spec: ChartSpec) -> None:
        self.spec = spec
        self.cells: dict[tuple[Any, Any], Stats] = {}
        self.rows = 0

    def add_row(self, x: Any, group: Any, y: Any) -> None:
        self.rows += 1
        key = (_plain(x), _plain(group))
        cell = self.cells.get(key)
        if cell is None:
            if len(self.cells) >= DISTINCT_CAP:
                raise ToolError(
                    f"{self.spec.x!r} has more than {DISTINCT_CAP:,} distinct values: not categories; "
                    "chart a field with fewer values, or a histogram of a numeric field"
                )
            cell = self.cells[key] = Stats()
        if self.spec.y:
            if y is None:
                return
            cell.add(float(y))
        else:
            cell.count += 1

    def add_cell(self, x: Any, group: Any, rows: int, count: int, total: Any, low: Any, high: Any) -> None:
        """A cell aggregated elsewhere (by the database): its rows, and count, sum, min and max of y."""
        self.rows += int(rows or 0)
        stats = Stats(int(count or 0), float(total or 0.0), _float(low, math.inf), _float(high, -math.inf))
        self.cells.setdefault((_plain(x), _plain(group)), Stats()).merge(stats)

    def result(self, source: str) -> ChartData:
        spec = self.spec
        data = ChartData(spec.kind, spec.title or spec.default_title(), spec.x, spec.measure_label, rows=self.rows)
        data.source = source
        if not self.cells:
            raise ToolError("no rows to chart (the layer or query is empty, or every value is NULL)")
        by_x: dict[Any, Stats] = {}
        for (x, _group), stats in self.cells.items():
            by_x.setdefault(x, Stats()).merge(stats)
        xs = list(by_x)
        numeric_x = all(is_number(x) or isinstance(x, (dt.date, dt.datetime)) for x in xs if x is not None)
        if spec.kind == "line" and numeric_x and len(xs) > MAX_LINE_POINTS and all(is_number(x) for x in xs):
            return self._binned_line(data, by_x)
        if spec.kind == "line" or (spec.kind == "bar" and numeric_x and len(xs) <= MAX_BARS):
            order = sorted(xs, key=_sort_key)
        else:
            order = sorted(xs, key=lambda x: (-_rank_value(by_x[x], spec.aggregate), _sort_key(x)))
        limit = {"bar": MAX_BARS if not spec.group else 15, "pie": MAX_SLICES}.get(spec.kind, MAX_LINE_POINTS)
        kept, rest = order[:limit], order[limit:]
        groups = self._groups()
        data.categories = [label(x) for x in kept]
        data.series = {label(g) if spec.group else "": [] for g in groups}
        for g in groups:
            values = data.series[label(g) if spec.group else ""]
            for x in kept:
                cell = self.cells.get((x, g))
                values.append(
                    cell.value(spec.aggregate) if cell else (0.0 if spec.aggregate in ("count", "sum") else math.nan)
                )
        if rest:
            if spec.aggregate in ("count", "sum") and spec.kind in ("bar", "pie"):
                data.categories.append(OTHER)
                for g in groups:
                    merged = Stats()
                    for x in rest:
                        if (x, g) in self.cells:
                            merged.merge(self.cells[(x, g)])
                    data.series[label(g) if spec.group else ""].append(merged.value(spec.aggregate))
                data.notes.append(f"the {len(rest):,} smallest of {len(order):,} categories are summed as {OTHER!r}")
            else:
                data.notes.append(f"the first {len(kept):,} of {len(order):,} categories are shown")
        if spec.kind == "pie" and any(v < 0 for v in data.series[""] if not math.isnan(v)):
            raise ToolError("a pie chart cannot show negative values; use a bar chart")
        return data

    def _groups(self) -> list[Any]:
        if not self.spec.group:
            return [None]
        totals: dict[Any, float] = {}
        for (_x, group), stats in self.cells.items():
            totals[group] = totals.get(group, 0.0) + stats.count
        ranked = sorted(totals, key=lambda g: (-totals[g], _sort_key(g)))
        return sorted(ranked[:MAX_GROUPS], key=_sort_key)

    def _binned_line(self, data: ChartData, by_x: dict[Any, Stats]) -> ChartData:
        """A line over many numeric x values: merged into equal-width bins (exact for every aggregate)."""
        low, high = min(float(x) for x in by_x), max(float(x) for x in by_x)
        bins = 100
        width = (high - low) / bins or 1.0
        merged = [Stats() for _ in range(bins)]
        for x, stats in by_x.items():
            merged[min(int((float(x) - low) / width), bins - 1)].merge(stats)
        data.categories = [label(round(low + (i + 0.5) * width, 6)) for i in range(bins) if merged[i].count]
        data.series = {"": [s.value(self.spec.aggregate) for s in merged if s.count]}
        data.notes.append(f"{len(by_x):,} distinct {self.spec.x} values merged into {bins} equal-width bins")
        return data


def _rank_value(stats: Stats, aggregate: str) -> float:
    value = stats.value(aggregate)
    return -math.inf if math.isnan(value) else value


def _plain(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _float(value: Any, default: float) -> float:
    return default if value is None else float(value)


def bin_count(rows: int) -> int:
    """Equal-width histogram bins for ``rows`` values: between 10 and 50 (the same rule in Python and SQL)."""
    return int(min(50, max(10, math.ceil(math.sqrt(max(rows, 1))))))


class NumberCollector:
    """The values of one or two numeric fields, kept compactly (8 bytes a value) for bins and grids."""

    def __init__(self, pairs: bool) -> None:
        self.x = array("d")
        self.y = array("d") if pairs else None
        self.rows = 0

    def add(self, x: Any, y: Any = None) -> None:
        self.rows += 1
        if x is None or (self.y is not None and y is None):
            return
        self.x.append(float(x))
        if self.y is not None:
            self.y.append(float(y))


def histogram(spec: ChartSpec, values: Iterable[float], rows: int, source: str) -> ChartData:
    import numpy

    array_ = numpy.fromiter(values, dtype=float)
    if array_.size == 0:
        raise ToolError(f"{spec.x!r} has no values to chart (all NULL, or no rows)")
    low, high = float(array_.min()), float(array_.max())
    bins = bin_count(array_.size)
    counts, edges = numpy.histogram(array_, bins=bins, range=(low, high if high > low else low + 1))
    return histogram_data(spec, [float(e) for e in edges], [int(c) for c in counts], rows, source)


def histogram_data(spec: ChartSpec, edges: list[float], counts: list[int], rows: int, source: str) -> ChartData:
    data = ChartData("histogram", spec.title or spec.default_title(), spec.x, "count", rows=rows, source=source)
    data.edges, data.counts = edges, counts
    if rows > sum(counts):
        data.notes.append(f"{rows - sum(counts):,} rows with NULL {spec.x} are left out")
    return data


def scatter(spec: ChartSpec, xs: Any, ys: Any, rows: int, source: str) -> ChartData:
    import numpy

    x, y = numpy.frombuffer(xs, dtype=float), numpy.frombuffer(ys, dtype=float)
    data = ChartData("scatter", spec.title or spec.default_title(), spec.x, spec.y, rows=rows, source=source)
    if x.size == 0:
        raise ToolError(f"no rows with both {spec.x!r} and {spec.y!r} to chart")
    if x.size <= SCATTER_POINTS:
        data.points = [(float(a), float(b)) for a, b in zip(x, y, strict=True)]
        return data
    grid, x_edges, y_edges = numpy.histogram2d(x, y, bins=GRID)
    data.grid = [[int(v) for v in row] for row in grid]
    data.edges, data.y_edges = [float(e) for e in x_edges], [float(e) for e in y_edges]
    data.notes.append(f"{x.size:,} points are drawn as a {GRID} x {GRID} density grid, not one by one")
    return data
