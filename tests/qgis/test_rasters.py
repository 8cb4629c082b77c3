"""describe_layer on rasters (issue 24): every figure checked against GDAL's arrays and numpy, not the tool's code."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr
from qgis.core import QgsRasterLayer

from geogpt_qgis.tools.project.family import ProjectTools
from geogpt_qgis.tools.rasters import EXACT_PIXELS
from tests.support.runs import call_in_thread


@pytest.fixture
def tools(tool_ctx) -> ProjectTools:
    return ProjectTools(tool_ctx)


def _array(demo_project, name: str) -> tuple[np.ndarray, float]:
    layer = demo_project.mapLayersByName(name)[0]
    dataset = gdal.Open(layer.source())  # kept while the band is read: GDAL frees a band with its dataset
    band = dataset.GetRasterBand(1)
    return band.ReadAsArray(), band.GetNoDataValue()


def _figures(text: str) -> dict[str, float]:
    return {key: float(value) for key, value in re.findall(r"\b(min|max|mean|std) (-?[\d.e+]+)", text)}


def test_the_demo_dem_is_described_with_exact_statistics_and_units(tools, demo_project):
    text = call_in_thread(tools.describe_layer, "elevation").text
    dem, nodata = _array(demo_project, "elevation")
    valid = dem[dem != nodata].astype(np.float64)
    figures = _figures(text)
    for key, expected in (("min", valid.min()), ("max", valid.max()), ("mean", valid.mean()), ("std", valid.std())):
        assert figures[key] == pytest.approx(expected, rel=1e-3), (key, text)
    assert "Layer 'elevation'" in text and ": raster, hidden" in text
    assert "Size: 800 x 600 pixels, 1 band; pixel 10 x 10 m" in text
    assert "CRS: EPSG:25832 (ETRS89 / UTM zone 32N), units: meters, projected" in text
    assert "Band 1 (Float32, nodata -9999)" in text
    share = 100 * (dem == nodata).mean()
    assert f"; {share:.2g}% nodata" in text
    assert f"Statistics: exact, from all {dem.size:,} pixels." in text
    assert len(text) < 600  # compact: the model pays for every character


def test_land_cover_classes_have_their_labels_and_area_shares(tools, demo_project):
    text = call_in_thread(tools.describe_layer, "landcover").text
    cover, _ = _array(demo_project, "landcover")
    codes, counts = np.unique(cover[cover != 0], return_counts=True)
    assert f"categorical, {len(codes)} classes" in text
    labels = {1: "Water", 2: "Grass", 3: "Forest", 4: "Farmland", 5: "Residential", 6: "Commercial", 7: "Industrial"}
    for code, count in zip(codes.tolist(), counts.tolist(), strict=True):
        assert f"{code} {labels[code]!r} {100 * count / counts.sum():.1f}%" in text
    shares = re.findall(r"(\d+) '\w+' ([\d.]+)%", text)
    assert [float(b) for _, b in shares] == sorted((float(b) for _, b in shares), reverse=True)  # largest first


def _write(path: Path, array: np.ndarray, epsg: int, pixel: float, **extra) -> Path:
    kinds = {np.dtype("uint8"): gdal.GDT_Byte, np.dtype("int16"): gdal.GDT_Int16, np.dtype("float32"): gdal.GDT_Float32}
    options = ["TILED=YES", "COMPRESS=DEFLATE"] if extra.get("tiled") else []
    dataset = gdal.GetDriverByName("GTiff").Create(
        str(path), array.shape[1], array.shape[0], 1, kinds[array.dtype], options=options
    )
    dataset.SetGeoTransform((10.0, pixel, 0.0, 60.0, 0.0, -pixel))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    dataset.SetProjection(srs.ExportToWkt())
    band = dataset.GetRasterBand(1)
    if "nodata" in extra:
        band.SetNoDataValue(extra["nodata"])
    if "names" in extra:
        band.SetCategoryNames(extra["names"])
    if "scale" in extra:
        band.SetScale(extra["scale"])
        band.SetOffset(extra["offset"])
    band.WriteArray(array)
    dataset = None
    return path


def test_a_large_raster_is_approximate_and_says_so(tools, demo_project, tmp_path):
    side = int(EXACT_PIXELS**0.5) + 1000  # 15 x 15 blocks of 256 x 256: some are skipped
    rows = np.arange(side, dtype=np.float32)[:, None]
    surface = (rows * 0.5 + np.arange(side, dtype=np.float32)[None, :] * 0.25).astype(np.float32)
    path = _write(tmp_path / "big.tif", surface, 25832, 1.0, tiled=True)
    demo_project.addMapLayer(QgsRasterLayer(str(path), "big"))
    text = call_in_thread(tools.describe_layer, "big").text
    match = re.search(r"Statistics: approximate, from ([\d,]+) of the ([\d,]+) pixels", text)
    assert match, text
    assert int(match.group(2).replace(",", "")) == side * side
    assert 500_000 <= int(match.group(1).replace(",", "")) < side * side
    figures = _figures(text)
    assert figures["mean"] == pytest.approx(float(surface.astype(np.float64).mean()), rel=0.05)
    assert surface.min() <= figures["min"] and figures["max"] <= surface.max()


def test_geographic_pixels_are_in_degrees_and_gdal_category_names_label_classes(tools, demo_project, tmp_path):
    codes = np.array([[1, 1, 2, 0], [2, 2, 2, 0]], dtype=np.uint8)
    path = _write(tmp_path / "wgs.tif", codes, 4326, 0.001, nodata=0, names=["", "Lake", "Meadow"])
    demo_project.addMapLayer(QgsRasterLayer(str(path), "wgs"))
    text = call_in_thread(tools.describe_layer, "wgs").text
    assert "pixel 0.001 x 0.001 deg" in text, text
    assert "geographic" in text
    assert "categorical, 2 classes; 25% nodata; share of valid pixels: 2 'Meadow' 66.7%, 1 'Lake' 33.3%" in text


def test_a_scaled_raster_is_described_and_sampled_in_the_units_qgis_shows(tools, demo_project, tmp_path):
    """Int16 decimetres with scale 0.1 and offset 5: QGIS shows stored x 0.1 + 5, and so must every figure."""
    from qgis.core import QgsPointXY, QgsRaster

    rng = np.random.default_rng(7)
    stored = rng.integers(1, 30000, size=(40, 50)).astype(np.int16)
    stored[:5, :] = -1  # nodata, in stored units
    path = _write(tmp_path / "dm.tif", stored, 25832, 10.0, nodata=-1, scale=0.1, offset=5.0)
    layer = QgsRasterLayer(str(path), "dm")
    demo_project.addMapLayer(layer)
    shown = stored[stored != -1].astype(np.float64) * 0.1 + 5.0
    text = call_in_thread(tools.describe_layer, "dm").text
    figures = _figures(text)
    for key, expected in (("min", shown.min()), ("max", shown.max()), ("mean", shown.mean()), ("std", shown.std())):
        assert figures[key] == pytest.approx(expected, rel=1e-3), (key, text)
    statistics = layer.dataProvider().bandStatistics(1)  # QGIS's own figures, read through its provider
    assert figures["min"] == pytest.approx(statistics.minimumValue, rel=1e-3)
    assert figures["max"] == pytest.approx(statistics.maximumValue, rel=1e-3)
    assert "values shown as stored × 0.1 + 5" in text and f"; {100 * 5 / 40:.2g}% nodata" in text
    # Sampling: the pixel at row 20, column 30 (centre x 10 + 305 m, y 60 - 205 m), and one in the nodata rows.
    x, y = 10.0 + 305.0, 60.0 - 205.0
    sample = call_in_thread(tools.describe_layer, "dm", f"{x} {y}; 15 55").text
    identified = layer.dataProvider().identify(QgsPointXY(x, y), QgsRaster.IdentifyFormat.IdentifyFormatValue)
    expected = stored[20, 30] * 0.1 + 5.0
    assert identified.results()[1] == pytest.approx(expected, rel=1e-6)
    assert f"| {expected:.7g} |" in sample, sample
    assert "nodata (no value here)" in sample, sample


def test_a_raster_passed_where_a_vector_is_needed_is_refused_plainly(tools, demo_project):
    from geogpt_qgis.tools.base import ToolError

    with pytest.raises(ToolError, match="'elevation' is a raster layer; this needs a vector layer"):
        call_in_thread(tools.read_features, "elevation")


def _pixel(array: np.ndarray, x: float, y: float) -> float:
    """The demo grid: origin (560000, 6206000), 10 m pixels, rows from the north."""
    return array[int((6_206_000 - y) // 10), int((x - 560_000) // 10)].item()


def test_sample_at_a_point_layer_gives_each_feature_its_value(tools, demo_project):
    text = call_in_thread(tools.describe_layer, "elevation", "hospitals").text
    dem, _ = _array(demo_project, "elevation")
    hospitals = demo_project.mapLayersByName("hospitals")[0]
    assert text.startswith("Values of 'elevation' at 4 points (features of 'hospitals'):")
    for feature in hospitals.getFeatures():
        point = feature.geometry().asPoint()
        assert (
            f"| {feature['name']} | {point.x():.10g} | {point.y():.10g} | {_pixel(dem, point.x(), point.y()):.7g} |"
            in (text)
        )


def test_sample_coordinates_in_another_crs_with_nodata_outside_and_class_labels(tools, demo_project):
    from qgis.core import QgsCoordinateReferenceSystem, QgsCoordinateTransform, QgsPointXY, QgsProject

    cover, _ = _array(demo_project, "landcover")
    dem, _ = _array(demo_project, "elevation")
    to_wgs84 = QgsCoordinateTransform(
        QgsCoordinateReferenceSystem("EPSG:25832"), QgsCoordinateReferenceSystem("EPSG:4326"), QgsProject.instance()
    )
    inside = to_wgs84.transform(QgsPointXY(563_005, 6_202_905))
    at = f"EPSG:4326 {inside.x():.8f} {inside.y():.8f}; 0 0"
    text = call_in_thread(tools.describe_layer, "landcover", at).text
    code = _pixel(cover, 563_005, 6_202_905)
    labels = {1: "Water", 2: "Grass", 3: "Forest", 4: "Farmland", 5: "Residential", 6: "Commercial", 7: "Industrial"}
    assert f"| point 1 | {inside.x():.10g} | {inside.y():.10g} | {code} {labels[code]} |" in text
    assert "| point 2 | 0 | 0 | outside the raster |" in text
    corner = call_in_thread(tools.describe_layer, "elevation", "567990,6205990").text  # the unsurveyed corner
    assert dem[0, -1] == -9999 and "| nodata (no value here) |" in corner


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("schools", "563000 6202000"), "layer 'schools' is a vector layer; this needs a raster layer"),
        (("elevation", "landcover"), "layer 'landcover' is a raster layer; this needs a vector layer"),
        (("elevation", "EPSG:999999 1 2"), "unknown CRS 'EPSG:999999'"),
        (("elevation", "roads"), "more than 50 points; sample at most 50"),
    ],
)
def test_sampling_mistakes_are_explained(tools, demo_project, args, message):
    from geogpt_qgis.tools.base import ToolError

    with pytest.raises(ToolError, match=re.escape(message)):
        call_in_thread(tools.describe_layer, *args)


def _district_masks(demo_project, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Each district's pixels (centre inside), by GDAL's rasterizer over the GeoPackage: independent of QGIS."""
    from osgeo import ogr

    gpkg = Path(demo_project.fileName()).with_name("elvbury.gpkg")
    source = ogr.Open(str(gpkg))
    layer = source.GetLayerByName("districts")
    names = [feature.GetField("name") for feature in layer]
    masks = {}
    for name in names:
        target = gdal.GetDriverByName("MEM").Create("", shape[1], shape[0], 1, gdal.GDT_Byte)
        target.SetGeoTransform((560_000.0, 10.0, 0.0, 6_206_000.0, 0.0, -10.0))
        layer.SetAttributeFilter(f"name = '{name}'")
        gdal.RasterizeLayer(target, [1], layer, burn_values=[1])
        masks[name] = target.GetRasterBand(1).ReadAsArray() == 1
    return masks


