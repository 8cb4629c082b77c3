"""Zonal statistics of a continuous raster (describe_layer(raster, at=zones)), every figure checked against numpy.

The reference is independent of QGIS: the pixels whose centre lies in the zone (pixel centres transformed to
the zones' CRS with pyproj, shapely's point-in-polygon there), nodata left out, numpy doing the arithmetic.
The grids are those where a shortcut goes wrong: pixels twice as wide as tall (20 x 10 m) and twice as tall as
wide in degrees (0.02 x 0.01 degree at 60 N, where native:zonalhistogram miscounts), zones beyond the raster's
edge, around nodata, oblique edges, zones in another CRS than the raster. native:zonalstatisticsfb was exact on
all of them on QGIS 3.22.16, 3.40.6 and 3.44.15; these tests keep it so. Zone edges stay a quarter pixel from
any pixel centre (a few millimetres of reprojection never decide which pixels count).
"""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from osgeo import gdal, osr
from pyproj import Transformer
from qgis.core import QgsCoordinateReferenceSystem, QgsFeature, QgsGeometry, QgsRasterLayer, QgsVectorLayer

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

NODATA = -9999
ROWS, COLUMNS = 100, 100
PROJECTED = (560_000.0, 20.0, 0.0, 6_206_000.0, 0.0, -10.0)  # EPSG:25832, 20 x 10 m pixels
GEOGRAPHIC = (10.0, 0.02, 0.0, 61.0, 0.0, -0.01)  # EPSG:4326, 0.02 x 0.01 degree pixels


def _values(integer: bool) -> np.ndarray:
    rng = np.random.default_rng(24)
    values = rng.integers(0, 12, (ROWS, COLUMNS)).astype(np.float64)
    if not integer:
        values += rng.random((ROWS, COLUMNS)) * 0.5 + np.arange(ROWS)[:, None] * 0.25
    values[20:40, 50:60] = NODATA
    return values


def _raster(tmp_path, name: str, epsg: int, geotransform: tuple[float, ...], values: np.ndarray, kind: int) -> str:
    path = tmp_path / f"{name}.tif"
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), COLUMNS, ROWS, 1, kind)
    dataset.SetGeoTransform(geotransform)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    dataset.SetProjection(srs.ExportToWkt())
    band = dataset.GetRasterBand(1)
    band.SetNoDataValue(NODATA)
    band.WriteArray(values)
    dataset = None
    return str(path)


def _zones(geotransform: tuple[float, ...]) -> dict[str, shapely.Geometry]:
    """Zones in the raster's CRS, from pixel coordinates (column, row)."""
    west, dx, _, north, _, dy = geotransform

    def at(column: float, row: float) -> tuple[float, float]:
        return west + column * dx, north + row * dy

    def box(c0: int, r0: int, c1: int, r1: int) -> shapely.Geometry:  # pixels c0..c1 x r0..r1, quarter-pixel margin
        (x0, y0), (x1, y1) = at(c0 + 0.25, r0 + 0.25), at(c1 + 0.75, r1 + 0.75)
        return shapely.box(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))

    return {
        "inner": box(10, 10, 40, 30),
        "edge": box(80, 5, 130, 25),  # more than half of it east of the raster
        "holes": box(45, 15, 70, 45),  # around the nodata block
        "slanted": shapely.Polygon([at(5.3, 60.2), at(45.1, 62.7), at(20.6, 95.4)]),
        "pair": box(70, 70, 71, 70),  # two pixels: a tie for the majority
    }


def _layer(name: str, epsg: int | None, zones: dict[str, shapely.Geometry]) -> QgsVectorLayer:
    crs = f"crs=EPSG:{epsg}&" if epsg else ""
    layer = QgsVectorLayer(f"Polygon?{crs}field=name:string", name, "memory")
    features = []
    for zone, geometry in zones.items():
        feature = QgsFeature(layer.fields())
        feature.setAttributes([zone])
        feature.setGeometry(QgsGeometry.fromWkt(geometry.wkt))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def _in(zones: dict[str, shapely.Geometry], source: int, target: int, step: float) -> dict[str, shapely.Geometry]:
    """The zones drawn in another CRS (densified first, so their edges stay where they were)."""
    transformer = Transformer.from_crs(source, target, always_xy=True)

    def move(coords: np.ndarray) -> np.ndarray:
        return np.column_stack(transformer.transform(coords[:, 0], coords[:, 1]))

    return {name: shapely.transform(shapely.segmentize(zone, step), move) for name, zone in zones.items()}


