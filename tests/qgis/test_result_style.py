"""Result layers are drawn so that the layer they were made from, and its selection, stay readable under them."""

from __future__ import annotations

import pytest
from qgis.core import (
    QgsFillSymbol,
    QgsLineSymbol,
    QgsMapRendererSequentialJob,
    QgsMapSettings,
    QgsMarkerSymbol,
    QgsRectangle,
    QgsSingleSymbolRenderer,
    QgsVectorLayer,
)
from qgis.PyQt.QtCore import QSize
from qgis.PyQt.QtGui import QColor

from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.result_style import result_symbol
from tests.support.runs import call_in_thread

SELECTION = QColor(255, 255, 0)


def _render(layers: list[QgsVectorLayer], centre, crs) -> QColor:
    """The colour of the pixel at ``centre`` in a 101 px render of 200 m around it, layers top first."""
    settings = QgsMapSettings()
    settings.setLayers(layers)
    settings.setDestinationCrs(crs)
    settings.setOutputSize(QSize(101, 101))
    settings.setExtent(QgsRectangle(centre.x() - 100, centre.y() - 100, centre.x() + 100, centre.y() + 100))
    settings.setBackgroundColor(QColor(255, 255, 255))
    settings.setSelectionColor(SELECTION)
    job = QgsMapRendererSequentialJob(settings)
    job.start()
    job.waitForFinished()
    return job.renderedImage().pixelColor(50, 50)


def test_a_buffer_of_the_selected_schools_leaves_them_and_their_selection_visible(tool_ctx, demo_project):
    schools = demo_project.mapLayersByName("schools")[0]
    big = [f.id() for f in schools.getFeatures() if f["pupils"] > 500]
    assert big
    schools.selectByIds(big)
    tools = ProcessingTools(tool_ctx)
    result = call_in_thread(
        tools.run_algorithm, "native:buffer", {"INPUT": "schools", "DISTANCE": 150}, "near_schools"
    ).text
    assert "added layer 'near_schools'" in result, result
    buffer = demo_project.mapLayersByName("near_schools")[0]
    renderer = buffer.renderer()
    assert isinstance(renderer, QgsSingleSymbolRenderer)
    fill = renderer.symbol().symbolLayer(0)
    assert fill.fillColor().alpha() < 128  # see-through...
    assert fill.strokeColor().alpha() == 255 and fill.strokeWidth() > 0  # ...with a clear outline
    # Added above its source, which stays ticked in the layer tree.
    order = [node.layer().name() for node in demo_project.layerTreeRoot().findLayers()]
    assert order.index("near_schools") < order.index("schools")
    assert demo_project.layerTreeRoot().findLayer(schools.id()).isVisible()
    # Drawn on the map: a selected school still shows its selection colour through the buffer over it.
    centre = schools.getFeature(big[0]).geometry().asPoint()
    alone = _render([schools], centre, demo_project.crs())
    assert alone.green() > 200 and alone.blue() < 60  # the selection's yellow
    under = _render([buffer, schools], centre, demo_project.crs())
    assert under.green() > 130 and under.red() > 180, under.name()  # still yellowish, tinted by the buffer


def test_lines_and_points_get_a_strong_line_and_a_ring(qgis_app):
    lines = QgsVectorLayer("LineString?crs=EPSG:25832", "roads_clipped", "memory")
    points = QgsVectorLayer("Point?crs=EPSG:25832", "schools_near_rivers", "memory")
    table = QgsVectorLayer("None", "counts", "memory")
    line = result_symbol(lines)
    assert isinstance(line, QgsLineSymbol) and line.width() >= 0.8 and line.color().alpha() == 255
    ring = result_symbol(points)
    assert isinstance(ring, QgsMarkerSymbol)
    marker = ring.symbolLayer(0)
    assert marker.fillColor().alpha() == 0 and marker.strokeColor().alpha() == 255  # the point under it shows
    assert result_symbol(table) is None
    assert not isinstance(result_symbol(points), QgsFillSymbol)


def _ring(layer: QgsVectorLayer) -> bool:
    """Whether ``layer`` is drawn with the results' ring (a point result does not cover the point under it)."""
    renderer = layer.renderer()
    if not isinstance(renderer, QgsSingleSymbolRenderer):
        return False
    marker = renderer.symbol().symbolLayer(0)
    return marker.fillColor().alpha() == 0 and marker.strokeColor().alpha() == 255


def test_fetched_ogc_features_are_drawn_as_results(tool_ctx, demo_project, ogc_server):
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from geogpt_qgis.tools.ogc.family import OgcTools

    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")
    tools = OgcTools(tool_ctx)
    call_in_thread(tools.query_ogc_collection, "schools", filter="pupils > 200", output_name="big_ogc")
    assert _ring(demo_project.mapLayersByName("big_ogc")[0])  # kept through the copy into the GeoPackage


@pytest.mark.postgis
def test_a_postgis_query_result_is_drawn_as_a_result(tool_ctx, demo_project):
    from geogpt_qgis.tools.postgis.family import PostgisTools
    from tests.support.postgis import saved_connection

    with saved_connection("elvbury") as name:
        tools = PostgisTools(tool_ctx)
        call_in_thread(tools.run_sql, "SELECT name, geom FROM schools WHERE pupils > 200", name, "big_db")
    assert _ring(demo_project.mapLayersByName("big_db")[0])
