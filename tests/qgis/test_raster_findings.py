"""Conflicting georeferencings and pixel-is-point, found with raw GDAL (tools/raster_findings, no QGIS).

In tests/qgis, not tests/unit, for GDAL's Python bindings alone: they come with QGIS's system packages, not
from requirements-dev.txt (tests/unit passes on a fresh clone with only that installed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from osgeo import gdal, osr

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.raster_findings import raster_notes

gdal.UseExceptions()


def _tif(path: Path, transform: tuple[float, ...] | None, point: bool = False) -> str:
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), 40, 30, 1, gdal.GDT_Byte)
    if transform:
        dataset.SetGeoTransform(transform)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    dataset.SetProjection(srs.ExportToWkt())
    if point:
        dataset.SetMetadataItem("AREA_OR_POINT", "Point")
    dataset.GetRasterBand(1).WriteArray(np.ones((30, 40), np.uint8))
    dataset = None
    return str(path)


def test_a_sidecar_that_overrides_the_files_own_georeferencing_is_named(tmp_path):
    path = _tif(tmp_path / "ortho.tif", (500000, 10, 0, 5500000, 0, -10))
    assert raster_notes(path, CancelToken()) == []
    Path(path + ".aux.xml").write_text(
        "<PAMDataset><GeoTransform>500000, 20, 0, 5500000, 0, -20</GeoTransform></PAMDataset>"
    )
    assert gdal.Open(path).GetGeoTransform()[1] == 20  # GDAL takes the sidecar's, silently
    (note,) = raster_notes(path, CancelToken())
    assert "the file's own: 10 x 10 pixels from 500000, 5500000" in note
    assert "its sidecar ortho.tif.aux.xml: 20 x 20 pixels" in note
    assert "GDAL and QGIS use its sidecar ortho.tif.aux.xml" in note


def test_a_world_file_is_compared_with_the_files_own(tmp_path):
    path = _tif(tmp_path / "ortho.tif", (500000, 10, 0, 5500000, 0, -10))
    world = tmp_path / "ortho.tfw"
    world.write_text("10\n0\n0\n-10\n500005\n5499995\n")  # the same grid (a world file names the first centre)
    assert raster_notes(path, CancelToken()) == []
    world.write_text("20\n0\n0\n-20\n500010\n5499990\n")
    (note,) = raster_notes(path, CancelToken())
    assert "its world file ortho.tfw: 20 x 20 pixels from 500000, 5500000" in note
    assert "GDAL and QGIS use the file's own" in note


def test_pixel_is_point_is_said(tmp_path):
    (note,) = raster_notes(_tif(tmp_path / "dem.tif", (500000, 10, 0, 5500000, 0, -10), point=True), CancelToken())
    assert note.startswith("Pixel-is-point (AREA_OR_POINT=Point)")
