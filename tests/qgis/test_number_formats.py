"""Numbers the model reads and copies: attribute values exactly as stored, chart bins that read apart.

The model copies a value it read (read_features) into a filter, so a float
shown rounded (1234568 for 1234567.89) selects nothing.  Every shown value is
put back into ``"field" = <shown>`` and evaluated by QGIS; the rows it selects
must be the rows Python's own float comparison selects.  Histogram labels are
checked against numpy.histogram's edges.
"""

from __future__ import annotations

import random
import re

import numpy
import pytest
from qgis.core import QgsExpression, QgsFeature, QgsFeatureRequest, QgsVectorLayer

from geogpt_qgis.core.numbers import exact_number
from geogpt_qgis.tools.insights.charts import maker
from geogpt_qgis.tools.insights.family import InsightTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

AWKWARD = [
    1234567.89,
    55.976864,
    0.1 + 0.2,
    1e-05,
    0.0001,
    -2.5e-7,
    1e20,
    123456789.12345679,
    1 / 3,
    987654.321,
    3.0,
    -0.0,
    4.9e-12,
    1.7976931348623157e300,
]


def _layer(project, name: str, field: str, values: list[float]) -> QgsVectorLayer:
    layer = QgsVectorLayer(f"None?field=id:integer&field={field}:double", name, "memory")
    features = []
    for index, value in enumerate(values):
        feature = QgsFeature(layer.fields())
        feature.setAttributes([index, value])
        features.append(feature)
    added, _ = layer.dataProvider().addFeatures(features)
    assert added and layer.featureCount() == len(values)
    project.addMapLayer(layer)
    return layer


def _cells(table: str) -> list[list[str]]:
    """The body rows of a Markdown table."""
    rows = [line.strip("|").split("|") for line in table.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row] for row in rows[2:]]


def test_every_value_read_features_shows_selects_exactly_its_rows_when_copied_into_a_filter(tool_ctx, demo_project):
    rng = random.Random(7)
    values = AWKWARD + [rng.uniform(-1e7, 1e7) for _ in range(15)] + [rng.uniform(55.9, 56.0) for _ in range(15)]
    layer = _layer(demo_project, "exact_numbers", "price", values)
    table = ProjectTools(tool_ctx).read_features("exact_numbers", ["id", "price"], limit=len(values)).text
    cells = _cells(table)
    assert len(cells) == len(values), table
    stored = numpy.array(values)
    for row_id, shown in cells:
        assert re.fullmatch(r"-?\d+(\.\d+)?", shown), f"{shown!r} is not a plain decimal"
        assert float(shown) == values[int(row_id)], (shown, values[int(row_id)])
        expression = QgsExpression(f'"price" = {shown}')
        assert not expression.hasParserError(), expression.parserErrorString()
        selected = {f["id"] for f in layer.getFeatures(QgsFeatureRequest(expression))}
        assert selected == set(numpy.flatnonzero(stored == float(shown)).tolist()), shown
    assert "| 1234567.89 |" in table and "| 55.976864 |" in table and "| 0.00001 |" in table
    assert "| 0.30000000000000004 |" in table and "| 100000000000000000000 |" in table


def test_exact_number_is_the_shortest_round_trip_decimal_without_an_exponent():
    assert exact_number(1e-05) == "0.00001"
    assert exact_number(1234567.89) == "1234567.89"
    assert exact_number(3.0) == "3" and exact_number(-0.0) == "0"
    for value in AWKWARD + [random.Random(3).uniform(-1, 1) * 10.0**k for k in range(-15, 16)]:
        text = exact_number(value)
        assert float(text) == value and "e" not in text.lower() and "," not in text
        if "e" not in repr(value) and value:
            assert text == repr(value).removesuffix(".0")  # Python's shortest round-trip digits, nothing more


@pytest.fixture
def charts(tool_ctx, tmp_path, monkeypatch) -> InsightTools:
    monkeypatch.setattr(maker, "profile_data_dir", lambda: tmp_path / "profile")
    return InsightTools(tool_ctx)


def _bin_labels(text: str) -> list[tuple[str, str, int]]:
    rows = _cells(text[text.index("| ") :])
    return [(*label.split(" – "), int(count.replace(",", ""))) for label, count in rows]


@pytest.mark.parametrize(
    "values",
    [
        [55.94443 + 0.04573 * float(x) for x in numpy.random.default_rng(1).random(30)],  # a narrow range of latitudes
        [0.0000123, 0.0000456, 12345.67, 23456.5, 1234567.8, 7654321.1],  # tiny to millions
        [1e9 + 0.001 * i for i in range(40)],  # a tiny spread far from zero
    ],
    ids=["narrow", "wide", "far"],
)
def test_histogram_bins_read_apart_and_agree_with_numpy(charts, demo_project, values):
    _layer(demo_project, "binned", "v", values)
    text = call_in_thread(charts.make_chart, "binned", "histogram", "v").text
    bins = _bin_labels(text)
    counts, edges = numpy.histogram(numpy.array(values), bins=len(bins))
    labels = [bins[0][0]] + [hi for _lo, hi, _n in bins]
    assert [n for *_, n in bins] == counts.tolist()
    assert len(set(labels)) == len(labels), labels  # adjacent edges never read alike
    assert all(low == previous for (low, _, _), (_, previous, _) in zip(bins[1:], bins, strict=False))
    step = float(edges[1] - edges[0])
    for shown, edge in zip(labels, edges, strict=True):
        assert "e" not in shown.lower(), shown
        assert abs(float(shown.replace(",", "")) - edge) <= step / 10, (shown, edge)


def test_chart_statistics_are_plain_decimals_not_exponents(charts, demo_project):
    layer = QgsVectorLayer("None?field=cat:string&field=v:double", "stats", "memory")
    rows = [("a", 12345.67), ("a", 23456.5), ("b", 0.0000123), ("b", 0.0000456), ("c", 1234567.8), ("c", 7654321.1)]
    features = []
    for cat, v in rows:
        feature = QgsFeature(layer.fields())
        feature.setAttributes([cat, v])
        features.append(feature)
    assert layer.dataProvider().addFeatures(features)[0]
    demo_project.addMapLayer(layer)
    text = call_in_thread(charts.make_chart, "stats", "bar", "cat", "mean(v)").text
    shown = dict(_cells(text[text.index("| ") :]))
    for cat in ("a", "b", "c"):
        mean = float(numpy.mean([v for c, v in rows if c == cat]))
        assert "e" not in shown[cat].lower(), shown
        assert float(shown[cat].replace(",", "")) == pytest.approx(mean, rel=1e-5), (cat, shown[cat], mean)
    assert shown == {"c": "4,444,444", "a": "17,901.1", "b": "0.00002895"}
