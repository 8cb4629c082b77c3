"""style_layer on the real demo project in real QGIS: every method's renderer, its classes checked independently.

Breaks are recomputed without QGIS (numpy quantiles and linspace, jenkspy's
Jenks, hand-worked pretty breaks), categories from the GeoPackage with sqlite3,
raster ranges with GDAL and numpy; undo must give back the exact renderer XML,
and every refused call must leave the style as it was.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import sqlite3
import threading
from pathlib import Path

import jenkspy
import numpy as np
import pytest
from osgeo import gdal
from qgis.core import (
    QgsCategorizedSymbolRenderer,
    QgsFeature,
    QgsGeometry,
    QgsGraduatedSymbolRenderer,
    QgsHeatmapRenderer,
    QgsHillshadeRenderer,
    QgsPalettedRasterRenderer,
    QgsPointXY,
    QgsRuleBasedRenderer,
    QgsSingleBandPseudoColorRenderer,
    QgsSingleSymbolRenderer,
    QgsStyle,
    QgsVectorLayer,
)

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.classify import jenks_breaks
from geogpt_qgis.tools.maps.renderers import MILLIMETERS
from geogpt_qgis.tools.maps.style_history import symbology_xml
from geogpt_qgis.tools.maps.styling import StylePart
from tests.support.runs import call_in_thread, wait_until


@pytest.fixture
def style(tool_ctx) -> StylePart:
    return StylePart(tool_ctx)


@pytest.fixture
def gpkg(demo_project):
    connection = sqlite3.connect(Path(demo_project.fileName()).with_name("elvbury.gpkg"))
    yield connection
    connection.close()


def layer(project, name: str):
    return project.mapLayersByName(name)[0]


def renderer_edges(renderer: QgsGraduatedSymbolRenderer) -> list[float]:
    """The lowest bound, then each class's upper bound (checked to meet the next class's lower bound)."""
    ranges = renderer.ranges()
    assert all(a.upperValue() == b.lowerValue() for a, b in itertools.pairwise(ranges))
    return [ranges[0].lowerValue(), *(r.upperValue() for r in ranges)]


def populations(gpkg) -> list[float]:
    return [float(row[0]) for row in gpkg.execute("SELECT population FROM districts")]


def test_quantile_classes_are_numpys_quantiles_and_the_reply_lists_them(style, demo_project, gpkg):
    result = style.style_layer("districts", method="quantile", field="population", classes=5)
    values = populations(gpkg)
    edges = np.quantile(values, np.linspace(0, 1, 6))  # numpy's default (linear) quantiles
    renderer = layer(demo_project, "districts").renderer()
    assert isinstance(renderer, QgsGraduatedSymbolRenderer)
    assert renderer.classAttribute() == "population"
    assert renderer.classificationMethod().id() == "Quantile"  # what the Layer Styling panel shows
    assert renderer_edges(renderer) == pytest.approx(list(edges))
    assert result.text.startswith("Styled 'districts' graduated: 5 quantile classes of population (ramp YlOrRd): ")
    assert "6,400–8,160, 8,160–10,140, 10,140–12,620, 12,620–14,220, 14,220–21,400." in result.text
    assert result.artifact.layer_names == ("districts",)
    colours = [r.symbol().color().name() for r in renderer.ranges()]
    assert len(set(colours)) == 5  # coloured along the ramp


def test_equal_interval_and_pretty_breaks(style, demo_project, gpkg):
    values = populations(gpkg)
    style.style_layer("districts", method="equal interval", field="population", classes=4)
    edges = np.linspace(min(values), max(values), 5)
    renderer = layer(demo_project, "districts").renderer()
    assert renderer_edges(renderer) == pytest.approx(list(edges))
    assert renderer.classificationMethod().id() == "EqualInterval"
    # Pretty: round steps of 5,000 between 6,400 and 21,400 (worked by hand), the ends at the data's range.
    text = style.style_layer("districts", method="pretty", field="population", classes=5).text
    assert renderer_edges(layer(demo_project, "districts").renderer()) == [6400, 10000, 15000, 20000, 21400]
    assert "4 pretty classes of population" in text


def test_jenks_breaks_are_jenkspys(style, demo_project, gpkg):
    values = populations(gpkg)
    style.style_layer("districts", method="jenks", field="population", classes=5)
    expected = jenkspy.jenks_breaks(values, n_classes=5)
    renderer = layer(demo_project, "districts").renderer()
    assert renderer_edges(renderer) == pytest.approx(list(expected))
    assert renderer.classificationMethod().id() == "Jenks"
    # Beyond the demo: skewed data of several sizes, and more values than are classified exactly.
    rng = np.random.default_rng(7)
    for size in (50, 600):
        data = list(np.round(rng.gamma(2.0, 100.0, size), 3))
        assert jenks_breaks(data, 6) == pytest.approx(jenkspy.jenks_breaks(data, n_classes=6)[1:])
    many = list(rng.normal(0, 1, 20_000))
    breaks = jenks_breaks(many, 4)
    assert len(breaks) == 4 and breaks[-1] == max(many) and breaks == sorted(breaks)


def test_categorized_classes_are_the_distinct_values(style, demo_project, gpkg):
    result = style.style_layer("landuse", method="categorized", field="district", color="blues")  # any case
    renderer = layer(demo_project, "landuse").renderer()  # the demo's is categorized by class
    assert isinstance(renderer, QgsCategorizedSymbolRenderer) and renderer.classAttribute() == "district"
    expected = sorted(row[0] for row in gpkg.execute("SELECT DISTINCT district FROM landuse"))
    assert [c.value() for c in renderer.categories()] == expected
    ramp = QgsStyle.defaultStyle().colorRamp("Blues")
    colours = [ramp.color(i / (len(expected) - 1)).name() for i in range(len(expected))]
    assert [c.symbol().color().name() for c in renderer.categories()] == colours
    assert f"(ramp Blues): {len(expected)} classes: {', '.join(expected)}." in result.text


def test_many_values_get_an_other_class(style, demo_project, gpkg):
    result = style.style_layer("roads", method="categorized", field="name")
    renderer = layer(demo_project, "roads").renderer()
    names = [row[0] for row in gpkg.execute("SELECT name FROM roads")]
    distinct = set(names)
    assert len(distinct) > 12
    values = [c.value() for c in renderer.categories()]
    assert values[-1] == "" and renderer.categories()[-1].label() == "other"  # QGIS's "all other values"
    kept = set(values[:-1])
    assert len(kept) == 11 and kept <= distinct
    counts = sorted((names.count(v) for v in distinct), reverse=True)
    assert sorted((names.count(v) for v in kept), reverse=True) == counts[:11]  # the most common ones
    assert f"and 'other' for the {len(distinct) - 11} other values" in result.text


def test_single_symbol_colour_outline_and_opacity(style, demo_project):
    parks = layer(demo_project, "parks")
    result = style.style_layer("parks", color="dark green, black", opacity=0.5)  # CSS names, spaces ignored
    renderer = parks.renderer()
    assert isinstance(renderer, QgsSingleSymbolRenderer)
    assert renderer.symbol().color().name() == "#006400"
    assert renderer.symbol().symbolLayer(0).strokeColor().name() == "#000000"
    assert renderer.symbol().opacity() == pytest.approx(0.5)
    assert result.text.startswith("Styled 'parks' with a single symbol: colour #006400, opacity 0.5.")
    style.style_layer("parks", opacity=0.25)  # opacity alone keeps the colour
    assert parks.renderer().symbol().color().name() == "#006400"
    assert parks.renderer().symbol().opacity() == pytest.approx(0.25)


def test_size_is_a_points_size_a_lines_width_and_a_polygons_outline_width(style, demo_project):
    """One number in mm, read back from the symbols QGIS draws (also the classes' symbols)."""
    result = style.style_layer("schools", color="orange", size=3.5)
    marker = layer(demo_project, "schools").renderer().symbol()
    assert (marker.size(), marker.sizeUnit(), marker.color().name()) == (3.5, MILLIMETERS, "#ffa500")
    assert result.text.startswith("Styled 'schools' with a single symbol: colour #ffa500, opacity 1, size 3.5 mm.")
    result = style.style_layer("roads", method="single", size=0.8)
    line = layer(demo_project, "roads").renderer().symbol()
    assert (line.width(), line.outputUnit()) == (pytest.approx(0.8), MILLIMETERS)
    assert "width 0.8 mm." in result.text
    result = style.style_layer("parks", color=",dark red", size=1.2)  # the outline only: the fill is kept
    fill = layer(demo_project, "parks").renderer().symbol().symbolLayer(0)
    assert (fill.strokeWidth(), fill.strokeWidthUnit(), fill.strokeColor().name()) == (1.2, MILLIMETERS, "#8b0000")
    assert "outline width 1.2 mm." in result.text
    style.style_layer("districts", method="quantile", field="population", size=0.6)
    renderer = layer(demo_project, "districts").renderer()
    assert [r.symbol().symbolLayer(0).strokeWidth() for r in renderer.ranges()] == [0.6] * 5


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("schools", {"size": -2}, "size is in millimetres, more than 0 and at most 50 (e.g. 2 for a point"),
        ("schools", {"size": 0}, "not 0"),
        ("roads", {"size": 120}, "size is in millimetres, more than 0 and at most 50"),
        ("schools", {"method": "heatmap", "size": 2}, "a heatmap style has no symbol size"),
        ("elevation", {"size": 2}, "field, colours and size are for vector layers"),
        ("elevation", {"method": "hillshade", "size": 2}, "a hillshade style has no symbol size"),
    ],
)
def test_a_wrong_size_is_refused_and_changes_nothing(style, demo_project, name, args, message):
    target = layer(demo_project, name)
    before = symbology_xml(target)
    with pytest.raises(ToolError, match=re.escape(message)):
        style.style_layer(name, **args)
    assert symbology_xml(target) == before


