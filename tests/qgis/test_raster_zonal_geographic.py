"""Zonal class areas of a land-cover raster in a geographic CRS (EPSG:4326, around 60°N, where a degree of
longitude is half a degree of latitude), checked against an independent computation: each pixel whose centre
lies in the zone counts with its own geodesic area (pyproj.Geod on its four corners), numpy doing the sums.

The zones are chosen where a shortcut goes wrong: one spans two degrees of latitude with one class north and
one south (pixels there differ in area by 6 %), one reaches beyond the raster's edge, one holds nodata.
The pixels are twice as wide as tall (in degrees), where native:zonalhistogram counts twice as many (QGIS 3.22 to
3.44): so is a projected grid of 20 x 10 m pixels, whose classes it counts half of."""

from __future__ import annotations

import re

import numpy as np
import pytest
from osgeo import gdal, osr
from pyproj import Geod
from qgis.core import QgsFeature, QgsGeometry, QgsProject, QgsRasterLayer, QgsRectangle, QgsVectorLayer

from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

WEST, NORTH = 10.0, 61.0
DX, DY = 0.02, 0.01  # degrees: about 1.1 km by 1.1 km at 60°N
COLUMNS, ROWS = 100, 200  # 10°E to 12°E, 59°N to 61°N
NODATA = 255
LABELS = {1: "Forest", 2: "Water", 3: "Farmland"}
ZONES = {
    "tall": (10.205, 59.2025, 10.795, 60.7975),  # classes 1 north of 60°N, 2 south of it
    "edge": (11.505, 60.1025, 12.5, 60.4975),  # half of it east of the raster
    "holes": (10.905, 60.4025, 11.395, 60.8975),  # around the nodata block
}  # edges a quarter pixel from any pixel centre: which pixels count is never a tie


def _classes() -> np.ndarray:
    cover = np.where(np.arange(ROWS)[:, None] < ROWS // 2, 1, 2) * np.ones((1, COLUMNS), dtype=np.uint8)
    rng = np.random.default_rng(24)
    cover[rng.random((ROWS, COLUMNS)) < 0.15] = 3
    cover[20:40, 50:60] = NODATA
    return cover.astype(np.uint8)


@pytest.fixture
def geographic_cover(demo_project, tmp_path) -> np.ndarray:
    cover = _classes()
    path = tmp_path / "cover_wgs84.tif"
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), COLUMNS, ROWS, 1, gdal.GDT_Byte)
    dataset.SetGeoTransform((WEST, DX, 0.0, NORTH, 0.0, -DY))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(4326)
    dataset.SetProjection(srs.ExportToWkt())
    band = dataset.GetRasterBand(1)
    band.SetNoDataValue(NODATA)
    colours = gdal.ColorTable()
    for code, rgb in {1: (0, 120, 0), 2: (0, 0, 200), 3: (220, 200, 0)}.items():
        colours.SetColorEntry(code, rgb)
    band.SetColorTable(colours)  # before the pixels: GDAL 3.10 refuses it after
    band.WriteArray(cover)
    dataset = None
    raster = QgsRasterLayer(str(path), "cover_wgs84")
    assert raster.isValid() and raster.crs().isGeographic()
    zones = QgsVectorLayer("Polygon?crs=EPSG:4326&field=name:string", "zones_wgs84", "memory")
    rows = []
    for name, box in ZONES.items():
        feature = QgsFeature(zones.fields())
        feature.setAttributes([name])
        feature.setGeometry(QgsGeometry.fromRect(QgsRectangle(*box)))
        rows.append(feature)
    zones.dataProvider().addFeatures(rows)
    demo_project.addMapLayers([raster, zones])
    return cover


def _expected_areas(cover: np.ndarray) -> dict[str, dict[int, float]]:
    """Hectares of each class per zone: pixel centres in the zone, each pixel's geodesic area."""
    geod = Geod(ellps="WGS84")
    row_area = np.empty(ROWS)
    for row in range(ROWS):
        top, bottom = NORTH - row * DY, NORTH - (row + 1) * DY
        area, _perimeter = geod.polygon_area_perimeter([WEST, WEST + DX, WEST + DX, WEST], [bottom, bottom, top, top])
        row_area[row] = abs(area)
    weights = np.broadcast_to(row_area[:, None], cover.shape)
    expected: dict[str, dict[int, float]] = {}
    for name in ZONES:
        inside = _inside(name)
        expected[name] = {
            code: float(weights[inside & (cover == code)].sum()) / 10_000
            for code in LABELS
            if (inside & (cover == code)).any()
        }
    return expected