def test_zonal_means_per_district_match_numpy_and_the_result_layer_is_added(tools, demo_project):
    text = call_in_thread(tools.describe_layer, "elevation", "districts").text
    dem, nodata = _array(demo_project, "elevation")
    rows = {line.split(" | ")[0].strip("| "): line.strip("|").split("|") for line in text.splitlines()[4:]}
    assert text.startswith("native:zonalstatisticsfb finished.")
    for name, mask in _district_masks(demo_project, dem.shape).items():
        values = dem[mask & (dem != nodata)].astype(np.float64)
        cells = [cell.strip() for cell in rows[name]]
        assert abs(int(cells[1]) - values.size) <= 0.002 * values.size, (name, cells)
        assert float(cells[2]) == pytest.approx(values.mean(), rel=2e-3), (name, cells)
        assert float(cells[4]) == pytest.approx(values.max(), abs=0.05)
    added = demo_project.mapLayersByName("districts_elevation_zonal")
    assert len(added) == 1 and {"z_mean", "z_count"} <= set(added[0].fields().names())


def test_land_cover_shares_per_district_with_labels_and_hectares(tools, demo_project):
    text = call_in_thread(tools.describe_layer, "landcover", "districts").text
    cover, _ = _array(demo_project, "landcover")
    labels = {1: "Water", 2: "Grass", 3: "Forest", 4: "Farmland", 5: "Residential", 6: "Commercial", 7: "Industrial"}
    assert "(areas from pixel counts x 100 m2, planar in EPSG:" in text
    for name, mask in _district_masks(demo_project, cover.shape).items():
        line = next(row for row in text.splitlines() if row.startswith(f"| {name} |"))
        codes, counts = np.unique(cover[mask], return_counts=True)
        top = int(codes[counts.argmax()])
        share = 100 * counts.max() / counts.sum()
        match = re.search(rf"\| {top} {labels[top]} ([\d.]+)% ([\d.]+) ha", line)
        assert match, (name, line)
        assert float(match.group(1)) == pytest.approx(share, abs=0.15)
        assert float(match.group(2)) == pytest.approx(counts.max() * 100 / 10_000, rel=0.01)


