"""Property test: run_algorithm's reprojection, buffer, clip and centroid paths on random inputs.

Random star-shaped polygons (simple by construction) are placed at random inside
the area of use of a random projected CRS, then run through ``run_algorithm``
exactly as the agent calls it (a fresh worker thread per call), and compared
with pyproj and shapely, which compute the same answers without QGIS:

- reprojection to every CRS of the reviewed list whose area of use holds the polygon:
  each vertex within 1 cm (projected) or 1e-7° (geographic, about 1 cm) of pyproj's;
- buffer (the tools' default segments): area within 0.1% of the exact buffer
  (GEOS with 1,024 segments per quarter circle), outline within 0.1% of the distance;
- clip: area within 1e-6 (relative) of shapely's intersection;
- centroid: within 1e-6 of the polygon's size from shapely's.

The reviewed CRSs all share the WGS 84 / ETRS89 / GDA / NZGD2000 ballpark datum
(PROJ's transformations between them are null shifts), so QGIS and pyproj cannot
legitimately pick different datum transformations.  National grids on another
datum (OSGB36, DHDN) are left out for that reason.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyproj import CRS, Transformer
from qgis.core import QgsFeature, QgsGeometry, QgsVectorLayer
from shapely import hausdorff_distance
from shapely import wkt as shapely_wkt
from shapely.geometry import Polygon

from geogpt_qgis.tools.processing.family import ProcessingTools
from tests.support.runs import call_in_thread

PROJECTED = ["EPSG:25832", "EPSG:32633", "EPSG:2154", "EPSG:3035", "EPSG:32618", "EPSG:32756", "EPSG:2193", "EPSG:3857"]
TARGETS = [*PROJECTED, "EPSG:4326", "EPSG:4258"]
METRES_TOLERANCE = 0.01
DEGREES_TOLERANCE = 1e-7
BUFFER_AREA_TOLERANCE = 1e-3
OVERLAY_TOLERANCE = 1e-6
EXAMPLES = 15  # about 20-30 s
_names = itertools.count()


def area_of_use(code: str) -> tuple[float, float, float, float]:
    west, south, east, north = CRS(code).area_of_use.bounds
    return west, max(south, -80.0), east, min(north, 80.0)


@st.composite
def polygons(draw: st.DrawFn) -> tuple[str, Polygon, Polygon]:
    """A CRS, a star-shaped polygon in it, and a second one overlapping it (or not) for the clip."""
    code = draw(st.sampled_from(PROJECTED))
    west, south, east, north = area_of_use(code)
    inset_x, inset_y = (east - west) * 0.1, (north - south) * 0.1
    lon = draw(st.floats(west + inset_x, east - inset_x))
    lat = draw(st.floats(south + inset_y, north - inset_y))
    x, y = Transformer.from_crs("EPSG:4326", code, always_xy=True).transform(lon, lat)
    radius = draw(st.floats(50.0, 5000.0))

    def star(cx: float, cy: float) -> Polygon:
        count = draw(st.integers(3, 10))
        angles = sorted(draw(st.lists(st.floats(0, 2 * math.pi, exclude_max=True), min_size=count, max_size=count)))
        if min(b - a for a, b in zip(angles, [*angles[1:], angles[0] + 2 * math.pi], strict=True)) < 0.05:
            angles = [2 * math.pi * i / count for i in range(count)]
        scales = draw(st.lists(st.floats(0.3, 1.0), min_size=count, max_size=count))
        return Polygon(
            [
                (cx + radius * s * math.cos(a), cy + radius * s * math.sin(a))
                for a, s in zip(angles, scales, strict=True)
            ]
        )

    first = star(x, y)
    dx, dy = draw(st.floats(-1.5, 1.5)), draw(st.floats(-1.5, 1.5))
    return code, first, star(x + dx * radius, y + dy * radius)


def add_polygon(project, code: str, polygon: Polygon) -> str:
    name = f"prop_{next(_names)}"
    layer = QgsVectorLayer(f"Polygon?crs={code}", name, "memory")
    feature = QgsFeature(layer.fields())
    feature.setGeometry(QgsGeometry.fromWkt(polygon.wkt))
    layer.dataProvider().addFeatures([feature])
    project.addMapLayer(layer)
    return name


def output(project, name: str) -> list:
    (layer,) = project.mapLayersByName(name)
    return [shapely_wkt.loads(f.geometry().asWkt()) for f in layer.getFeatures() if f.hasGeometry()]


def covers(code: str, polygon: Polygon, source: str) -> bool:
    west, south, east, north = CRS(code).area_of_use.bounds
    lon_lat = Transformer.from_crs(source, "EPSG:4326", always_xy=True)
    corners = [lon_lat.transform(x, y) for x, y in polygon.exterior.coords]
    return all(west <= lon <= east and south <= lat <= north for lon, lat in corners)


@pytest.fixture
def tools(tool_ctx) -> ProcessingTools:
    return ProcessingTools(tool_ctx)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure replays, CI stays inside its budget
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=polygons(), distance=st.floats(1.0, 2000.0), target_index=st.integers(0, 100))
def test_reproject_buffer_clip_and_centroid_match_pyproj_and_shapely(tools, demo_project, case, distance, target_index):
    code, polygon, overlay = case
    run = tools.run_algorithm
    a, b = add_polygon(demo_project, code, polygon), add_polygon(demo_project, code, overlay)
    try:
        # reprojection, to a reviewed CRS whose area of use holds the polygon
        targets = [t for t in TARGETS if t != code and covers(t, polygon, code)]
        target = targets[target_index % len(targets)]
        call_in_thread(run, "native:reprojectlayer", {"INPUT": a, "TARGET_CRS": target}, f"{a}_moved")
        (moved,) = output(demo_project, f"{a}_moved")
        transformer = Transformer.from_crs(code, target, always_xy=True)
        tolerance = DEGREES_TOLERANCE if CRS(target).is_geographic else METRES_TOLERANCE
        expected = [transformer.transform(x, y) for x, y in polygon.exterior.coords]
        assert len(moved.exterior.coords) == len(expected)
        for got, want in zip(moved.exterior.coords, expected, strict=True):
            assert got == pytest.approx(want, abs=tolerance), (code, target)

        # buffer with the tools' default segments
        call_in_thread(run, "native:buffer", {"INPUT": a, "DISTANCE": distance}, f"{a}_buffer")
        (buffered,) = output(demo_project, f"{a}_buffer")
        exact = polygon.buffer(distance, quad_segs=1024)
        assert buffered.area == pytest.approx(exact.area, rel=BUFFER_AREA_TOLERANCE)
        assert hausdorff_distance(buffered, exact) <= 1e-3 * distance + 1e-6

        # clip
        call_in_thread(run, "native:clip", {"INPUT": a, "OVERLAY": b}, f"{a}_clip")
        clipped = sum(g.area for g in output(demo_project, f"{a}_clip"))
        size = polygon.area
        assert clipped == pytest.approx(polygon.intersection(overlay).area, rel=OVERLAY_TOLERANCE, abs=1e-9 * size)

        # centroid
        call_in_thread(run, "native:centroids", {"INPUT": a}, f"{a}_centroid")
        (centroid,) = output(demo_project, f"{a}_centroid")
        assert centroid.distance(polygon.centroid) <= OVERLAY_TOLERANCE * math.sqrt(size)
    finally:
        demo_project.removeMapLayers(
            [x.id() for x in demo_project.mapLayers().values() if x.name().startswith(a) or x.name() == b]
        )
