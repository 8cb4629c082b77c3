"""Distances mean what the model meant: metres on inputs in degrees (also files and "number" widths), the layer's units.

Every expected figure comes from pyproj and shapely, not from QGIS.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, ogr, osr
from pyproj import CRS, Transformer
from qgis.core import (
    QgsApplication,
    QgsCoordinateReferenceSystem,
    QgsProject,
    QgsRectangle,
    QgsUnitTypes,
    QgsVectorLayer,
)
from shapely import wkt
from shapely.geometry import LineString, Point
from shapely.ops import transform

from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.processing.output_checks import SuspectOutput, check_extent
from geogpt_qgis.tools.processing.params import LAYER_TYPES, LINEAR_NUMBERS
from tests.support.runs import call_in_thread

UTM32 = "EPSG:32632"  # the zone the demo town (EPSG:25832, Denmark) falls in


@pytest.fixture
def tools(tool_ctx) -> ProcessingTools:
    return ProcessingTools(tool_ctx)


@pytest.fixture
def gpkg(demo_project) -> Path:
    return Path(demo_project.fileName()).with_name("elvbury.gpkg")


def run(tools: ProcessingTools, algorithm: str, parameters: dict, output_name: str = "") -> ToolResult:
    return call_in_thread(tools.run_algorithm, algorithm, parameters, output_name)


def layer(project: QgsProject, name: str) -> QgsVectorLayer:
    (found,) = project.mapLayersByName(name)
    return found


def shapes(vector: QgsVectorLayer) -> list:
    """The layer's geometries for shapely; arcs (wedges) as fine straight segments."""
    found = []
    for feature in vector.getFeatures():
        geometry = feature.geometry()
        geometry.convertToStraightSegment(0.0001)
        found.append(wkt.loads(geometry.asWkt()))
    return found


def in_degrees(gpkg: Path, name: str, folder: Path) -> str:
    """A copy of a demo layer in EPSG:4326, as an OGR path with its layer name."""
    out = folder / f"{name}_4326.gpkg"
    gdal.VectorTranslate(str(out), str(gpkg), layers=[name], dstSRS="EPSG:4326", layerName=f"{name}_4326")
    return f"{out}|layername={name}_4326"


def utm_shapes(path: str) -> list:
    """The file's geometries moved to UTM 32N by pyproj, independently of QGIS."""
    to_utm = Transformer.from_crs("EPSG:4326", UTM32, always_xy=True).transform
    source = QgsVectorLayer(path, "source", "ogr")
    return [transform(to_utm, wkt.loads(f.geometry().asWkt())) for f in source.getFeatures()]


# -- 1a: a file path in degrees is reprojected like a project layer -----------------------
def test_a_buffer_on_a_file_in_degrees_is_in_metres(tools, demo_project, gpkg, tmp_path):
    path = in_degrees(gpkg, "hospitals", tmp_path)
    tools.notice_user_text(f"the file is {path}")  # outside the project: the user names it (else it asks)
    result = run(tools, "native:buffer", {"INPUT": path, "DISTANCE": 500, "SEGMENTS": 64}, "zones").text
    assert "is in EPSG:4326 (degrees)" in result and f"reprojected to {UTM32}" in result
    zones = layer(demo_project, "zones")
    assert zones.crs() == QgsCoordinateReferenceSystem(UTM32)
    expected = sorted(v for p in utm_shapes(path) for v in (p.x, p.y))
    got = shapes(zones)
    assert sorted(v for g in got for v in (g.centroid.x, g.centroid.y)) == pytest.approx(expected, abs=0.05)
    for shape in got:  # a 500 m circle, not a 500-degree one
        assert shape.area == pytest.approx(Point(0, 0).buffer(500, quad_segs=1024).area, rel=2e-3)


# -- 1b: linear parameters QGIS types "number" ------------------------------------------
def test_linear_numbers_exist_in_the_running_registry():
    registry = QgsApplication.processingRegistry()
    for (algorithm_id, name), parent in LINEAR_NUMBERS.items():
        algorithm = registry.algorithmById(algorithm_id)
        assert algorithm is not None, algorithm_id
        assert algorithm.parameterDefinition(name).type() in ("number", "distance"), (algorithm_id, name)
        assert algorithm.parameterDefinition(parent).type() in LAYER_TYPES, (algorithm_id, parent)


