"""Processing tools on the demo town: real QGIS algorithms, answers checked with shapely/GEOS.

Tools are called from a worker thread, as the agent calls them, so the
main-thread hand-offs are exercised for real.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from pyproj import Transformer
from qgis.core import QgsCoordinateReferenceSystem, QgsFeature, QgsGeometry, QgsProject, QgsVectorLayer
from shapely.geometry import Point
from shapely.ops import unary_union

from geogpt_qgis.core.artifacts import Selection, ToolResult
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.family import ProcessingTools
from tests.support.big_layers import write_big_points
from tests.support.gpkg import read_layer
from tests.support.runs import call_in_thread, stop_midway, wait_until


@pytest.fixture
def tools(tool_ctx) -> ProcessingTools:
    return ProcessingTools(tool_ctx)


@pytest.fixture
def gpkg(demo_project) -> Path:
    return Path(demo_project.fileName()).with_name("elvbury.gpkg")


def run(tools: ProcessingTools, algorithm: str, parameters: dict, output_name: str = "") -> ToolResult:
    return call_in_thread(tools.run_algorithm, algorithm, parameters, output_name)


def layer(project: QgsProject, name: str) -> QgsVectorLayer:
    found = project.mapLayersByName(name)
    assert len(found) == 1, f"expected one layer {name!r}, found {len(found)}"
    return found[0]


def geometries(vector: QgsVectorLayer):
    from shapely import wkt

    return [wkt.loads(f.geometry().asWkt()) for f in vector.getFeatures()]


# -- real algorithms, independent answers ----------------------------------------------
def test_buffer_areas_match_geos(tools, demo_project, gpkg):
    result = run(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 500}, "rivers_500m")
    assert "added layer 'rivers_500m': MultiPolygon, 2 features, EPSG:25832" in result.text
    (added,) = result.artifact.added  # what the dock, the Sources list and the evals read
    assert demo_project.mapLayer(added.layer_id) is layer(demo_project, "rivers_500m")
    assert result.artifact.layer_names == ("rivers",)
    assert result.artifact.algorithm.label == "native:buffer (INPUT=rivers, DISTANCE=500)"
    ours = sorted(g.area for g in geometries(layer(demo_project, "rivers_500m")))
    # Exact round caps and joins (GEOS with 1,024 segments per quarter): the tools' default is within 0.1%.
    expected = sorted(geom.buffer(500, quad_segs=1024).area for _, _, geom in read_layer(gpkg, "rivers"))
    assert ours == pytest.approx(expected, rel=1e-3)


def test_default_names_say_what_the_layer_holds(tools, demo_project):
    result = run(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 250}).text
    assert "added layer 'rivers_buffer_250m'" in result
    run(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 250})
    assert demo_project.mapLayersByName("rivers_buffer_250m_2")


def test_clip_keeps_only_the_parts_inside_the_overlay(tools, demo_project, gpkg):
    run(tools, "native:clip", {"INPUT": "roads", "OVERLAY": "parks"}, "roads_in_parks")
    parks = unary_union([g for _, _, g in read_layer(gpkg, "parks")])
    expected = sum(g.intersection(parks).length for _, _, g in read_layer(gpkg, "roads"))
    assert sum(g.length for g in geometries(layer(demo_project, "roads_in_parks"))) == pytest.approx(expected, rel=1e-6)


def test_intersection_splits_parks_by_district(tools, demo_project, gpkg):
    run(tools, "native:intersection", {"INPUT": "parks", "OVERLAY": "districts"}, "parks_by_district")
    districts = read_layer(gpkg, "districts")
    pairs = [
        (park_attrs["name"], d_attrs["name"], park.intersection(district).area)
        for _, park_attrs, park in read_layer(gpkg, "parks")
        for _, d_attrs, district in districts
        if park.intersection(district).area > 1e-6
    ]
    result = layer(demo_project, "parks_by_district")
    got = sorted((f["name"], f["name_2"], f.geometry().area()) for f in result.getFeatures())
    assert len(got) == len(pairs)
    for (name, district, area), (ename, edistrict, earea) in zip(got, sorted(pairs), strict=True):
        assert (name, district) == (ename, edistrict)
        assert area == pytest.approx(earea, rel=1e-6)


def test_dissolve_by_attribute_unions_each_class(tools, demo_project, gpkg):
    result = run(tools, "native:dissolve", {"INPUT": "landuse", "FIELD": ["class"]}).text
    assert "added layer 'landuse_dissolved_by_class'" in result
    by_class: dict[str, list] = {}
    for _, attrs, geom in read_layer(gpkg, "landuse"):
        by_class.setdefault(attrs["class"], []).append(geom)
    dissolved = layer(demo_project, "landuse_dissolved_by_class")
    got = {f["class"]: f.geometry().area() for f in dissolved.getFeatures()}
    assert got.keys() == by_class.keys()
    for cls, parts in by_class.items():
        assert got[cls] == pytest.approx(unary_union(parts).area, rel=1e-6)


def test_a_one_feature_result_shows_its_values(tools, demo_project, gpkg):
    """A total (one feature) is in the tool's text: the model need not read the layer again to learn it."""
    aggregates = [
        {"aggregate": "sum", "input": '"population"', "name": "population_sum", "type": 6, "length": 0, "precision": 0}
    ]
    result = run(tools, "native:aggregate", {"INPUT": "districts", "GROUP_BY": "NULL", "AGGREGATES": aggregates})
    total = sum(attrs["population"] for _, attrs, _ in read_layer(gpkg, "districts"))
    assert result.text.endswith(f"\nIts one feature: fid=1; population_sum={total}"), result.text
    many = run(tools, "native:dissolve", {"INPUT": "landuse", "FIELD": ["class"]}).text
    assert "Its one feature" not in many  # one line per feature would be a table: read_features reads those


