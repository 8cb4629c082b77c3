"""native:joinbynearest's MAX_DISTANCE (and overlay_nearest's max_distance) are ignored by a QGIS built with
libspatialindex 2.1 (measured: Debian trixie's 3.40.6; 3.22.16 and 3.44.15 honour them).  The tools' answers warn
the model exactly when the running QGIS is affected: measured here with a real join of the demo schools to
their nearest hospital within 1 km, checked against shapely, never assumed from the version number."""

from __future__ import annotations

import pytest
import shapely
from qgis.core import QgsExpression, QgsExpressionContext, QgsExpressionContextUtils

from geogpt_qgis.tools.processing import nearest_check
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

JOIN = {"INPUT": "schools", "INPUT_2": "hospitals", "NEIGHBORS": 1, "MAX_DISTANCE": 1000, "DISCARD_NONMATCHING": True}
PROBE = nearest_check.max_distance_ignored  # cached: measured afresh for each test
OVERLAY = "array_length(overlay_nearest('hospitals', $id, max_distance:=1000)) > 0"


def _within_1km(project) -> int:
    """Schools with a hospital within 1 km, by shapely (independent of QGIS's spatial index)."""
    hospitals = [shapely.from_wkt(f.geometry().asWkt()) for f in project.mapLayersByName("hospitals")[0].getFeatures()]
    schools = project.mapLayersByName("schools")[0].getFeatures()
    return sum(1 for s in schools if min(shapely.from_wkt(s.geometry().asWkt()).distance(h) for h in hospitals) <= 1000)


def _affected(project) -> bool:
    """Measured: does QGIS's own join (and overlay_nearest) here keep schools farther than 1 km?"""
    from qgis import processing

    joined = processing.run("native:joinbynearest", {**JOIN, "OUTPUT": "memory:"}, context=None)["OUTPUT"]
    schools = project.mapLayersByName("schools")[0]
    context = QgsExpressionContext(QgsExpressionContextUtils.globalProjectLayerScopes(schools))
    expression = QgsExpression(OVERLAY)
    near = 0
    for feature in schools.getFeatures():
        context.setFeature(feature)
        near += bool(expression.evaluate(context))
    expected = _within_1km(project)
    assert expected == 15  # the demo town: the matrix's figure
    assert (joined.featureCount() == expected) == (near == expected)  # one library, both affected or neither
    return joined.featureCount() != expected


def test_the_probe_agrees_with_a_measured_join(demo_project):
    assert nearest_check.max_distance_ignored() == _affected(demo_project)


def test_run_algorithm_warns_exactly_when_this_qgis_ignores_the_limit(tool_ctx, demo_project):
    affected = _affected(demo_project)
    text = call_in_thread(ProcessingTools(tool_ctx).run_algorithm, "native:joinbynearest", JOIN, "schools_served").text
    assert "native:joinbynearest finished." in text
    assert ("ignores MAX_DISTANCE" in text) == affected, text
    plain = {key: value for key, value in JOIN.items() if key not in ("MAX_DISTANCE", "DISCARD_NONMATCHING")}
    text = call_in_thread(
        ProcessingTools(tool_ctx).run_algorithm, "native:joinbynearest", plain, "schools_nearest"
    ).text
    assert "ignores" not in text  # no limit asked for: nothing to warn about


def test_select_features_with_overlay_nearest_warns_exactly_when_affected(tool_ctx, demo_project):
    affected = _affected(demo_project)
    text = call_in_thread(ProjectTools(tool_ctx).select_features, "schools", OVERLAY)
    assert text.text.startswith("Selected 15 of 31" if not affected else "Selected 31 of 31"), text.text
    assert ("ignores overlay_nearest's max_distance" in text.text) == affected, text.text


def test_the_warning_tells_the_model_how_to_filter(tool_ctx, demo_project, monkeypatch):
    """What an affected QGIS (3.40.6 on Debian trixie) answers: the probe's answer stood in for, the rest real."""
    monkeypatch.setattr(nearest_check, "max_distance_ignored", lambda: True)
    tools = ProcessingTools(tool_ctx)
    text = call_in_thread(tools.run_algorithm, "native:joinbynearest", JOIN, "schools_served").text
    assert "ignores MAX_DISTANCE of native:joinbynearest" in text
    assert 'filtering the result on its "distance" field (e.g. select_features with "distance" <= 1000)' in text
    text = call_in_thread(
        tools.run_algorithm, "native:extractbyexpression", {"INPUT": "schools", "EXPRESSION": OVERLAY}, "near"
    ).text
    assert "ignores overlay_nearest's max_distance" in text
    selected = call_in_thread(ProjectTools(tool_ctx).select_features, "schools", OVERLAY).text
    assert "Note: This QGIS" in selected and "overlay_nearest('layer', $geometry)[0]) <= d" in selected


@pytest.fixture(autouse=True)
def _fresh_probe():
    PROBE.cache_clear()
    yield
    PROBE.cache_clear()
