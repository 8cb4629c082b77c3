"""Raster figures where GDAL's view and QGIS's differ: overviews, masks, float nodata, rotation, big numbers.

Each case was a wrong number once (an audit reproduced them): a cubic COG
overview invented land-cover classes, pixels hidden by a mask band were
counted, a float32 nodata of 0.1 was sampled as a value, zonal summaries of a
rotated grid came from QGIS's resampled copy, and four significant digits
merged 10001 and 10008.5.  Every expected figure comes from numpy over the
array written, or from QGIS's own provider.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr
from qgis.core import QgsFeature, QgsGeometry, QgsPointXY, QgsRaster, QgsRasterLayer, QgsRectangle, QgsVectorLayer

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.styling import StylePart
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

VALUE = QgsRaster.IdentifyFormat.IdentifyFormatValue
NORTH_UP = (500_000.0, 10.0, 0.0, 6_600_000.0, 0.0, -10.0)


@pytest.fixture
def tools(tool_ctx) -> ProjectTools:
    return ProjectTools(tool_ctx)


def _write(path: Path, array: np.ndarray, geotransform=NORTH_UP, nodata=None, kind=gdal.GDT_Float32, mask=None) -> Path:
    """A one-band GeoTIFF in EPSG:25832; ``mask`` (0 hides a pixel) becomes its GDAL mask band."""
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), array.shape[1], array.shape[0], 1, kind)
    dataset.SetGeoTransform(geotransform)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    dataset.SetProjection(srs.ExportToWkt())
    band = dataset.GetRasterBand(1)
    if nodata is not None:
        band.SetNoDataValue(nodata)
    band.WriteArray(array)
    if mask is not None:
        dataset.CreateMaskBand(gdal.GMF_PER_DATASET)
        band.GetMaskBand().WriteArray(mask)
    dataset = None
    return path


def _zones(project, name: str, rectangle: QgsRectangle) -> None:
    """A memory layer of one rectangular zone called "z"."""
    zones = QgsVectorLayer("Polygon?crs=EPSG:25832&field=name:string", name, "memory")
    feature = QgsFeature(zones.fields())
    feature.setGeometry(QgsGeometry.fromRect(rectangle))
    feature["name"] = "z"
    zones.dataProvider().addFeatures([feature])
    project.addMapLayer(zones)


def _add(project, path: Path, name: str) -> QgsRasterLayer:
    layer = QgsRasterLayer(str(path), name, "gdal")
    assert layer.isValid()
    project.addMapLayer(layer)
    return layer


def _figures(text: str) -> dict[str, float]:
    return {key: float(value) for key, value in re.findall(r"\b(min|max|mean|std) (-?[\d.e+]+)", text)}


def test_a_large_raster_with_averaged_overviews_shows_only_classes_the_data_has(
    tools, tool_ctx, demo_project, tmp_path
):
    """Over 8 M pixels the statistics are sampled from real pixels, never from an overview's resampled values."""
    rng = np.random.default_rng(2)
    patches = rng.choice(np.array([1, 5, 9], np.uint8), size=(100, 100), p=[0.5, 0.3, 0.2])
    # 4,100 x 4,100 (16.8 M pixels) in patches of 41 x 41: an overview's 2 x 2 average straddles patch edges
    cover = np.kron(patches, np.ones((41, 41), np.uint8))
    source = _write(tmp_path / "cover.tif", cover, kind=gdal.GDT_Byte)
    cog = gdal.Translate(
        str(tmp_path / "cover_cog.tif"), str(source), format="COG", creationOptions=["RESAMPLING=AVERAGE"]
    )
    assert cog.GetRasterBand(1).GetOverviewCount() > 0
    cog = None  # closed: written to disk
    _add(demo_project, tmp_path / "cover_cog.tif", "cover_cog")

    text = call_in_thread(tools.describe_layer, "cover_cog").text
    assert "categorical, 3 classes" in text and "approximate, from" in text, text
    codes, counts = np.unique(cover, return_counts=True)
    for code, count in zip(codes.tolist(), counts.tolist(), strict=True):
        shown = float(re.search(rf"\b{code} ([\d.]+)%", text).group(1))
        assert shown == pytest.approx(100 * count / cover.size, abs=3), (code, text)

    styled = call_in_thread(StylePart(tool_ctx).style_layer, "cover_cog", method="paletted").text
    renderer = demo_project.mapLayersByName("cover_cog")[0].renderer()
    assert {int(c.value) for c in renderer.classes()} == {1, 5, 9}, str(styled)


def test_pixels_hidden_by_a_mask_band_are_left_out_everywhere(tools, demo_project, tmp_path):
    values = np.arange(100, dtype=np.float32).reshape(10, 10)
    mask = np.full((10, 10), 255, np.uint8)
    mask[:, :5] = 0  # the western half is hidden
    path = _write(tmp_path / "masked.tif", values, mask=mask)
    layer = _add(demo_project, path, "masked")

    text = call_in_thread(tools.describe_layer, "masked").text
    shown = values[mask == 255].astype(np.float64)
    figures = _figures(text)
    for key, expected in (("min", shown.min()), ("max", shown.max()), ("mean", shown.mean())):
        assert figures[key] == pytest.approx(expected, rel=1e-6), (key, text)
    assert "50% nodata or hidden by the mask band" in text

    sample = call_in_thread(tools.describe_layer, "masked", "500015 6599985; 500085 6599985").text
    assert "nodata (hidden by the mask band)" in sample and f"| {values[1, 8]:.7g} |" in sample, sample
    # QGIS draws the hidden pixel transparent: its mask (band 2 in QGIS) is 0 there.
    identified = layer.dataProvider().identify(
        QgsPointXY(500_015, 6_599_985), QgsRaster.IdentifyFormat.IdentifyFormatValue
    )
    assert identified.results()[2] == 0