def test_join_attributes_by_location_gives_each_school_its_district(tools, demo_project, gpkg):
    run(
        tools,
        "native:joinattributesbylocation",
        {
            "INPUT": "schools",
            "JOIN": "districts",
            "PREDICATE": [0],
            "JOIN_FIELDS": ["name"],
            "METHOD": 1,
            "PREFIX": "d_",
        },
        "schools_with_district",
    )
    districts = read_layer(gpkg, "districts")
    expected = {
        attrs["name"]: next(d["name"] for _, d, poly in districts if poly.intersects(point))
        for _, attrs, point in read_layer(gpkg, "schools")
    }
    joined = layer(demo_project, "schools_with_district")
    assert {f["name"]: f["d_name"] for f in joined.getFeatures()} == expected


def test_count_points_in_polygon_matches_point_in_polygon(tools, demo_project, gpkg):
    run(tools, "native:countpointsinpolygon", {"POLYGONS": "districts", "POINTS": "schools", "FIELD": "n_schools"})
    schools = [g for _, _, g in read_layer(gpkg, "schools")]
    expected = {
        attrs["name"]: sum(poly.intersects(p) for p in schools) for _, attrs, poly in read_layer(gpkg, "districts")
    }
    counted = layer(demo_project, "districts_with_schools_count")
    assert {f["name"]: int(f["n_schools"]) for f in counted.getFeatures()} == expected


def test_extract_by_location_finds_schools_near_rivers(tools, demo_project, gpkg):
    run(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 500, "SEGMENTS": 32}, "rivers_500m")
    run(tools, "native:extractbylocation", {"INPUT": "schools", "PREDICATE": [0], "INTERSECT": "rivers_500m"}, "near")
    rivers = unary_union([g for _, _, g in read_layer(gpkg, "rivers")])
    distances = {attrs["name"]: point.distance(rivers) for _, attrs, point in read_layer(gpkg, "schools")}
    assert all(abs(d - 500) > 2 for d in distances.values()), "a school sits on the 500 m line; the test data moved"
    expected = {name for name, d in distances.items() if d <= 500}
    assert {f["name"] for f in layer(demo_project, "near").getFeatures()} == expected
    assert expected  # the demo town has schools by its rivers


def test_extract_by_attribute(tools, demo_project, gpkg):
    result = run(
        tools, "native:extractbyattribute", {"INPUT": "schools", "FIELD": "type", "OPERATOR": 0, "VALUE": "secondary"}
    ).text
    assert "added layer 'schools_where_type_eq_secondary'" in result
    expected = {attrs["name"] for _, attrs, _ in read_layer(gpkg, "schools") if attrs["type"] == "secondary"}
    assert {f["name"] for f in layer(demo_project, "schools_where_type_eq_secondary").getFeatures()} == expected


