"""Coordinates and numbers a user can take as they are: real QGIS algorithms checked against pyproj and shapely.

- the ordered regression of issue 18 (an approved file-writing step, then a reprojection);
- the output checks (a layer labelled geographic with metres in it, a reprojection that lands
  elsewhere than PROJ puts it) refuse the result and add nothing;
- a property test over random geometries and CRS pairs for the reprojection, buffer, clip and
  centroid paths of ``run_algorithm``;
- buffer defaults accurate to 0.1% of the exact area.

Tools are called from a fresh worker thread per call, as the agent's tool threads are.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pyproj import Transformer
from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsFeature,
    QgsGeometry,
    QgsPointXY,
    QgsProject,
    QgsVectorLayer,
)
from shapely import minimum_bounding_radius

from geogpt_qgis.core.approval import APPROVE, Decision, current_decision
from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layers import add_result_layer
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.processing.output_checks import SuspectOutput, check_layer, check_reprojection
from tests.support.gpkg import read_layer
from tests.support.runs import call_in_thread


@pytest.fixture
def tools(tool_ctx) -> ProcessingTools:
    return ProcessingTools(tool_ctx)


@pytest.fixture
def gpkg(demo_project) -> Path:
    return Path(demo_project.fileName()).with_name("elvbury.gpkg")


def run(tools: ProcessingTools, algorithm: str, parameters: dict, output_name: str = "") -> str:
    return call_in_thread(tools.run_algorithm, algorithm, parameters, output_name).text


def run_approved(tools: ProcessingTools, algorithm: str, parameters: dict, output_name: str = "") -> str:
    """As if the user approved the call on its card (the decision lives in the tool thread's context)."""

    def approved() -> str:
        token = current_decision.set(Decision(APPROVE))
        try:
            return tools.run_algorithm(algorithm, parameters, output_name).text
        finally:
            current_decision.reset(token)

    return call_in_thread(approved)


def only_layer(project: QgsProject, name: str) -> QgsVectorLayer:
    found = project.mapLayersByName(name)
    assert len(found) == 1, f"expected one layer {name!r}, found {len(found)}"
    return found[0]


def points_of(layer: QgsVectorLayer) -> dict[str, tuple[float, float]]:
    return {f["name"]: (f.geometry().asPoint().x(), f.geometry().asPoint().y()) for f in layer.getFeatures()}


def schools_in(gpkg: Path, crs: str) -> dict[str, tuple[float, float]]:
    transformer = Transformer.from_crs("EPSG:25832", crs, always_xy=True)
    return {attrs["name"]: transformer.transform(p.x, p.y) for _, attrs, p in read_layer(gpkg, "schools")}


# -- issue 18: a file-writing step, then a reprojection, in one process ------------------
def test_a_reprojection_after_an_approved_file_writing_step_is_right(tools, demo_project, gpkg, tmp_path):
    """Was: UTM metres labelled EPSG:4326 (the writer's thread left QGIS's PROJ objects dead)."""
    # CRSs are built afresh, by whichever thread asks first, whatever ran before this test.
    QgsCoordinateReferenceSystem.invalidateCache()
    QgsCoordinateTransform.invalidateCache()
    out = tmp_path / "exports" / "rivers_100m.gpkg"
    written = run_approved(tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 100, "OUTPUT": str(out)})
    assert out.is_file(), written
    for attempt in range(3):  # each on a new tool thread, as later agent steps are
        name = f"schools_wgs84_{attempt}"
        run(tools, "native:reprojectlayer", {"INPUT": "schools", "TARGET_CRS": "EPSG:4326"}, name)
        reprojected = only_layer(demo_project, name)
        assert reprojected.crs().authid() == "EPSG:4326"
        expected = schools_in(gpkg, "EPSG:4326")
        got = points_of(reprojected)
        assert got.keys() == expected.keys()
        for school, point in got.items():
            assert point == pytest.approx(expected[school], abs=1e-7), school


# -- output checks ---------------------------------------------------------------------
def memory_points(crs: str, points: list[tuple[float, float]], name: str = "pts") -> QgsVectorLayer:
    layer = QgsVectorLayer(f"Point?crs={crs}", name, "memory")
    features = []
    for x, y in points:
        feature = QgsFeature(layer.fields())
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(x, y)))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    layer.updateExtents()
    return layer


def test_metres_labelled_geographic_are_refused():
    suspect = memory_points("EPSG:4326", [(563971.16, 6203326.77), (560226.8, 6200239.1)])
    with pytest.raises(SuspectOutput, match=r"labelled EPSG:4326 .* outside ±180° / ±90°"):
        check_layer(suspect)
    check_layer(memory_points("EPSG:4326", [(10.02, 55.97), (-179.9, -89.9)]))  # fine: no error


def test_coordinates_outside_the_crs_area_of_use_are_refused():
    # Degrees labelled as ETRS89 / UTM 32N: they land on the equator, far from Europe.
    with pytest.raises(SuspectOutput, match=r"EPSG:25832, whose area of use"):
        check_layer(memory_points("EPSG:25832", [(10.02, 55.97), (10.1, 56.0)]))
    check_layer(memory_points("EPSG:25832", [(563971.16, 6203326.77)]))  # Denmark: fine