def test_a_float32_nodata_that_is_not_exact_in_binary_is_still_nodata_when_sampled(tools, demo_project, tmp_path):
    values = np.full((4, 4), 7.0, np.float32)
    values[0] = 0.1
    _write(tmp_path / "base.tif", values)
    # The nodata as GDAL 3.6 writes it in a VRT: 16 digits, a double a float32 pixel never equals exactly.
    (tmp_path / "nodata.vrt").write_text(
        f"""<VRTDataset rasterXSize="4" rasterYSize="4">
  <SRS>EPSG:25832</SRS>
  <GeoTransform>{", ".join(str(v) for v in NORTH_UP)}</GeoTransform>
  <VRTRasterBand dataType="Float32" band="1">
    <NoDataValue>0.1000000014901161</NoDataValue>
    <SimpleSource><SourceFilename relativeToVRT="1">base.tif</SourceFilename><SourceBand>1</SourceBand></SimpleSource>
  </VRTRasterBand>
</VRTDataset>
""",
        encoding="utf-8",
    )
    reopened = gdal.Open(str(tmp_path / "nodata.vrt"))
    nodata = reopened.GetRasterBand(1).GetNoDataValue()
    reopened = None
    assert nodata != float(np.float32(0.1))  # the case: a double that float32 pixels never equal exactly
    layer = _add(demo_project, tmp_path / "nodata.vrt", "nodata_vrt")

    sample = call_in_thread(tools.describe_layer, "nodata_vrt", "500005 6599995; 500005 6599975").text
    assert "nodata (no value here)" in sample and "| 7 |" in sample, sample
    identified = layer.dataProvider().identify(
        QgsPointXY(500_005, 6_599_995), QgsRaster.IdentifyFormat.IdentifyFormatValue
    )
    assert identified.results()[1] is None  # QGIS agrees: nodata


def test_a_rotated_grid_is_refused_for_zonal_summaries_with_the_remedy(tools, demo_project, tmp_path):
    rotated = (500_000.0, 8.66, -5.0, 6_600_000.0, -5.0, -8.66)  # 30 degrees
    _write(tmp_path / "rotated.tif", np.ones((20, 20), np.float32), geotransform=rotated)
    _add(demo_project, tmp_path / "rotated.tif", "rotated")
    _zones(demo_project, "rot_zones", QgsRectangle(499_950, 6_599_850, 500_050, 6_599_950))
    layers_before = set(demo_project.mapLayers())
    with pytest.raises(ToolError, match=r"rotated grid.*gdal:warpreproject"):
        call_in_thread(tools.describe_layer, "rotated", "rot_zones")
    assert set(demo_project.mapLayers()) == layers_before


def test_figures_keep_seven_significant_digits_and_samples_echo_coordinates_in_full(tools, demo_project, tmp_path):
    values = (10_001 + np.arange(16, dtype=np.float64).reshape(4, 4) * 0.5).astype(np.float32)
    _write(tmp_path / "tall.tif", values)
    _add(demo_project, tmp_path / "tall.tif", "tall")
    figures = _figures(call_in_thread(tools.describe_layer, "tall").text)
    assert (figures["min"], figures["max"], figures["mean"]) == (10_001, 10_008.5, 10_004.75)

    sample = call_in_thread(tools.describe_layer, "tall", "500015 6599995; 500015 6599985").text
    assert "| 6599995 |" in sample and "| 6599985 |" in sample, sample  # 10 m apart, both readable
    assert "| 10001.5 |" in sample and "| 10003.5 |" in sample, sample


def test_zonal_class_counts_leave_out_pixels_hidden_by_the_mask(tools, demo_project, tmp_path):
    from qgis.core import QgsPalettedRasterRenderer
    from qgis.PyQt.QtGui import QColor

    classes = np.where(np.arange(100).reshape(10, 10) % 10 < 5, 2, 3).astype(np.uint8)  # west 2, east 3
    mask = np.full((10, 10), 255, np.uint8)
    mask[:, :5] = 0  # hides every class-2 pixel
    path = _write(tmp_path / "cover_masked.tif", classes, kind=gdal.GDT_Byte, mask=mask)
    layer = _add(demo_project, path, "cover_masked")
    palette = [QgsPalettedRasterRenderer.Class(v, QColor(40 * v, 90, 90), f"class {v}") for v in (2, 3)]
    layer.setRenderer(QgsPalettedRasterRenderer(layer.dataProvider(), 1, palette))
    _zones(demo_project, "mask_zones", QgsRectangle(500_000, 6_599_900, 500_100, 6_600_000))

    text = call_in_thread(tools.describe_layer, "cover_masked", "mask_zones").text
    line = next(row for row in text.splitlines() if row.startswith("| z |"))
    shown = classes[mask == 255]  # numpy: only class 3 is left, 50 pixels of 100 m2
    hectares = (shown == 3).sum() * 100 / 10_000
    assert f"3 class 3 100.0% {hectares:.4g} ha" in line and "class 2" not in line, line