def test_tapered_buffer_widths_on_a_layer_in_degrees_are_metres(tools, demo_project, gpkg, tmp_path):
    path = in_degrees(gpkg, "rivers", tmp_path)
    demo_project.addMapLayer(QgsVectorLayer(path, "rivers_wgs84", "ogr"))
    params = {"INPUT": "rivers_wgs84", "START_WIDTH": 10, "END_WIDTH": 20, "SEGMENTS": 32}
    result = run(tools, "native:taperedbuffer", params, "tapered").text
    assert "START_WIDTH=10 would be degrees" in result
    tapered = layer(demo_project, "tapered")
    assert tapered.crs() == QgsCoordinateReferenceSystem(UTM32)
    rivers = utm_shapes(path)
    for shape in shapes(tapered):
        river = min(rivers, key=lambda r: r.distance(shape.centroid))
        # Every point of the result lies within the widest width of its river (metres, checked by GEOS),
        # and the result covers a strip at least the narrowest width wide.
        assert river.buffer(20 + 0.5).contains(shape)
        assert shape.area >= river.length * 10 * 0.95


def test_wedge_radii_on_a_layer_in_degrees_are_metres(tools, demo_project, gpkg, tmp_path):
    path = in_degrees(gpkg, "hospitals", tmp_path)
    demo_project.addMapLayer(QgsVectorLayer(path, "hospitals_wgs84", "ogr"))
    params = {"INPUT": "hospitals_wgs84", "AZIMUTH": 0, "WIDTH": 90, "OUTER_RADIUS": 500, "INNER_RADIUS": 100}
    result = run(tools, "native:wedgebuffers", params, "wedges").text
    assert "reprojected to" in result
    wedges = shapes(layer(demo_project, "wedges"))
    annulus_quarter = (math.pi * 500**2 - math.pi * 100**2) / 4
    assert len(wedges) == len(utm_shapes(path))
    for wedge in wedges:
        assert wedge.area == pytest.approx(annulus_quarter, rel=2e-2)


# -- 2: thousands separators --------------------------------------------------------------
@pytest.mark.parametrize(
    ("written", "expected"),
    [("1,000 m", 1000.0), ("12,500.5 m", 12500.5), ("1,000", 1000.0), ("2,000,000 cm", 20000.0)],
)
def test_thousands_separators_are_grouping_not_decimals(tools, demo_project, written, expected):
    before = sorted(demo_project.mapLayers())
    with pytest.raises(ToolError) as info:
        run(tools, "native:buffer", {"INPUT": "schools", "DISTANCE": written})
    assert f"give DISTANCE={expected:g}" in str(info.value)
    assert sorted(demo_project.mapLayers()) == before


@pytest.mark.parametrize("written", ["2,5 km", "1,50 m", "1,0000"])
def test_an_ambiguous_comma_asks_for_a_plain_number(tools, written):
    with pytest.raises(ToolError) as info:
        run(tools, "native:buffer", {"INPUT": "schools", "DISTANCE": written})
    assert "is not a plain number" in str(info.value)
    assert "give DISTANCE=" not in str(info.value)


# -- 3: hints in the layer CRS's units -----------------------------------------------------
def feet_layer(project: QgsProject, folder: Path) -> None:
    """A point in EPSG:2263 (New York, US survey feet) added as 'ny_points'."""
    path = folder / "ny.gpkg"
    source = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(2263)
    points = source.CreateLayer("ny_points", srs, ogr.wkbPoint)
    x, y = Transformer.from_crs("EPSG:4326", "EPSG:2263", always_xy=True).transform(-73.9857, 40.7484)
    feature = ogr.Feature(points.GetLayerDefn())
    feature.SetGeometry(ogr.CreateGeometryFromWkt(f"POINT ({x} {y})"))
    points.CreateFeature(feature)
    source = None
    project.addMapLayer(QgsVectorLayer(f"{path}|layername=ny_points", "ny_points", "ogr"))


def feet_name() -> str:
    """QGIS's name for EPSG:2263's unit: "feet" on 3.22, "feet (US survey)" from 3.30."""
    name = QgsUnitTypes.toString(QgsCoordinateReferenceSystem("EPSG:2263").mapUnits())
    assert name.startswith("feet")
    return name