def test_scaled_class_codes_per_district_are_the_codes_qgis_shows(tools, demo_project, tmp_path):
    """Land cover stored as 1..7 with scale 2 and offset 10: QGIS (and its palette) sees classes 12..24."""
    from qgis.core import QgsPalettedRasterRenderer
    from qgis.PyQt.QtGui import QColor

    source = demo_project.mapLayersByName("landcover")[0].source()
    copy = gdal.Translate(str(tmp_path / "cover_scaled.tif"), source)
    copy.GetRasterBand(1).SetScale(2.0)
    copy.GetRasterBand(1).SetOffset(10.0)
    copy = None
    layer = QgsRasterLayer(str(tmp_path / "cover_scaled.tif"), "cover_scaled")
    names = {1: "Water", 2: "Grass", 3: "Forest", 4: "Farmland", 5: "Residential", 6: "Commercial", 7: "Industrial"}
    classes = [QgsPalettedRasterRenderer.Class(2.0 * c + 10, QColor(30 * c, 90, 90), n) for c, n in names.items()]
    layer.setRenderer(QgsPalettedRasterRenderer(layer.dataProvider(), 1, classes))
    demo_project.addMapLayer(layer)
    text = call_in_thread(tools.describe_layer, "cover_scaled", "districts").text
    cover, nodata = _array(demo_project, "landcover")
    for name, mask in _district_masks(demo_project, cover.shape).items():
        line = next(row for row in text.splitlines() if row.startswith(f"| {name} |"))
        valid = cover[mask] if nodata is None else cover[mask & (cover != nodata)]
        codes, counts = np.unique(valid, return_counts=True)
        top = int(codes[counts.argmax()])
        match = re.search(rf"\| {2 * top + 10} {names[top]} ([\d.]+)% ([\d.]+) ha", line)
        assert match, (name, line)
        assert float(match.group(1)) == pytest.approx(100 * counts.max() / counts.sum(), abs=0.15)
    (added,) = demo_project.mapLayersByName("districts_cover_scaled_zonal")
    fields = {n for n in added.fields().names() if n.startswith("px_")}
    assert fields and all(int(n[3:]) in {2 * c + 10 for c in names} for n in fields if n[3:].isdigit()), fields


def test_zones_in_another_crs_are_reprojected_not_misread(tools, demo_project):
    import processing

    reprojected = processing.run(
        "native:reprojectlayer", {"INPUT": "districts", "TARGET_CRS": "EPSG:4326", "OUTPUT": "memory:"}
    )["OUTPUT"]
    reprojected.setName("districts_wgs84")
    demo_project.addMapLayer(reprojected)
    text = call_in_thread(tools.describe_layer, "elevation", "districts_wgs84").text
    dem, nodata = _array(demo_project, "elevation")
    mask = _district_masks(demo_project, dem.shape)["Hillcrest"]
    line = next(row for row in text.splitlines() if row.startswith("| Hillcrest |"))
    mean = float(line.strip("|").split("|")[2])
    assert mean == pytest.approx(dem[mask & (dem != nodata)].astype(np.float64).mean(), rel=0.01)