def test_rules_and_heatmap(style, demo_project, gpkg):
    schools = layer(demo_project, "schools")
    text = style.style_layer("schools", method="rules", field='"pupils" > 300=red; ELSE=#999999').text
    renderer = schools.renderer()
    assert isinstance(renderer, QgsRuleBasedRenderer)
    rules = renderer.rootRule().children()
    assert [r.filterExpression() for r in rules] == ['"pupils" > 300', "ELSE"]
    assert rules[1].isElse()
    assert [r.symbol().color().name() for r in rules] == ["#ff0000", "#999999"]
    assert "2 rules" in text
    text = style.style_layer("schools", method="heatmap", field="pupils").text
    assert isinstance(schools.renderer(), QgsHeatmapRenderer)
    assert schools.renderer().weightExpression() == '"pupils"'
    assert "heatmap (radius 10 mm, ramp Inferno, weighted by pupils)" in text


def test_raster_pseudocolor_paletted_and_hillshade(style, demo_project):
    elevation = layer(demo_project, "elevation")
    text = style.style_layer("elevation", color="Magma", opacity=0.8).text
    dataset = gdal.Open(elevation.source())
    band = dataset.GetRasterBand(1)
    pixels = band.ReadAsArray().astype(float)
    nodata = band.GetNoDataValue()
    valid = pixels[pixels != nodata] if nodata is not None else pixels.ravel()
    renderer = elevation.renderer()
    assert isinstance(renderer, QgsSingleBandPseudoColorRenderer)
    assert renderer.classificationMin() == pytest.approx(valid.min())
    assert renderer.classificationMax() == pytest.approx(valid.max())
    assert renderer.opacity() == pytest.approx(0.8)
    assert "singleband pseudocolor (ramp Magma)" in text
    style.style_layer("elevation", method="hillshade")
    assert isinstance(elevation.renderer(), QgsHillshadeRenderer)
    landcover = layer(demo_project, "landcover")
    text = style.style_layer("landcover", method="categorized").text  # a raster's categories: paletted
    dataset = gdal.Open(landcover.source())  # kept: a band outliving its dataset crashes GDAL's bindings
    codes = np.unique(dataset.GetRasterBand(1).ReadAsArray())
    nodata = dataset.GetRasterBand(1).GetNoDataValue()
    codes = [float(c) for c in codes if c != nodata]
    assert isinstance(landcover.renderer(), QgsPalettedRasterRenderer)
    assert [c.value for c in landcover.renderer().classes()] == codes
    assert f"paletted (ramp Viridis): {len(codes)} values: 1 Water, 2 Grass, 3 Forest" in text
    assert [c.label for c in landcover.renderer().classes()][:3] == ["Water", "Grass", "Forest"]  # names kept
    with pytest.raises(ToolError, match="use method pseudocolor"):
        style.style_layer("elevation", method="paletted")