def test_reproject_matches_proj(tools, demo_project, gpkg):
    run(tools, "native:reprojectlayer", {"INPUT": "schools", "TARGET_CRS": "EPSG:4326"}, "schools_wgs84")
    reprojected = layer(demo_project, "schools_wgs84")
    assert reprojected.crs().authid() == "EPSG:4326"
    transformer = Transformer.from_crs("EPSG:25832", "EPSG:4326", always_xy=True)
    expected = {attrs["name"]: transformer.transform(p.x, p.y) for _, attrs, p in read_layer(gpkg, "schools")}
    for feature in reprojected.getFeatures():
        point = feature.geometry().asPoint()
        assert (point.x(), point.y()) == pytest.approx(expected[feature["name"]], abs=1e-7)


def test_centroids_match_geos(tools, demo_project, gpkg):
    run(tools, "native:centroids", {"INPUT": "districts"})
    expected = {attrs["name"]: poly.centroid for _, attrs, poly in read_layer(gpkg, "districts")}
    for feature in layer(demo_project, "districts_centroids").getFeatures():
        point = feature.geometry().asPoint()
        assert Point(point.x(), point.y()).distance(expected[feature["name"]]) < 0.01


def test_field_calculator_computes_planar_area(tools, demo_project, gpkg):
    run(
        tools,
        "native:fieldcalculator",
        {"INPUT": "parks", "FIELD_NAME": "area_calc", "FIELD_TYPE": 0, "FORMULA": "area($geometry) / 10000"},
    )
    expected = {attrs["name"]: geom.area / 10_000 for _, attrs, geom in read_layer(gpkg, "parks")}
    computed = layer(demo_project, "parks_with_area_calc")
    assert {f["name"]: f["area_calc"] for f in computed.getFeatures()} == pytest.approx(expected, rel=1e-9)


# -- search and describe ------------------------------------------------------------
def test_search_finds_algorithms_by_intent(tools):
    found = call_in_thread(tools.find_algorithm, "count points in polygons").text
    assert found.splitlines()[0].startswith("- native:countpointsinpolygon — Count points in polygon: ")
    assert len(found.splitlines()) == 6
    with pytest.raises(ToolError, match="no algorithm matches"):
        call_in_thread(tools.find_algorithm, "zzqx")


def test_describe_algorithm_lists_types_defaults_enums_and_units(tools):
    text = call_in_thread(tools.find_algorithm, "native:buffer").text
    assert text.startswith("native:buffer — Buffer (Vector geometry)")
    assert "- DISTANCE: distance in the units of INPUT's CRS; default 10 — Distance" in text
    assert "- END_CAP_STYLE: enum, one of: 0=Round, 1=Flat, 2=Square; default 0 (Round) — End cap style" in text
    assert "- SEGMENTS: integer (>= 1); default 32 here (areas within 0.1% of the exact circle; " in text
    assert "OUTPUT (vector output: Buffered)" in text
    location = call_in_thread(tools.find_algorithm, "native:countpointsinpolygon").text
    assert "- POLYGONS: vector layer (polygon) — Polygons" in location
    assert "[optional]" in location


def test_find_algorithm_describes_what_names_one_algorithm_and_searches_the_rest(tools):
    # A bare name or a title only one algorithm has is described, as an id is.
    assert call_in_thread(tools.find_algorithm, "buffer").text.startswith("native:buffer — Buffer (Vector geometry)")
    assert call_in_thread(tools.find_algorithm, " Centroids ").text.startswith("native:centroids — Centroids")
    # A title two providers share is searched: the ids to choose from.
    shared = call_in_thread(tools.find_algorithm, "Raster calculator").text  # GDAL's and QGIS's
    assert shared.startswith("- ") and "gdal:rastercalculator" in shared and "Parameters:" not in shared
    # A wrong id is not searched for: the closest ids.
    with pytest.raises(ToolError, match="no algorithm 'native:dissolv'; did you mean native:dissolve"):
        call_in_thread(tools.find_algorithm, "native:dissolv")
    with pytest.raises(ToolError, match="give the task in plain words"):
        call_in_thread(tools.find_algorithm, "  ")


