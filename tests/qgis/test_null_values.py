"""NULL and Qt-typed attribute values never reach the model's text or a typed result as Qt objects.

Under Qt 5 QGIS hands a NULL attribute to Python as a null ``QVariant`` (it prints ``NULL`` and
cannot be serialised); dates come as ``QDate``/``QDateTime``/``QTime`` and binary fields as
``QByteArray``; under Qt 6 (QGIS 4) the same values arrive differently.  The tools read features
through ``tools.layers.python_value``; these tests read a real memory layer with a NULL in every
field type and check what comes out.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from qgis.core import NULL, QgsFeature, QgsVectorLayer
from qgis.PyQt.QtCore import QByteArray, QDate, QDateTime, QTime

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.layers import plan_vector_read, python_value, read_sample
from geogpt_qgis.tools.project.family import ProjectTools

FIELDS = (
    "i:integer",
    "d:double",
    "s:string",
    "day:date",
    "stamp:datetime",
    "clock:time",
    "flag:boolean",
    "blob:binary",
)
PLAIN = (type(None), int, float, str, bool, bytes, dt.date, dt.datetime, dt.time)
VALUES = [
    7,
    2.5,
    "Elm",
    QDate(2024, 1, 2),
    QDateTime(QDate(2024, 1, 2), QTime(3, 4, 5)),
    QTime(3, 4, 5),
    True,
    QByteArray(b"\x00ab"),
]
PYTHON = [7, 2.5, "Elm", dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5), dt.time(3, 4, 5), True, b"\x00ab"]


@pytest.fixture
def nullable(demo_project) -> QgsVectorLayer:
    """A layer with one all-NULL feature, then one with a value in every field."""
    layer = QgsVectorLayer("None?" + "&".join(f"field={f}" for f in FIELDS), "nullable", "memory")
    assert layer.isValid() and layer.fields().count() == len(FIELDS)
    empty = QgsFeature(layer.fields())
    empty.setAttributes([NULL] * len(FIELDS))
    full = QgsFeature(layer.fields())
    full.setAttributes(VALUES)
    assert layer.dataProvider().addFeatures([empty, full])
    demo_project.addMapLayer(layer)
    return layer


def test_rows_read_from_a_layer_hold_only_plain_python_values(nullable):
    raw = [feature.attributes() for feature in nullable.getFeatures()]
    assert raw[0][0] == NULL  # the real thing: what QGIS hands over for NULL on this Qt
    rows = read_sample(plan_vector_read(nullable), 10, CancelToken())
    assert rows == [tuple([None] * len(FIELDS)), tuple(PYTHON)]
    assert {type(v) for row in rows for v in row} <= set(PLAIN)
    json.dumps([[v.hex() if isinstance(v, bytes) else v for v in row] for row in rows], default=str)


@pytest.mark.parametrize("value", [NULL, *VALUES])
def test_python_value_turns_every_qt_value_into_a_plain_one(value):
    assert isinstance(python_value(value), PLAIN), (value, python_value(value))
    assert python_value(python_value(value)) == python_value(value)


def test_the_model_reads_null_as_null_and_dates_as_dates(tool_ctx, nullable):
    tools = ProjectTools(tool_ctx)
    table = tools.read_features("nullable").text
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| i ")]
    assert len(rows) == 2, table
    first, second = ([c.strip() for c in row.strip("|").split("|")] for row in rows)
    assert first == ["NULL"] * len(FIELDS)
    assert second[:3] == ["7", "2.5", "Elm"]
    assert second[3:6] == ["2024-01-02", "2024-01-02 03:04:05", "03:04:05"]
    described = tools.describe_layer("nullable").text
    for text in (table, described):
        assert "QVariant" not in text and "PyQt" not in text and "QDate" not in text and "QByteArray" not in text
    assert "Fields (8; values from all 2 features)" in described, described
    assert "- i (integer): min 7, max 7, mean 7; 50% null" in described, described
    assert "- day (date): from 2024-01-02 to 2024-01-02; 50% null" in described, described
