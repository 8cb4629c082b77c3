"""Voronoi on two points: QGIS refuses; the error gives a way forward that answers the same question.

Trap: two points.  The refusal (QGIS 3.22 while running, 3.34+ before starting) names nearest-neighbour
assignment (native:joinbynearest) and the perpendicular bisector; following it, each location goes to its
nearer point (checked with shapely).  Clean twin: three points make three cells, with no hint.
"""

from __future__ import annotations

from qgis.core import QgsFeature, QgsGeometry, QgsPointXY, QgsVectorLayer
from shapely.geometry import Point

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.family import ProcessingTools
from tests.support.runs import call_in_thread

SITES = [(560000.0, 6200000.0), (561000.0, 6200500.0)]
HOMES = [(560100.0, 6200300.0), (560700.0, 6200100.0), (560450.0, 6200400.0), (560900.0, 6200600.0)]


def points(coordinates: list[tuple[float, float]], name: str) -> QgsVectorLayer:
    layer = QgsVectorLayer("Point?crs=EPSG:25832&field=n:integer", name, "memory")
    features = []
    for index, (x, y) in enumerate(coordinates):
        feature = QgsFeature(layer.fields())
        feature.setAttributes([index])
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(x, y)))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def test_two_points_get_a_way_forward_that_answers(tool_ctx, demo_project):
    demo_project.addMapLayer(points(SITES, "sites"))
    demo_project.addMapLayer(points(HOMES, "homes"))
    tools = ProcessingTools(tool_ctx)
    try:
        call_in_thread(tools.run_algorithm, "qgis:voronoipolygons", {"INPUT": "sites"}, "cells")
    except ToolError as refused:  # 3.22 fails while running, 3.34+ (native) before it starts: both say the way
        message = str(refused)
        assert "native:joinbynearest" in message and "perpendicular bisector" in message, message
    else:
        assert demo_project.mapLayersByName("cells")[0].featureCount() == 2
    call_in_thread(
        tools.run_algorithm, "native:joinbynearest", {"INPUT": "homes", "INPUT_2": "sites", "NEIGHBORS": 1}, "served"
    )
    served = {f["n"]: f["n_2"] for f in demo_project.mapLayersByName("served")[0].getFeatures()}
    expected = {i: min(range(2), key=lambda s: Point(h).distance(Point(SITES[s]))) for i, h in enumerate(HOMES)}
    assert served == expected


def test_three_points_make_three_cells_without_a_hint(tool_ctx, demo_project):
    demo_project.addMapLayer(points([*SITES, (560300.0, 6201000.0)], "three"))
    text = call_in_thread(
        ProcessingTools(tool_ctx).run_algorithm, "qgis:voronoipolygons", {"INPUT": "three"}, "cells"
    ).text
    assert "Way forward" not in text
    assert demo_project.mapLayersByName("cells")[0].featureCount() == 3
