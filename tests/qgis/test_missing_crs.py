"""A layer with no CRS is named where it enters and before an algorithm reads it, whatever QGIS makes of it.

QGIS 3.40+ leaves such a layer's CRS invalid, 3.22 names a GeoPackage's undefined SRS "Undefined geographic
SRS": counted against zones in a CRS, its points silently fall outside (0 of 5).  Clean twin: the same points
with their CRS get no note.
"""

from __future__ import annotations

import pytest
from qgis.core import QgsCoordinateReferenceSystem, QgsFeature, QgsGeometry, QgsPointXY, QgsVectorLayer

from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

NOTE = "has no CRS"


def wells(crs: str) -> QgsVectorLayer:
    layer = QgsVectorLayer(f"Point{'?crs=' + crs if crs else ''}", "wells", "memory")
    if not crs:
        layer.setCrs(QgsCoordinateReferenceSystem())  # invalid, as QGIS 3.40+ reads a file without one
    features = []
    for i in range(5):
        feature = QgsFeature(layer.fields())
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(560030.0 + 50 * i, 6200100.0)))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


@pytest.mark.parametrize(("crs", "noted"), [("", True), ("EPSG:25832", False)], ids=["no-crs", "twin"])
def test_a_layer_without_crs_is_named_on_describe_and_before_a_run(tool_ctx, demo_project, crs, noted):
    demo_project.addMapLayer(wells(crs))
    described = str(call_in_thread(ProjectTools(tool_ctx).describe_layer, "wells").text)
    assert (NOTE in described) is noted, described
    ran = str(
        call_in_thread(
            ProcessingTools(tool_ctx).run_algorithm,
            "native:countpointsinpolygon",
            {"POLYGONS": "districts", "POINTS": "wells"},
            "counted",
        ).text
    )
    assert (NOTE in ran) is noted, ran
    if noted:
        assert "native:assignprojection" in ran