def _expected(values, geotransform, raster_epsg, zone, zone_epsg) -> dict[str, float]:
    west, dx, _, north, _, dy = geotransform
    x, y = np.meshgrid(west + (np.arange(COLUMNS) + 0.5) * dx, north + (np.arange(ROWS) + 0.5) * dy)
    if zone_epsg != raster_epsg:
        x, y = Transformer.from_crs(raster_epsg, zone_epsg, always_xy=True).transform(x, y)
    inside = shapely.contains_xy(zone, x, y) & (values != NODATA)
    chosen = values[inside]
    codes, counts = np.unique(chosen, return_counts=True)
    return {
        "pixels": chosen.size,
        "mean": chosen.mean(),
        "min": chosen.min(),
        "max": chosen.max(),
        "std": chosen.std(),
        "majority": codes[counts.argmax()],  # the smallest of the most frequent values
    }


def _rows(text: str) -> dict[str, dict[str, str]]:
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    headers = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:]]
    return {row[0]: dict(zip(headers, row, strict=True)) for row in rows}


def _check(text: str, values, geotransform, raster_epsg, zones, zone_epsg, keys) -> None:
    rows = _rows(text)
    assert set(rows) == set(zones), text
    for name, zone in zones.items():
        expected = _expected(values, geotransform, raster_epsg, zone, zone_epsg)
        row = rows[name]
        assert int(row["pixels"]) == expected["pixels"], (name, row, expected)
        for key in keys:
            assert float(row[key]) == pytest.approx(expected[key], rel=2e-5, abs=1e-4), (name, key, row, expected)


def test_integer_raster_with_oblong_pixels_and_zones_in_two_crss(tool_ctx, demo_project, tmp_path):
    values = _values(integer=True)
    path = _raster(tmp_path, "counts", 25832, PROJECTED, values, gdal.GDT_Int16)
    zones = _zones(PROJECTED)
    drawn_in_wgs84 = _in(zones, 25832, 4326, 5.0)
    demo_project.addMapLayers(
        [QgsRasterLayer(path, "counts"), _layer("plots", 25832, zones), _layer("plots_wgs84", 4326, drawn_in_wgs84)]
    )
    tools = ProjectTools(tool_ctx)
    text = call_in_thread(tools.describe_layer, "counts", "plots").text
    assert text.startswith("native:zonalstatisticsfb finished."), text
    assert "\nPixels counted: those whose centre is in the zone, nodata left out." in text
    assert "| zone | pixels | mean | min | max | std | majority |" in text
    keys = ("mean", "min", "max", "std", "majority")
    _check(text, values, PROJECTED, 25832, zones, 25832, keys)
    assert _rows(text)["pair"]["majority"] == str(int(min(values[70, 70], values[70, 71])))
    assert "*" not in text  # every zone holds two pixel centres or more
    assert "'counts' within 'plots' (pixels of 200 m2):" in text, text
    assert "reprojected" not in text
    text = call_in_thread(tools.describe_layer, "counts", "plots_wgs84").text
    assert "; zones reprojected from EPSG:4326 to the raster's EPSG:25832):" in text, text
    _check(text, values, PROJECTED, 25832, drawn_in_wgs84, 4326, keys)
    added = demo_project.mapLayersByName("plots_counts_zonal")
    assert len(added) == 1
    assert {"z_count", "z_mean", "z_min", "z_max", "z_stdev", "z_majority"} <= set(added[0].fields().names())


def test_geographic_float_raster_with_zones_in_its_crs_and_a_projected_one(tool_ctx, demo_project, tmp_path):
    values = _values(integer=False)
    path = _raster(tmp_path, "heat", 4326, GEOGRAPHIC, values, gdal.GDT_Float64)
    zones = _zones(GEOGRAPHIC)
    drawn_in_utm = _in(zones, 4326, 25832, 0.001)
    demo_project.addMapLayers(
        [QgsRasterLayer(path, "heat"), _layer("cells", 4326, zones), _layer("cells_utm", 25832, drawn_in_utm)]
    )
    tools = ProjectTools(tool_ctx)
    keys = ("mean", "min", "max", "std")
    text = call_in_thread(tools.describe_layer, "heat", "cells").text
    assert "'heat' within 'cells' (geographic raster):" in text, text
    assert "| zone | pixels | mean | min | max | std |" in text and "majority" not in text  # a float band
    _check(text, values, GEOGRAPHIC, 4326, zones, 4326, keys)
    _check(
        call_in_thread(tools.describe_layer, "heat", "cells_utm").text,
        values,
        GEOGRAPHIC,
        4326,
        drawn_in_utm,
        25832,
        keys,
    )


