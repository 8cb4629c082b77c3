"""Terrain algorithms on the demo DEM (issue 24): the CRS guard, and slope checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from osgeo import gdal
from qgis.core import QgsRasterLayer

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.family import ProcessingTools
from tests.support.runs import call_in_thread


@pytest.fixture
def tools(tool_ctx) -> ProcessingTools:
    return ProcessingTools(tool_ctx)


def _dem(demo_project) -> tuple[np.ndarray, float]:
    dataset = gdal.Open(demo_project.mapLayersByName("elevation")[0].source())
    band = dataset.GetRasterBand(1)
    return band.ReadAsArray().astype(np.float64), band.GetNoDataValue()


@pytest.fixture
def geographic_dem(demo_project, tmp_path) -> QgsRasterLayer:
    path = tmp_path / "dem_wgs84.tif"
    source = demo_project.mapLayersByName("elevation")[0].source()
    gdal.Warp(str(path), source, dstSRS="EPSG:4326")
    layer = QgsRasterLayer(str(path), "dem_wgs84")
    assert layer.isValid() and layer.crs().isGeographic()
    demo_project.addMapLayer(layer)
    return layer


@pytest.mark.parametrize("algorithm", ["native:slope", "native:hillshade", "gdal:slope", "native:aspect"])
def test_terrain_on_a_geographic_dem_is_refused_with_the_way_out(tools, demo_project, geographic_dem, algorithm):
    before = set(demo_project.mapLayers())
    with pytest.raises(ToolError) as info:
        call_in_thread(tools.run_algorithm, algorithm, {"INPUT": "dem_wgs84", "OUTPUT": "TEMPORARY_OUTPUT"})
    message = str(info.value)
    assert "'dem_wgs84' is in EPSG:4326 (degrees)" in message and "Nothing was computed" in message
    assert "gdal:warpreproject" in message and "TARGET_CRS=EPSG:32632" in message  # the demo lies in UTM zone 32
    assert set(demo_project.mapLayers()) == before


def test_gdal_slope_with_its_degree_scale_is_allowed(tools, demo_project, geographic_dem):
    text = call_in_thread(
        tools.run_algorithm,
        "gdal:slope",
        {"INPUT": "dem_wgs84", "BAND": 1, "SCALE": 111120, "OUTPUT": "TEMPORARY_OUTPUT"},
    ).text
    assert "gdal:slope finished." in text


def test_slope_of_the_projected_dem_matches_numpy(tools, demo_project):
    text = call_in_thread(
        tools.run_algorithm, "native:slope", {"INPUT": "elevation", "OUTPUT": "TEMPORARY_OUTPUT"}
    ).text
    added = [layer for layer in demo_project.mapLayers().values() if layer.name().startswith("elevation_slope")]
    assert "native:slope finished." in text and len(added) == 1, text
    dataset = gdal.Open(added[0].source())
    slope = dataset.GetRasterBand(1).ReadAsArray().astype(np.float64)
    dem, nodata = _dem(demo_project)
    # Horn's slope by hand (numpy), on interior pixels whose 3 x 3 window has no nodata.
    z = np.where(dem == nodata, np.nan, dem)
    window = {
        (dy, dx): z[1 + dy : z.shape[0] - 1 + dy, 1 + dx : z.shape[1] - 1 + dx]
        for dy in (-1, 0, 1)
        for dx in (-1, 0, 1)
    }
    dzdx = (
        (window[-1, 1] + 2 * window[0, 1] + window[1, 1]) - (window[-1, -1] + 2 * window[0, -1] + window[1, -1])
    ) / 80
    dzdy = (
        (window[1, -1] + 2 * window[1, 0] + window[1, 1]) - (window[-1, -1] + 2 * window[-1, 0] + window[-1, 1])
    ) / 80
    expected = np.degrees(np.arctan(np.hypot(dzdx, dzdy)))
    inner = slope[1:-1, 1:-1]
    ok = ~np.isnan(expected)
    assert np.abs(inner[ok] - expected[ok]).max() < 0.01
    steep_m2 = (expected[ok] > 15).sum() * 100
    assert steep_m2 > 0 and ((inner[ok] > 15).sum() * 100) == pytest.approx(steep_m2, rel=0.001)


@pytest.mark.parametrize(
    ("algorithm", "parameters", "message"),
    [
        ("gdal:slope", {"INPUT": "elevation", "BAND": 3}, "BAND=3 is out of range: 'elevation' has only band 1."),
        (
            "native:zonalstatisticsfb",
            {"INPUT": "districts", "INPUT_RASTER": "landcover", "RASTER_BAND": 0},
            "out of range",
        ),
        ("native:slope", {"INPUT": "schools"}, "INPUT"),
        (
            "native:buffer",
            {"INPUT": "elevation", "DISTANCE": 10},
            "INPUT needs a vector layer; 'elevation' is a raster",
        ),
        (
            "native:reclassifybytable",
            {"INPUT_RASTER": "landcover", "RASTER_BAND": 1, "TABLE": ["forest", "Forest", 1]},
            "TABLE: 'forest' is a class label of 'landcover', not a value; its code is 3",
        ),
        (
            "native:reclassifybytable",
            {"INPUT_RASTER": "landcover", "RASTER_BAND": 1, "TABLE": ["Water", "Water", "1"]},
            "its code is 1",
        ),
    ],
)
def test_weak_model_mistakes_with_rasters_are_explained(tools, demo_project, algorithm, parameters, message):
    before = set(demo_project.mapLayers())
    with pytest.raises(ToolError, match=message):
        call_in_thread(tools.run_algorithm, algorithm, {**parameters, "OUTPUT": "TEMPORARY_OUTPUT"})
    assert set(demo_project.mapLayers()) == before


def test_raster_outputs_are_styled_and_summarised(tools, demo_project):
    from qgis.core import QgsPalettedRasterRenderer, QgsSingleBandGrayRenderer, QgsSingleBandPseudoColorRenderer

    def added(prefix: str) -> QgsRasterLayer:
        return next(layer for layer in demo_project.mapLayers().values() if layer.name().startswith(prefix))

    text = call_in_thread(
        tools.run_algorithm, "native:slope", {"INPUT": "elevation", "OUTPUT": "TEMPORARY_OUTPUT"}
    ).text
    slope = added("elevation_slope")
    dataset = gdal.Open(slope.source())
    values = dataset.GetRasterBand(1).ReadAsArray()
    valid = values[values != dataset.GetRasterBand(1).GetNoDataValue()].astype(np.float64)
    assert f"band 1 (Float32, nodata -9999): min 0, max {valid.max():.7g}, mean {valid.mean():.7g}" in text
    assert "statistics: exact, from all 480,000 pixels." in text
    renderer = slope.renderer()
    assert isinstance(renderer, QgsSingleBandPseudoColorRenderer)
    assert renderer.classificationMax() == pytest.approx(valid.max(), rel=1e-6)

    call_in_thread(tools.run_algorithm, "native:hillshade", {"INPUT": "elevation", "OUTPUT": "TEMPORARY_OUTPUT"})
    assert isinstance(added("elevation_hillshade").renderer(), QgsSingleBandGrayRenderer)

    table = [0, 40, 1, 40, 1000, 2]
    parameters = {"INPUT_RASTER": "elevation", "RASTER_BAND": 1, "TABLE": table, "DATA_TYPE": 0, "NO_DATA": 0}
    text = call_in_thread(
        tools.run_algorithm, "native:reclassifybytable", {**parameters, "OUTPUT": "TEMPORARY_OUTPUT"}
    ).text
    classes = next(layer for layer in demo_project.mapLayers().values() if "reclass" in layer.name())
    assert isinstance(classes.renderer(), QgsPalettedRasterRenderer), text
    assert [c.value for c in classes.renderer().classes()] == [1, 2]
    assert "categorical, 2 classes" in text


def test_a_band_left_out_of_a_single_band_raster_is_band_1(tools, demo_project):
    parameters = {"INPUT": "districts", "INPUT_RASTER": "elevation", "STATISTICS": [2], "OUTPUT": "TEMPORARY_OUTPUT"}
    text = call_in_thread(tools.run_algorithm, "native:zonalstatisticsfb", parameters).text
    assert "native:zonalstatisticsfb finished." in text


def test_class_codes_are_not_taken_for_class_labels(tools, demo_project):
    parameters = {"INPUT_RASTER": "landcover", "RASTER_BAND": 1, "TABLE": [3, 3, 1], "OUTPUT": "TEMPORARY_OUTPUT"}
    assert "finished." in call_in_thread(tools.run_algorithm, "native:reclassifybytable", parameters).text