def _inside(zone: str) -> np.ndarray:
    """The pixels whose centre lies in the zone's box."""
    west, south, east, north = ZONES[zone]
    lon = WEST + (np.arange(COLUMNS) + 0.5) * DX
    lat = NORTH - (np.arange(ROWS) + 0.5) * DY
    return ((lat > south) & (lat < north))[:, None] & ((lon > west) & (lon < east))[None, :]


def _reported(text: str, zone: str) -> dict[int, tuple[float, float]]:
    """{code: (share %, hectares)} of one zone's row of the tool's table."""
    line = next(row for row in text.splitlines() if row.startswith(f"| {zone} |"))
    cell = line.strip().strip("|").split("|")[1]
    found = {}
    for part in cell.split(";"):
        match = re.fullmatch(r"\s*(\d+)(?: \S+)? ([\d.]+)% ([\d.e+]+) ha\s*", part)
        assert match, (zone, part)
        found[int(match.group(1))] = (float(match.group(2)), float(match.group(3)))
    return found


def test_class_areas_of_a_geographic_raster_are_geodesic(tool_ctx, geographic_cover):
    text = call_in_thread(ProjectTools(tool_ctx).describe_layer, "cover_wgs84", "zones_wgs84").text
    assert text.startswith("native:zonalhistogram finished."), text
    assert "geographic raster" in text and "area of each pixel, ellipsoidal on WGS 84" in text, text
    expected = _expected_areas(geographic_cover)
    for zone, areas in expected.items():
        reported = _reported(text, zone)
        assert set(reported) == set(areas), (zone, reported, areas)
        for code, hectares in areas.items():
            assert reported[code][1] == pytest.approx(hectares, rel=2e-3), (zone, code, reported[code], hectares)
    # The shares stay shares of the zone's pixels (counts), as the table's header says.
    tall = _reported(text, "tall")
    inside = _inside("tall")
    counts = {code: int((inside & (geographic_cover == code)).sum()) for code in LABELS}
    for code, count in counts.items():
        assert tall[code][0] == pytest.approx(100 * count / sum(counts.values()), abs=0.06)
    assert QgsProject.instance().mapLayersByName("zones_wgs84_cover_wgs84_zonal")


def test_class_counts_of_a_projected_grid_with_oblong_pixels(tool_ctx, demo_project, tmp_path):
    """20 x 10 m pixels: native:zonalhistogram counts half of them (3.22 to 3.44); the table counts them all."""
    path = tmp_path / "oblong.tif"
    cover = _classes()[:100]
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), COLUMNS, 100, 1, gdal.GDT_Byte)
    dataset.SetGeoTransform((560_000.0, 20.0, 0.0, 6_206_000.0, 0.0, -10.0))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    dataset.SetProjection(srs.ExportToWkt())
    band = dataset.GetRasterBand(1)
    band.SetNoDataValue(NODATA)
    colours = gdal.ColorTable()
    for code in LABELS:
        colours.SetColorEntry(code, (40 * code, 80, 120))
    band.SetColorTable(colours)
    band.WriteArray(cover)
    dataset = None
    zones = QgsVectorLayer("Polygon?crs=EPSG:25832&field=name:string", "oblong_zones", "memory")
    zone = QgsFeature(zones.fields())
    zone.setAttributes(["block"])
    zone.setGeometry(QgsGeometry.fromRect(QgsRectangle(560_205.0, 6_205_402.5, 561_195.0, 6_205_897.5)))
    zones.dataProvider().addFeatures([zone])
    demo_project.addMapLayers([QgsRasterLayer(str(path), "oblong"), zones])
    text = call_in_thread(ProjectTools(tool_ctx).describe_layer, "oblong", "oblong_zones").text
    assert "(areas from pixel counts x 200 m2, planar in EPSG:" in text, text
    # Pixel centres in the box: columns 10-59 (x 560,210-561,190), rows 10-59 (y 6,205,895-6,205,405).
    inside = np.zeros(cover.shape, dtype=bool)
    inside[10:60, 10:60] = True
    reported = _reported(text, "block")
    for code in LABELS:
        count = int((inside & (cover == code)).sum())
        if not count:
            assert code not in reported
            continue
        assert reported[code][1] == pytest.approx(count * 200 / 10_000, rel=1e-3), (code, reported, count)
    valid = int((inside & (cover != NODATA)).sum())
    assert sum(hectares for _share, hectares in reported.values()) == pytest.approx(valid * 200 / 10_000, rel=1e-3)
