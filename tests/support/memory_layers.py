"""Small memory layers made in a test, for the result store's copy and its checks."""

from __future__ import annotations

from qgis.core import QgsFeature, QgsGeometry, QgsPointXY, QgsVectorLayer


def numbered_points(name: str, count: int) -> QgsVectorLayer:
    """``count`` points numbered 0.. in field ``n``, in the demo town.

    They lie inside EPSG:25832's area of use: QGIS 3.40 checks a stored result's coordinates against it.
    """
    layer = QgsVectorLayer("Point?crs=EPSG:25832&field=n:integer", name, "memory")
    rows = []
    for n in range(count):
        row = QgsFeature(layer.fields())
        row.setAttributes([n])
        row.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(560_000 + n, 6_040_000 + n)))
        rows.append(row)
    assert layer.dataProvider().addFeatures(rows)
    return layer
