"""Output checks without false alarms: a reprojection is checked against the operation QGIS used.

Trap: EPSG:4806 (Monte Mario, Rome) to EPSG:4326.  QGIS applies the datum shift (a Helmert
transformation); pyproj's default is a ballpark without it, 74 m off.  Checked against that
default, the correct result was called "a fault in the processing" and withheld.  Clean twin:
a reprojection without a datum shift.  Figures are checked against pyproj with the best
available operation (``allow_ballpark=False``), independently of QGIS.
"""

from __future__ import annotations

import pytest
from pyproj import Geod, Transformer
from qgis.core import QgsFeature, QgsGeometry, QgsPointXY, QgsProject, QgsVectorLayer

from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.processing.output_checks import SuspectOutput, check_reprojection
from tests.support.runs import call_in_thread

ROME = [(0.0, 41.9), (0.002, 41.901), (-0.001, 41.8995)]  # longitudes from the Rome meridian (EPSG:4806)
BERLIN_UTM = [(389000.0, 5819000.0), (392500.0, 5821500.0)]


def points(crs: str, coordinates: list[tuple[float, float]], name: str = "pts") -> QgsVectorLayer:
    layer = QgsVectorLayer(f"Point?crs={crs}&field=n:integer", name, "memory")
    features = []
    for index, (x, y) in enumerate(coordinates):
        feature = QgsFeature(layer.fields())
        feature.setAttributes([index])
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(x, y)))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    layer.updateExtents()
    return layer


def only_layer(project: QgsProject, name: str) -> QgsVectorLayer:
    found = project.mapLayersByName(name)
    assert len(found) == 1, name
    return found[0]


def moved(layer: QgsVectorLayer) -> dict[int, tuple[float, float]]:
    return {f["n"]: (f.geometry().asPoint().x(), f.geometry().asPoint().y()) for f in layer.getFeatures()}


def test_monte_mario_to_wgs84_is_kept_and_right(tool_ctx, demo_project):
    """Was withheld: 'a fault in the processing, not in your request'."""
    demo_project.addMapLayer(points("EPSG:4806", ROME, "rome_mm"))
    tools = ProcessingTools(tool_ctx)
    text = call_in_thread(
        tools.run_algorithm, "native:reprojectlayer", {"INPUT": "rome_mm", "TARGET_CRS": "EPSG:4326"}, "rome_wgs84"
    ).text
    assert "fault" not in text and "withheld" not in text, text
    best = Transformer.from_crs("EPSG:4806", "EPSG:4326", always_xy=True, allow_ballpark=False)
    ballpark = Transformer.from_crs("EPSG:4806", "EPSG:4326", always_xy=True)
    geod = Geod(ellps="WGS84")
    for n, (x, y) in moved(only_layer(demo_project, "rome_wgs84")).items():
        ex, ey = best.transform(*ROME[n])
        assert geod.inv(x, y, ex, ey)[2] < 0.01  # metres: the datum shift was applied
        bx, by = ballpark.transform(*ROME[n])
        assert geod.inv(x, y, bx, by)[2] > 50  # and it is the one the old check called a fault


def test_no_datum_shift_twin_is_kept_without_notes(tool_ctx, demo_project):
    demo_project.addMapLayer(points("EPSG:25833", BERLIN_UTM, "berlin_utm"))
    tools = ProcessingTools(tool_ctx)
    text = call_in_thread(
        tools.run_algorithm, "native:reprojectlayer", {"INPUT": "berlin_utm", "TARGET_CRS": "EPSG:4326"}, "berlin_ll"
    ).text
    assert "Note:" not in text, text
    expected = Transformer.from_crs("EPSG:25833", "EPSG:4326", always_xy=True)
    for n, point in moved(only_layer(demo_project, "berlin_ll")).items():
        assert point == pytest.approx(expected.transform(*BERLIN_UTM[n]), abs=1e-8)


def test_untransformed_coordinates_are_still_refused_with_qgis_s_operation():
    source = points("EPSG:4806", ROME)
    untransformed = points("EPSG:4326", ROME)  # Rome-meridian longitudes labelled Greenwich: 12.45° west
    with pytest.raises(SuspectOutput, match=r"with the operation QGIS used \(.*helmert"):
        check_reprojection(source.crs(), source.extent(), untransformed, "", QgsProject.instance().transformContext())


def test_a_difference_the_check_cannot_attribute_keeps_the_result_and_says_so():
    """No usable operation (pyproj cannot run the one given): only the ballpark to compare with."""
    source = points("EPSG:4806", ROME)
    best = Transformer.from_crs("EPSG:4806", "EPSG:4326", always_xy=True, allow_ballpark=False)
    right = points("EPSG:4326", [best.transform(*xy) for xy in ROME])
    notes = check_reprojection(source.crs(), source.extent(), right, "the copy", operation="+proj=nonesuch")
    assert len(notes) == 1 and "cannot say which is right" in notes[0] and "kept" in notes[0], notes
