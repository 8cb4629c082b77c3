"""Chart numbers from rows: specs, aggregation, bins and grids, never raw rows (Qt-free)."""

from __future__ import annotations

import random
from array import array

import pytest

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.insights.charts.data import (
    GRID,
    MAX_BARS,
    OTHER,
    SCATTER_POINTS,
    CategoryAggregator,
    histogram,
    parse_spec,
    scatter,
)


def test_specs_are_checked_before_reading_data():
    spec = parse_spec("Grouped bar", "district, type", "mean(pupils)", "Pupils")
    assert (spec.kind, spec.x, spec.group, spec.y, spec.aggregate, spec.title) == (
        "bar",
        "district",
        "type",
        "pupils",
        "mean",
        "Pupils",
    )
    assert parse_spec("bar", "district", "pupils").aggregate == "sum"
    assert parse_spec("pie", "type", "count").aggregate == "count"
    for args, message in [
        (("donut chart", "x"), "unknown chart kind"),
        (("pie", "a,b"), "one x field"),
        (("scatter", "pupils"), "two numeric fields"),
        (("bar", "x", "median(y)"), "unknown aggregate"),
    ]:
        with pytest.raises(ToolError, match=message):
            parse_spec(*args)


def test_categories_aggregate_and_the_rest_is_summed_as_other():
    spec = parse_spec("bar", "name", "v")
    aggregator = CategoryAggregator(spec)
    rows = [(f"c{i:02d}", i) for i in range(40) for _ in range(2)]
    for name, value in rows:
        aggregator.add_row(name, None, value)
    data = aggregator.result("test")
    assert data.rows == 80
    assert len(data.categories) == MAX_BARS + 1 and data.categories[-1] == OTHER
    assert data.categories[0] == "c39" and data.series[""][0] == 78
    assert sum(data.series[""]) == sum(v for _, v in rows)


def test_database_cells_give_the_same_numbers_as_rows():
    spec = parse_spec("bar", "district,type", "mean(pupils)")
    rows = [(random.choice("ABC"), random.choice("xy"), random.randint(1, 500)) for _ in range(300)]
    by_rows = CategoryAggregator(spec)
    for row in rows:
        by_rows.add_row(*row)
    cells = CategoryAggregator(spec)
    for key in {(x, g) for x, g, _ in rows}:
        values = [v for x, g, v in rows if (x, g) == key]
        cells.add_cell(*key, len(values), len(values), sum(values), min(values), max(values))
    assert by_rows.result("a").series == cells.result("b").series


def test_a_histogram_counts_every_value_in_equal_bins():
    values = [float(v) for v in range(1000)]
    data = histogram(parse_spec("histogram", "v"), values, 1005, "test")
    assert sum(data.counts) == 1000 and len(data.edges) == len(data.counts) + 1
    assert data.edges[0] == 0 and data.edges[-1] == 999
    assert "5 rows with NULL v" in data.notes[0]


def test_a_big_scatter_becomes_a_density_grid():
    n = SCATTER_POINTS * 3
    xs, ys = array("d", (random.random() for _ in range(n))), array("d", (random.random() for _ in range(n)))
    data = scatter(parse_spec("scatter", "a", "b"), xs, ys, n, "test")
    assert not data.points and len(data.grid) == GRID and sum(map(sum, data.grid)) == n
    few = scatter(parse_spec("scatter", "a", "b"), xs[:10], ys[:10], 10, "test")
    assert len(few.points) == 10 and not few.grid


def test_pie_refuses_negative_values():
    aggregator = CategoryAggregator(parse_spec("pie", "k", "v"))
    aggregator.add_row("a", None, -3)
    with pytest.raises(ToolError, match="negative"):
        aggregator.result("t")