def test_undo_restores_the_exact_previous_renderer(style, demo_project, qgis_iface):
    districts = layer(demo_project, "districts")
    original = symbology_xml(districts)
    style.style_layer("districts", method="quantile", field="population")
    graduated = symbology_xml(districts)
    style.style_layer("districts", method="categorized", field="name")
    text = style.style_layer("districts", method="undo").text
    assert symbology_xml(districts) == graduated
    assert text == (
        "Restored the previous style of 'districts': graduated (replacing categorized). "
        "1 earlier style can still be restored."
    )
    style.style_layer("districts", method="undo")
    assert symbology_xml(districts) == original
    with pytest.raises(ToolError, match="no earlier style of 'districts' to restore"):
        style.style_layer("districts", method="undo")


BAD_CALLS = [
    (
        {"method": "quantile", "field": "name"},
        "'name' is not numeric; quantile needs a numeric field (numeric fields: population)",
    ),
    ({"method": "quantile", "field": "populaton"}, "no field in 'districts' 'populaton'; did you mean 'population'?"),
    (
        {"method": "quantile", "field": "population", "color": "viridian"},
        "no colour ramp 'viridian'; did you mean 'Viridis'?",
    ),
    ({"color": "blurple"}, "'blurple' is not a colour; use a CSS name like 'red'"),
    ({"method": "graduated", "field": "population"}, "no style method 'graduated'"),
    ({"method": "pseudocolor"}, "pseudocolor is a raster style; 'districts' is a vector layer"),
    ({"method": "heatmap"}, "a heatmap needs a point layer"),
    ({"method": "heatmap", "opacity": 0.5}, "a heatmap has no opacity of its own"),
    ({"method": "quantile", "field": "population", "classes": 40}, "classes must be 2 to 20"),
    ({"method": "rules", "field": '"population" > 10000'}, "rule 1 '\"population\" > 10000' needs 'expression=colour'"),
    ({"method": "rules", "field": '"popul" > 1=red'}, "did you mean 'population'?"),
    ({"method": "rules", "field": "env('HOME') = 'x'=red"}, "is not evaluated without the user's approval"),
    ({"method": "categorized", "field": "name", "color": "red"}, "no colour ramp 'red'"),
    ({"opacity": 2}, "opacity must be between 0 and 1"),
    ({"method": "rules", "field": "\"population\" + 'many' > 3=red"}, "fails on 'districts': Cannot convert 'many'"),
    ({"method": "rules", "field": '"population" > 1=red; ELSE=nocolour'}, "rule 2 'ELSE=nocolour' needs"),
]