def test_a_zone_with_at_most_one_pixel_centre_is_weighted_by_overlap_and_said_so(tool_ctx, demo_project, tmp_path):
    """QGIS's own rule for small zones, kept: each pixel the zone overlaps counts by the share of it covered."""
    values = _values(integer=False)
    path = _raster(tmp_path, "fine", 25832, PROJECTED, values, gdal.GDT_Float64)
    west, dx, _, north, _, dy = PROJECTED
    small = {
        "speck": shapely.box(west + 3.1 * dx, north + 3.4 * dy, west + 3.4 * dx, north + 3.1 * dy),  # no centre
        "one": shapely.box(west + 59.6 * dx, north + 85.8 * dy, west + 61.2 * dx, north + 84.7 * dy),  # 1 centre
    }
    demo_project.addMapLayers([QgsRasterLayer(path, "fine"), _layer("specks", 25832, small)])
    text = call_in_thread(ProjectTools(tool_ctx).describe_layer, "fine", "specks").text
    assert "* a zone holding at most one pixel centre: every pixel it overlaps, weighted by the share" in text, text
    rows = _rows(text)
    for name, zone in small.items():
        shares, weighted, touched = 0.0, 0.0, []
        for row in range(ROWS):
            for column in range(COLUMNS):
                pixel = shapely.box(
                    west + column * dx, north + (row + 1) * dy, west + (column + 1) * dx, north + row * dy
                )
                share = zone.intersection(pixel).area / pixel.area if zone.intersects(pixel) else 0.0
                if share > 1e-9 and values[row, column] != NODATA:
                    shares += share
                    weighted += share * values[row, column]
                    touched.append(values[row, column])
        row = rows[name]
        assert row["pixels"].endswith("*") and float(row["pixels"][:-1]) == pytest.approx(shares, rel=1e-5), row
        assert float(row["mean"]) == pytest.approx(weighted / shares, rel=1e-5), (name, row)
        assert float(row["min"]) == pytest.approx(min(touched), rel=1e-5)
        assert float(row["max"]) == pytest.approx(max(touched), rel=1e-5)


def test_the_class_count_fields_of_the_result_layer_are_the_pixels_counted(tool_ctx, demo_project, tmp_path):
    """native:zonalhistogram counts about half the pixels of a 20 x 10 m grid; the layer's px_ fields are rewritten."""
    rng = np.random.default_rng(7)
    cover = rng.choice(np.array([1, 2, 5]), size=(ROWS, COLUMNS), p=[0.6, 0.3, 0.1]).astype(np.uint8)
    cover[:, 95:] = 9  # a class only the "edge" zone reaches
    cover[20:40, 50:60] = 255
    path = tmp_path / "classes.tif"
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), COLUMNS, ROWS, 1, gdal.GDT_Byte)
    dataset.SetGeoTransform(PROJECTED)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    dataset.SetProjection(srs.ExportToWkt())
    band = dataset.GetRasterBand(1)
    band.SetNoDataValue(255)
    colours = gdal.ColorTable()
    for code in (1, 2, 5, 9):
        colours.SetColorEntry(code, (20 * code, 90, 160))
    band.SetColorTable(colours)  # before the pixels: GDAL 3.10 refuses it after
    band.WriteArray(cover)
    dataset = None
    zones = _zones(PROJECTED)
    demo_project.addMapLayers([QgsRasterLayer(str(path), "classes"), _layer("fields", 25832, zones)])
    text = call_in_thread(ProjectTools(tool_ctx).describe_layer, "classes", "fields").text
    assert text.startswith("native:zonalhistogram finished."), text
    assert "\nPixels counted: those whose centre is in the zone, nodata left out." in text
    layer = demo_project.mapLayersByName("fields_classes_zonal")[0]
    west, dx, _, north, _, dy = PROJECTED
    x, y = np.meshgrid(west + (np.arange(COLUMNS) + 0.5) * dx, north + (np.arange(ROWS) + 0.5) * dy)
    checked = 0
    for feature in layer.getFeatures():
        inside = shapely.contains_xy(zones[feature["name"]], x, y)
        for code, name in ((1, "px_1"), (2, "px_2"), (5, "px_5"), (9, "px_9"), (255, "px_NODATA")):
            assert feature[name] == int((inside & (cover == code)).sum()), (feature["name"], name, feature[name])
            checked += 1
    assert checked == 5 * len(zones)
    assert int((shapely.contains_xy(zones["edge"], x, y) & (cover == 9)).sum()) > 0  # the class the edge reaches


def test_zones_without_a_crs_are_refused_before_anything_runs(tool_ctx, demo_project, tmp_path):
    values = _values(integer=True)
    path = _raster(tmp_path, "plain", 25832, PROJECTED, values, gdal.GDT_Int16)
    unknown = _layer("no_crs", None, _zones(PROJECTED))
    unknown.setCrs(QgsCoordinateReferenceSystem())  # a memory layer starts in EPSG:4326
    assert not unknown.crs().isValid()
    demo_project.addMapLayers([QgsRasterLayer(path, "plain"), unknown])
    before = set(demo_project.mapLayers())
    with pytest.raises(ToolError, match=r"the zones layer has no CRS.*native:assignprojection"):
        call_in_thread(ProjectTools(tool_ctx).describe_layer, "plain", "no_crs")
    assert set(demo_project.mapLayers()) == before