def test_describe_says_which_algorithms_need_approval(tools):
    assert "approval" not in call_in_thread(tools.find_algorithm, "native:buffer").text
    downloader = call_in_thread(tools.find_algorithm, "native:filedownloader").text
    assert downloader.endswith("Needs the user's approval: it talks to the network.")
    truncate = call_in_thread(tools.find_algorithm, "native:truncatetable").text
    assert truncate.endswith("Needs the user's approval: it changes data in place.")


# -- every check, with its message ----------------------------------------------------
@pytest.mark.parametrize(
    ("algorithm", "parameters", "message"),
    [
        ("native:bufer", {}, "no algorithm 'native:bufer'; did you mean native:buffer"),
        (
            "native:buffer",
            {"INPUT": "rivers", "DIST": 5},
            "native:buffer has no parameter 'DIST'. Did you mean DISTANCE?",
        ),
        ("native:buffer", {"DISTANCE": 5}, "missing required parameter INPUT (vector layer: Input layer)"),
        ("native:buffer", {"INPUT": "rivrs", "DISTANCE": 5}, "INPUT: no layer 'rivrs'; did you mean 'rivers'?"),
        ("native:buffer", {"INPUT": "elevation", "DISTANCE": 5}, "INPUT needs a vector layer; 'elevation' is a raster"),
        (
            "native:buffer",
            {"INPUT": "rivers", "DISTANCE": 5, "END_CAP_STYLE": "pointy"},
            "END_CAP_STYLE: 'pointy' is not one of 0=Round, 1=Flat, 2=Square",
        ),
        ("native:buffer", {"INPUT": "rivers", "DISTANCE": "far"}, "DISTANCE takes a plain number in metres, not 'far'"),
        ("native:buffer", {"INPUT": "rivers", "DISTANCE": "2 km"}, "not '2 km': give DISTANCE=2000"),
        ("native:buffer", {"INPUT": "rivers", "DISTANCE": "0.01 deg"}, "DISTANCE takes metres, not degrees"),
        (
            "native:countpointsinpolygon",
            {"POLYGONS": "schools", "POINTS": "hospitals"},
            "POLYGONS needs a polygon layer; 'schools' is a Point layer",
        ),
        (
            "native:dissolve",
            {"INPUT": "landuse", "FIELD": ["klass"]},
            "FIELD: no field in 'landuse' 'klass'; did you mean 'class'?",
        ),
        (
            "native:extractbyexpression",
            {"INPUT": "schools", "EXPRESSION": "pupils >"},
            "EXPRESSION: invalid expression",
        ),
        (
            "native:buffer",
            {"INPUT": "rivers", "DISTANCE": 5, "OUTPUT": "/tmp/out.gpkg"},
            "native:buffer writes files (writes files: file /tmp/out.gpkg); it needs the user's approval",
        ),
        (
            "native:truncatetable",
            {"INPUT": "parks"},
            "native:truncatetable changes data in place (changes data in place: layer 'parks' (ogr:",
        ),
    ],
)
def test_bad_calls_are_refused_with_an_actionable_message_and_change_nothing(
    tools, demo_project, algorithm, parameters, message
):
    before = sorted(demo_project.mapLayers())
    with pytest.raises(ToolError) as info:
        run(tools, algorithm, parameters)
    assert message in str(info.value)
    assert sorted(demo_project.mapLayers()) == before


def test_a_failing_algorithm_returns_its_own_error_and_adds_nothing(tools, demo_project):
    before = sorted(demo_project.mapLayers())
    with pytest.raises(ToolError) as info:
        run(tools, "native:fieldcalculator", {"INPUT": "parks", "FIELD_NAME": "x", "FORMULA": "to_int('abc')"})
    assert str(info.value) == (
        "native:fieldcalculator failed: Evaluation error in expression \"to_int('abc')\": Cannot convert 'abc' to int"
    )
    # GDAL tools report success even when ogr2ogr fails: the missing output and GDAL's own log give it away.
    with pytest.raises(ToolError) as info:
        run(tools, "gdal:buffervectors", {"INPUT": "rivers", "DISTANCE": 100, "GEOMETRY": "no_such_column"})
    assert "gdal:buffervectors reported success but produced no OUTPUT layer." in str(info.value)
    assert "no_such_column" in str(info.value)
    assert len(str(info.value)) < 1600
    assert sorted(demo_project.mapLayers()) == before