@pytest.mark.parametrize(("args", "message"), BAD_CALLS)
def test_mistakes_come_back_with_the_fix_and_change_nothing(style, demo_project, args, message):
    districts = layer(demo_project, "districts")
    before = symbology_xml(districts)
    with pytest.raises(ToolError) as raised:
        style.style_layer("districts", **args)
    assert message in str(raised.value)
    assert symbology_xml(districts) == before


def test_five_classes_as_text_is_answered_through_the_toolkit(tool_ctx, demo_project):
    toolkit = Toolkit(StylePart(tool_ctx).tools())
    args = {"layer": "districts", "method": "quantile", "field": "population", "classes": "5 classes"}
    outcome = call_in_thread(lambda: asyncio.run(toolkit.run("style_layer", args)))
    assert not outcome.ok and "classes" in outcome.text and "integer" in outcome.text
    args["classes"] = "5"  # a number as text is read as the number
    outcome = call_in_thread(lambda: asyncio.run(toolkit.run("style_layer", args)))
    assert outcome.ok and "5 quantile classes" in outcome.text


def test_classes_are_computed_off_the_main_thread_and_the_legend_refreshes(style, demo_project, qgis_iface):
    points = QgsVectorLayer("Point?crs=EPSG:25832&field=reading:double", "sensors", "memory")
    rng = np.random.default_rng(3)
    values = rng.gamma(2.0, 10.0, 5000)
    features = []
    for index, value in enumerate(values):
        feature = QgsFeature(points.fields())
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(560000 + index, 6200000)))
        feature["reading"] = float(value)
        features.append(feature)
    points.dataProvider().addFeatures(features)
    demo_project.addMapLayer(points)
    changed = []
    points.styleChanged.connect(lambda: changed.append(True))
    results = {}
    thread = threading.Thread(
        target=lambda: results.update(text=style.style_layer("sensors", method="quantile", field="reading").text)
    )
    thread.start()
    wait_until(lambda: not thread.is_alive(), 20)
    assert "5 quantile classes of reading" in results["text"]
    edges = np.quantile(values, np.linspace(0, 1, 6))
    assert renderer_edges(points.renderer()) == pytest.approx(list(edges))
    assert changed  # the legend and the Layer Styling panel hear of it