def test_a_reprojection_that_left_coordinates_unchanged_is_refused():
    source = memory_points("EPSG:25832", [(563971.16, 6203326.77), (567886.5, 6205824.6)])
    # 32N metres labelled 33N: inside 33N's area of use, but 6° west of where PROJ puts them.
    untransformed = memory_points("EPSG:25833", [(563971.16, 6203326.77), (567886.5, 6205824.6)])
    with pytest.raises(SuspectOutput, match="PROJ puts the input"):
        check_reprojection(source.crs(), source.extent(), untransformed)
    transformer = Transformer.from_crs("EPSG:25832", "EPSG:25833", always_xy=True)
    right = memory_points(
        "EPSG:25833", [transformer.transform(*xy) for xy in [(563971.16, 6203326.77), (567886.5, 6205824.6)]]
    )
    check_reprojection(source.crs(), source.extent(), right)


def test_assigning_a_geographic_crs_to_metres_adds_nothing(tools, demo_project):
    """native:assignprojection relabels without transforming: EPSG:4326 on UTM metres is refused."""
    before = sorted(layer.id() for layer in demo_project.mapLayers().values())
    with pytest.raises(ToolError, match=r"outside ±180° / ±90°.*no layer was added"):
        run(tools, "native:assignprojection", {"INPUT": "schools", "CRS": "EPSG:4326"}, "schools_mislabelled")
    assert sorted(layer.id() for layer in demo_project.mapLayers().values()) == before


# -- buffers accurate to 0.1% ----------------------------------------------------------
def test_a_200_m_buffer_of_a_point_has_the_circle_s_area(tools, demo_project):
    result = run(tools, "native:buffer", {"INPUT": "schools", "DISTANCE": 200}, "schools_200m")
    assert "Note:" not in result  # nothing to warn about when the default is ours
    circle = math.pi * 200**2
    areas = [f.geometry().area() for f in only_layer(demo_project, "schools_200m").getFeatures()]
    assert len(areas) == 31
    for area in areas:
        assert area == pytest.approx(circle, rel=1e-3)
        assert area < circle  # inscribed: never more than the true circle


def test_a_coarse_segments_value_given_by_the_model_is_kept_with_a_note(tools, demo_project):
    result = run(tools, "native:buffer", {"INPUT": "schools", "DISTANCE": 200, "SEGMENTS": 5}, "coarse")
    assert "SEGMENTS=5 draws circles coarsely: areas come out about 1.64% low" in result
    area = next(only_layer(demo_project, "coarse").getFeatures()).geometry().area()
    assert area == pytest.approx(math.pi * 200**2 * (1 - 0.0163), rel=1e-3)


def test_single_sided_buffers_and_enclosing_circles_are_accurate_too(tools, demo_project, gpkg):
    # East 1 km, then north 1 km; the right side turns the outer corner with a quarter circle.
    bend = QgsVectorLayer("LineString?crs=EPSG:25832", "bend", "memory")
    feature = QgsFeature(bend.fields())
    feature.setGeometry(QgsGeometry.fromWkt("LINESTRING(560000 6200000, 561000 6200000, 561000 6201000)"))
    bend.dataProvider().addFeatures([feature])
    demo_project.addMapLayer(bend)
    run(tools, "native:singlesidedbuffer", {"INPUT": "bend", "DISTANCE": 100, "SIDE": 1}, "bend_right")
    area = next(only_layer(demo_project, "bend_right").getFeatures()).geometry().area()
    assert area - 2 * 1000 * 100 == pytest.approx(math.pi * 100**2 / 4, rel=1e-3)

    run(tools, "native:minimumenclosingcircle", {"INPUT": "parks"}, "park_circles")
    radii = sorted(minimum_bounding_radius(g) for _, _, g in read_layer(gpkg, "parks"))
    areas = sorted(f.geometry().area() for f in only_layer(demo_project, "park_circles").getFeatures())
    assert areas == pytest.approx([math.pi * r**2 for r in radii], rel=1e-3)


def test_describe_algorithm_says_which_default_the_tools_use(tools):
    text = call_in_thread(tools.find_algorithm, "native:minimumenclosingcircle").text
    assert "- SEGMENTS: integer (>= 8, <= 100000); default 128 here (areas within 0.1% of the exact circle; " in text
    assert "QGIS's own default 72 is 0.13% low" in text


# -- result layers from other tools, and numbers ---------------------------------------
def test_add_result_layer_refuses_suspect_coordinates_and_adds_nothing(demo_project):
    """The one door for OGC, PostGIS, places and stored results: suspect layers never reach the project."""
    before = set(demo_project.mapLayers())
    suspect = memory_points("EPSG:4326", [(563971.16, 6203326.77)])
    with pytest.raises(SuspectOutput, match="the result layer 'fetched'"):
        add_result_layer(demo_project, suspect, "fetched")
    assert set(demo_project.mapLayers()) == before
    assert add_result_layer(demo_project, memory_points("EPSG:4326", [(10.0, 56.0)]), "fetched") == "fetched"


def test_statistics_reach_the_model_in_plain_decimals(tools, demo_project, gpkg):
    run(
        tools,
        "native:fieldcalculator",
        # Planar in the UTM CRS (shapely's figure); $area is ellipsoidal (tests/qgis/test_figures_measures.py).
        {"INPUT": "districts", "FIELD_NAME": "area_m2", "FIELD_TYPE": 0, "FORMULA": "area($geometry)"},
        "districts_area",
    )
    result = run(tools, "qgis:basicstatisticsforfields", {"INPUT_LAYER": "districts_area", "FIELD_NAME": "area_m2"})
    total = sum(geom.area for _, _, geom in read_layer(gpkg, "districts"))
    assert total > 1e6  # big enough that :g would have written it with an exponent
    assert f"SUM={plain_number(total)} m² (planar in EPSG:25832)" in result
    assert "e+" not in result