def test_distances_on_a_geographic_layer_are_applied_in_metres(tools, demo_project):
    run(tools, "native:reprojectlayer", {"INPUT": "hospitals", "TARGET_CRS": "EPSG:4326"}, "hospitals_wgs84")
    result = run(
        tools, "native:buffer", {"INPUT": "hospitals_wgs84", "DISTANCE": 500, "SEGMENTS": 64}, "hospital_zones"
    ).text
    assert "'hospitals_wgs84' is in EPSG:4326 (degrees)" in result
    assert "reprojected to EPSG:32632 (WGS 84 / UTM zone 32N)" in result
    zones = layer(demo_project, "hospital_zones")
    assert zones.crs() == QgsCoordinateReferenceSystem("EPSG:32632")
    for feature in zones.getFeatures():
        assert feature.geometry().area() == pytest.approx(3.14159265 * 500**2, rel=2e-3)


def test_stop_cancels_a_long_run_and_adds_nothing(tools, demo_project, tmp_path):
    big = QgsVectorLayer(f"{write_big_points(tmp_path / 'big.gpkg')}|layername=big", "big", "ogr")
    demo_project.addMapLayer(big)
    before = sorted(demo_project.mapLayers())
    ended, seconds = stop_midway(
        tools.run_algorithm, "native:buffer", {"INPUT": "big", "DISTANCE": 5, "SEGMENTS": 30}, "", after=0.5
    )
    assert ended == "cancelled"
    assert seconds < 1.0
    stopped = time.monotonic()
    wait_until(lambda: time.monotonic() - stopped > 0.3)  # let any stray main-thread job arrive
    assert sorted(demo_project.mapLayers()) == before


def test_no_threading_algorithms_run_on_the_main_thread(tools, tool_ctx, demo_project):
    calls: list[str] = []
    real_call = tool_ctx.bridge.call

    def spy(fn, *args, **kwargs):
        calls.append(getattr(fn, "__name__", repr(fn)))
        return real_call(fn, *args, **kwargs)

    tool_ctx.bridge.call = spy
    run(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 500}, "rivers_500m")
    assert "runPrepared" not in calls  # threaded algorithms run on the worker
    calls.clear()
    result = run(tools, "native:selectbylocation", {"INPUT": "schools", "PREDICATE": [0], "INTERSECT": "rivers_500m"})
    assert "runPrepared" in calls  # QGIS flags it no-threading: it ran through the main-thread bridge
    schools = layer(demo_project, "schools")
    assert schools.selectedFeatureCount() > 0
    assert (
        f"'schools' (already in the project) now has {schools.selectedFeatureCount()} selected features" in result.text
    )
    assert result.artifact.selected == (Selection("schools", schools.selectedFeatureCount()),)
    assert result.artifact.layer_names == ("schools", "rivers_500m") and not result.artifact.added
    assert Counter(calls)["runPrepared"] == 1


def test_inputs_can_be_files_and_numbers_are_range_checked(tools, demo_project, gpkg):
    result = run(tools, "native:centroids", {"INPUT": f"{gpkg}|layername=parks"}, "park_centres").text
    assert "added layer 'park_centres': Point, 14 features" in result
    with pytest.raises(ToolError, match="SEGMENTS must be between 1 and"):
        run(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 5, "SEGMENTS": 0})
    with pytest.raises(ToolError, match="SEGMENTS takes a whole number"):
        run(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 5, "SEGMENTS": 2.5})


def test_no_utm_zone_near_the_poles(tools, demo_project):
    polar = QgsVectorLayer("Point?crs=EPSG:4326&field=name:string", "stations", "memory")
    feature = QgsFeature(polar.fields())
    feature.setGeometry(QgsGeometry.fromWkt("POINT(10 88)"))
    polar.dataProvider().addFeatures([feature])
    polar.updateExtents()
    demo_project.addMapLayer(polar)
    with pytest.raises(ToolError, match=r"lies near a pole .* UTM zones do not exist"):
        run(tools, "native:buffer", {"INPUT": "stations", "DISTANCE": 100})