@pytest.mark.parametrize(("written", "metres"), [("500 ft", 152.4), ("1 km", 1000.0), ("0.5 mi", 804.672)])
def test_unit_hints_are_in_the_layer_crs_units(tools, demo_project, tmp_path, written, metres):
    feet_layer(demo_project, tmp_path)
    with pytest.raises(ToolError) as info:
        run(tools, "native:buffer", {"INPUT": "ny_points", "DISTANCE": written})
    message = str(info.value)
    assert f"in {feet_name()} (the units of EPSG:2263)" in message
    given = float(re.search(r"give DISTANCE=([0-9.]+)", message).group(1))
    # pyproj's metres per unit of EPSG:2263 (US survey foot); QGIS 3.22 calls it a foot: within 2 ppm.
    metres_per_unit = CRS("EPSG:2263").axis_info[0].unit_conversion_factor
    assert given == pytest.approx(metres / metres_per_unit, rel=1e-5)


def test_a_distance_on_a_layer_in_feet_says_it_is_feet(tools, demo_project, tmp_path):
    feet_layer(demo_project, tmp_path)
    result = run(tools, "native:buffer", {"INPUT": "ny_points", "DISTANCE": 500, "SEGMENTS": 64}, "ny_zone").text
    assert f"DISTANCE is in {feet_name()}, the units of 'ny_points' (EPSG:2263)." in result
    (zone,) = shapes(layer(demo_project, "ny_zone"))
    radius_feet = math.sqrt(zone.area / math.pi)
    assert radius_feet == pytest.approx(500, rel=2e-3)


def test_metric_layers_keep_the_short_metres_message(tools):
    with pytest.raises(ToolError) as info:
        run(tools, "native:buffer", {"INPUT": "schools", "DISTANCE": "1 km"})
    assert str(info.value) == "DISTANCE takes a plain number in metres, not '1 km': give DISTANCE=1000"


# -- the output check does not blame QGIS for a distance in degrees ------------------------
def test_a_result_outside_its_degrees_names_a_distance_in_degrees_as_a_cause(qgis_app):
    park = LineString([(9.98, 55.95), (10.08, 55.99)]).buffer(500)  # 500 "metres" applied as degrees
    extent = QgsRectangle(*park.bounds)
    with pytest.raises(SuspectOutput) as info:
        check_extent(QgsCoordinateReferenceSystem("EPSG:4326"), extent, "the OUTPUT layer")
    message = str(info.value)
    assert "not in your request" not in message
    assert "metres applied to an input in degrees" in message
    spans = [float(v) for v in re.findall(r"-?[0-9.]+", message.split("span ")[1].split(", outside")[0])]
    assert spans == pytest.approx(list(park.bounds), rel=1e-6)


def test_gdal_grid_radii_on_a_layer_in_degrees_are_metres(tools, demo_project, gpkg, tmp_path):
    path = in_degrees(gpkg, "schools", tmp_path)
    demo_project.addMapLayer(QgsVectorLayer(path, "schools_wgs84", "ogr"))
    params = {"INPUT": "schools_wgs84", "Z_FIELD": "pupils", "RADIUS_1": 300, "RADIUS_2": 300, "NODATA": -1}
    result = run(tools, "gdal:gridnearestneighbor", params, "nearest_pupils").text
    assert "RADIUS_1=300 would be degrees" in result
    grid = gdal.Open(layer(demo_project, "nearest_pupils").source())
    assert CRS.from_wkt(grid.GetProjection()).to_epsg() == 32632
    values = grid.GetRasterBand(1).ReadAsArray()
    x0, dx, _, y0, _, dy = grid.GetGeoTransform()
    # Independently: each pixel centre takes the pupils of the nearest school within 300 m (pyproj + numpy).
    schools = utm_shapes(path)
    pupils = np.array([f["pupils"] for f in QgsVectorLayer(path, "s", "ogr").getFeatures()], dtype=float)
    xs = x0 + dx * (np.arange(grid.RasterXSize) + 0.5)
    ys = y0 + dy * (np.arange(grid.RasterYSize) + 0.5)
    gx, gy = np.meshgrid(xs, ys)
    distances = np.stack([np.hypot(gx - p.x, gy - p.y) for p in schools])
    expected = np.where(distances.min(axis=0) <= 300, pupils[distances.argmin(axis=0)], -1)
    assert (expected == -1).mean() > 0.5  # mostly empty: a radius of 300 degrees would fill every pixel
    assert (values == expected).mean() > 0.995  # pixels on a 300 m circle or halfway between schools may differ
