"""Figures carry what they are: every measure an expression makes says its unit and method.

Traps, each with a clean twin, checked against pyproj.Geod (ellipsoidal) and shapely (planar):

- a parcel in US survey feet (EPSG:2229): ``area($geometry)`` is 1,000,000 ft², printed bare;
  ``$area`` is 92,903 m² on GRS 1980;
- a project without an ellipsoid (a new headless project): ``$area`` on EPSG:4326 or Web
  Mercator was planar (square degrees × 111,320², Mercator-inflated m²) and called m²;
- what a calculator wrote is read back with its unit (read_features, statistics).

Tools are called from a fresh worker thread, as the agent's tool threads are.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyproj import Geod, Transformer
from qgis.core import QgsFeature, QgsField, QgsGeometry, QgsProject, QgsVectorLayer
from shapely import wkt as shapely_wkt

from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

US_FOOT = 1200 / 3937
# 1,000 x 1,000 US survey feet in Los Angeles (EPSG:2229 coordinates).
FEET_SQUARE = "POLYGON((6500000 1850000, 6501000 1850000, 6501000 1851000, 6500000 1851000, 6500000 1850000))"
# About 80 x 80 m in Rome (lon/lat) and a 300 x 300 m block in Oslo (Web Mercator).
DEGREES_SQUARE = "POLYGON((12.49 41.89, 12.491 41.89, 12.491 41.8907, 12.49 41.8907, 12.49 41.89))"
MERCATOR_SQUARE = "POLYGON((1195000 8380000, 1195300 8380000, 1195300 8380300, 1195000 8380300, 1195000 8380000))"


@pytest.fixture
def bare(qgis_app, bridge) -> Iterator[ToolContext]:
    """A new headless project: no CRS, no ellipsoid (as the CLI and the MCP server start)."""
    project = QgsProject.instance()
    project.clear()
    assert project.ellipsoid() == "NONE" and not project.crs().isValid()
    yield ToolContext(project=project, bridge=bridge)
    project.clear()


def polygon_layer(crs: str, wkt: str, name: str) -> QgsVectorLayer:
    layer = QgsVectorLayer(f"Polygon?crs={crs}&field=id:integer", name, "memory")
    feature = QgsFeature(layer.fields())
    feature.setAttributes([1])
    feature.setGeometry(QgsGeometry.fromWkt(wkt))
    layer.dataProvider().addFeatures([feature])
    layer.updateExtents()
    return layer


def geod_area(wkt: str, source_crs: str, ellps: str, geographic_crs: str) -> float:
    """The polygon's area on the ellipsoid (m²), by pyproj.Geod, after pyproj's own transform to lon/lat."""
    shape = shapely_wkt.loads(wkt)
    to_lonlat = Transformer.from_crs(source_crs, geographic_crs, always_xy=True)
    lons, lats = to_lonlat.transform(*zip(*shape.exterior.coords, strict=True))
    area, _ = Geod(ellps=ellps).polygon_area_perimeter(lons, lats)
    return abs(area)


def calculate(ctx: ToolContext, layer: str, formula: str, out: str) -> tuple[str, float, object]:
    text = call_in_thread(
        ProcessingTools(ctx).run_algorithm,
        "native:fieldcalculator",
        {"INPUT": layer, "FIELD_NAME": "a", "FIELD_TYPE": 0, "FIELD_PRECISION": 6, "FORMULA": formula},
        out,
    )
    result = ctx.project.mapLayersByName(out)[0]
    return text.text, next(result.getFeatures())["a"], text.artifact


# -- linear units: US survey feet ----------------------------------------------------------
def test_planar_area_in_feet_says_square_feet_not_square_metres(bare):
    bare.project.addMapLayer(polygon_layer("EPSG:2229", FEET_SQUARE, "parcels"))
    text, value, artifact = calculate(bare, "parcels", "area($geometry)", "parcels_area")
    assert value == pytest.approx(shapely_wkt.loads(FEET_SQUARE).area)  # 1,000,000: planar, in the CRS's feet
    assert "ftUS²" in text and "planar in EPSG:2229" in text and "Not m²" in text, text
    (figure,) = artifact.figures
    assert figure.unit == "ftUS²" and figure.method == "planar in EPSG:2229" and figure.warning
    assert f"{US_FOOT**2:.9g}" in figure.warning  # the factor to m², US survey foot (not 0.3048²)


def test_ellipsoidal_area_in_feet_crs_is_square_metres_on_grs80(bare):
    """Twin: $area on the same parcel is m² on the layer's datum's ellipsoid, and says so."""
    bare.project.addMapLayer(polygon_layer("EPSG:2229", FEET_SQUARE, "parcels"))
    text, value, artifact = calculate(bare, "parcels", "$area", "parcels_m2")
    expected = geod_area(FEET_SQUARE, "EPSG:2229", "GRS80", "EPSG:4269")
    assert expected == pytest.approx(1e6 * US_FOOT**2, rel=2e-4)  # 92,903 m², less the projection's scale
    assert value == pytest.approx(expected, rel=1e-5)
    (figure,) = artifact.figures
    assert (figure.unit, figure.method, figure.warning) == ("m²", "ellipsoidal on GRS 1980", "")
    assert "m², ellipsoidal on GRS 1980" in text


# -- a project without an ellipsoid ----------------------------------------------------------
@pytest.mark.parametrize(
    ("crs", "wkt", "planar_wrong"),
    [("EPSG:4326", DEGREES_SQUARE, "square degrees"), ("EPSG:3857", MERCATOR_SQUARE, "Mercator")],
)
def test_area_in_a_project_without_ellipsoid_is_ellipsoidal_on_wgs84(bare, crs, wkt, planar_wrong):
    bare.project.addMapLayer(polygon_layer(crs, wkt, "zone"))
    text, value, artifact = calculate(bare, "zone", "$area", "zone_area")
    expected = geod_area(wkt, crs, "WGS84", "EPSG:4326")
    assert value == pytest.approx(expected, rel=1e-5), text  # was 12,000-ish / Mercator-inflated
    assert artifact.figures[0].method == "ellipsoidal on WGS 84"
    # The planar reading of the same function is named for what it is.
    text, _, artifact = calculate(bare, "zone", "area($geometry)", "zone_planar")
    assert artifact.figures[0].warning and "$area" in artifact.figures[0].warning
    assert planar_wrong in text, text


def test_a_filter_in_a_bare_project_measures_on_the_ellipsoid(bare):
    """read_features with $area: the true 6,654 m² parcel is not above 10,000 (planar-scaled was 12,000+)."""
    bare.project.addMapLayer(polygon_layer("EPSG:4326", DEGREES_SQUARE, "zone"))
    expected = geod_area(DEGREES_SQUARE, "EPSG:4326", "WGS84", "EPSG:4326")
    tools = ProjectTools(bare)
    below = call_in_thread(tools.read_features, "zone", None, f"$area < {expected * 1.001}").text
    above = call_in_thread(tools.read_features, "zone", None, f"$area > {expected * 0.999}").text
    assert "All 1 " in below and "All 1 " in above, (below, above)


# -- a written figure is read back with its unit ---------------------------------------------
def test_read_features_and_statistics_carry_the_unit_written(bare):
    bare.project.addMapLayer(polygon_layer("EPSG:4326", DEGREES_SQUARE, "zone"))
    _, value, _ = calculate(bare, "zone", "$area", "zone_area")
    read = call_in_thread(ProjectTools(bare).read_features, "zone_area", ["a"])
    assert "a (m², ellipsoidal on WGS 84)" in read.text, read.text
    assert read.artifact.figures[0].unit == "m²"
    stats = call_in_thread(
        ProcessingTools(bare).run_algorithm,
        "qgis:basicstatisticsforfields",
        {"INPUT_LAYER": "zone_area", "FIELD_NAME": "a"},
        "zone_stats",
    )
    assert "m² (ellipsoidal on WGS 84)" in stats.text, stats.text
    (total,) = [f for f in stats.artifact.figures if f.what.startswith("SUM")]
    assert total.value == pytest.approx(value) and total.unit == "m²"
    described = call_in_thread(ProjectTools(bare).describe_layer, "zone_area").text
    assert "- a (Real, m², ellipsoidal on WGS 84): " in described, described


def test_an_expression_field_in_a_bare_project_says_how_qgis_measured_it(bare):
    """QGIS measures a layer's expression fields on the project's ellipsoid: none here, so it is said."""
    layer = polygon_layer("EPSG:4326", DEGREES_SQUARE, "zone")
    bare.project.addMapLayer(layer)
    real = QgsField(QgsVectorLayer("None?field=x:double", "types", "memory").fields()[0])  # a Real, Qt 5 and 6
    real.setName("area_m2")
    layer.addExpressionField("$area", real)
    read = call_in_thread(ProjectTools(bare).read_features, "zone", ["area_m2"]).text
    assert "area_m2 (m², planar in EPSG:4326 (the project has no ellipsoid))" in read, read
    assert "not a true measure" in read
    described = call_in_thread(ProjectTools(bare).describe_layer, "zone").text
    assert "Note: field 'area_m2'" in described and "not a true measure" in described, described


def test_a_count_and_a_text_length_carry_no_unit(bare):
    """Clean twins: no measure, no unit, no note."""
    bare.project.addMapLayer(polygon_layer("EPSG:2229", FEET_SQUARE, "parcels"))
    text, value, artifact = calculate(bare, "parcels", "length('abc') + \"id\"", "parcels_plain")
    assert value == 4 and not artifact.figures and "Measures" not in text


def test_an_aggregate_of_areas_says_its_unit_and_a_count_does_not(bare):
    """native:aggregate: sum($area) is m² on the ellipsoid (pyproj), its count has no unit."""
    bare.project.addMapLayer(polygon_layer("EPSG:4326", DEGREES_SQUARE, "zone"))
    aggregates = [
        {"aggregate": "sum", "input": "$area", "name": "total", "type": 6, "length": 20, "precision": 3},
        {"aggregate": "count", "input": "$area", "name": "n", "type": 2, "length": 10, "precision": 0},
    ]
    text = call_in_thread(
        ProcessingTools(bare).run_algorithm,
        "native:aggregate",
        {"INPUT": "zone", "GROUP_BY": "NULL", "AGGREGATES": aggregates},
        "zone_total",
    )
    assert [f.what for f in text.artifact.figures] == ["AGGREGATES 'total': $area"], text.text
    read = call_in_thread(ProjectTools(bare).read_features, "zone_total", ["total", "n"]).text
    assert "| total (m², ellipsoidal on WGS 84) | n |" in read, read
    total = float(read.splitlines()[3].strip("|").split("|")[0])
    assert total == pytest.approx(geod_area(DEGREES_SQUARE, "EPSG:4326", "WGS84", "EPSG:4326"), abs=0.001)


def test_a_value_derived_from_an_area_is_not_labelled_as_one(bare):
    """people / ($area / 1e6) is people per km²: the field gets no m², the note still names $area's method."""
    layer = polygon_layer("EPSG:4326", DEGREES_SQUARE, "zone")
    bare.project.addMapLayer(layer)
    text, value, _ = calculate(bare, "zone", '"id" * 500 / ($area / 1000000)', "zone_density")
    expected = 500 / (geod_area(DEGREES_SQUARE, "EPSG:4326", "WGS84", "EPSG:4326") / 1e6)
    assert value == pytest.approx(expected, rel=1e-5)
    assert "$area: m², ellipsoidal on WGS 84" in text  # what it used, and how that was measured
    read = call_in_thread(ProjectTools(bare).read_features, "zone_density", ["a"]).text
    assert "| a |" in read and "m²" not in read, read
    calculate(bare, "zone", "round($area, 1)", "zone_rounded")  # still an area: labelled
    assert (
        "a (m², ellipsoidal on WGS 84)" in call_in_thread(ProjectTools(bare).read_features, "zone_rounded", ["a"]).text
    )
