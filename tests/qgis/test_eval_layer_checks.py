"""The evals' layer checks (evals/runner.py check_layer): values found under the model's own field name."""

from __future__ import annotations

from qgis.core import QgsFeature, QgsVectorLayer

from evals.runner import check_layer
from evals.task import LayerExpect


def _counts(field: str, values: dict[str, int]) -> QgsVectorLayer:
    layer = QgsVectorLayer(f"Polygon?crs=EPSG:25832&field=name:string&field={field}:integer", "counts", "memory")
    for name, value in values.items():
        feature = QgsFeature(layer.fields())
        feature.setAttributes([name, value])
        layer.dataProvider().addFeature(feature)
    return layer


def test_values_under_another_field_name_pass_only_if_they_all_match():
    want = LayerExpect(count=2, values=("name", "n", {"Centre": 6, "Westend": 3}))
    assert check_layer("counts", _counts("n", {"Centre": 6, "Westend": 3}), want) == []
    assert check_layer("counts", _counts("NUMPOINTS", {"Centre": 6, "Westend": 3}), want) == []  # QGIS's default
    wrong = check_layer("counts", _counts("NUMPOINTS", {"Centre": 6, "Westend": 4}), want)
    assert wrong == ["layer 'counts' has no field 'n', nor another holding its values"]
    wrong = check_layer("counts", _counts("n", {"Centre": 6, "Westend": 4}), want)  # its own name: each value
    assert wrong == ["layer 'counts': name='Westend' has n=4, expected 3"]
