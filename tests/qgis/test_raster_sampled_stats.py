"""describe_layer above the exact size (issue 34): statistics from a sample of real pixels, said to be approximate.

Each raster is written chunk by chunk with GDAL, and the expected figures are
numpy's over every pixel written (the file is lossless: the same values GDAL
reads back), never the tool's code.  A sample's mean must be within a stated
tolerance of the full mean, its extremes inside the full ones, and every class
it names must occur in the data: a sample may miss a rare class (and says so),
never invent one.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr
from qgis.core import QgsRasterLayer

from geogpt_qgis.tools.project.family import ProjectTools
from geogpt_qgis.tools.raster_scan import EXACT_PIXELS, plan_windows
from tests.support.runs import call_in_thread

SIDE = 6_000  # 36 M pixels: over four times the exact limit, about a fifth of them sampled
CHUNK = 500
MEAN_TOLERANCE = 0.01  # of the data's range: the sample's mean vs numpy's over every pixel
SHARE_TOLERANCE = 2.0  # percentage points, a class's share in the sample vs in every pixel


@pytest.fixture
def tools(tool_ctx) -> ProjectTools:
    return ProjectTools(tool_ctx)


def _create(path: Path, width: int, height: int, kind: int, options: list[str], nodata: float | None):
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), width, height, 1, kind, options=options)
    dataset.SetGeoTransform((500_000.0, 1.0, 0.0, 6_300_000.0, 0.0, -1.0))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    dataset.SetProjection(srs.ExportToWkt())
    if nodata is not None:
        dataset.GetRasterBand(1).SetNoDataValue(nodata)
    return dataset


def _surface(top: int, rows: int, width: int) -> np.ndarray:
    """A DEM-like surface with a north-south trend (a sample biased to one side would miss the mean)."""
    x = np.arange(width, dtype=np.float32)
    y = np.arange(top, top + rows, dtype=np.float32)[:, None]
    return (100 + 50 * np.sin(x / 700) * np.cos(y / 900) + y * 0.01).astype(np.float32)


def _write_surface(path: Path, width: int, height: int, options: list[str]) -> dict[str, float]:
    """A Float32 surface with a -9999 nodata block in its north-west corner; numpy's figures over every pixel."""
    dataset = _create(path, width, height, gdal.GDT_Float32, options, -9999.0)
    band = dataset.GetRasterBand(1)
    total = squares = 0.0
    count, low, high = 0, np.inf, -np.inf
    for top in range(0, height, CHUNK):
        rows = min(CHUNK, height - top)
        chunk = _surface(top, rows, width)
        if top < 1_000:
            chunk[: max(0, 1_000 - top), :1_000] = -9999.0
        band.WriteArray(chunk, 0, top)
        valid = chunk[chunk != -9999.0].astype(np.float64)
        total, squares, count = total + valid.sum(), squares + (valid**2).sum(), count + valid.size
        low, high = min(low, valid.min()), max(high, valid.max())
    dataset = None
    mean = total / count
    return {"mean": mean, "std": (squares / count - mean**2) ** 0.5, "min": low, "max": high, "valid": count}


def _figures(text: str) -> dict[str, float]:
    return {key: float(value) for key, value in re.findall(r"\b(min|max|mean|std) (-?[\d.e+]+)", text)}


def _add(project, path: Path, name: str) -> None:
    layer = QgsRasterLayer(str(path), name, "gdal")
    assert layer.isValid(), path
    project.addMapLayer(layer)


def _sample_line(text: str) -> re.Match:
    found = re.search(
        r"Statistics: approximate, from ([\d,]+) of the ([\d,]+) pixels \(([\d.]+)%: (\d+) (whole blocks|windows) "
        r"of ([\d,]+) x ([\d,]+) spread evenly, read at full resolution\); min, max and classes are the sample's",
        text,
    )
    assert found, text
    return found


def test_a_large_float_raster_is_sampled_from_whole_blocks_and_its_mean_is_near_the_full_mean(
    tools, demo_project, tmp_path
):
    path = tmp_path / "dem.tif"
    full = _write_surface(path, SIDE, SIDE, ["TILED=YES", "COMPRESS=DEFLATE", "ZLEVEL=1"])
    _add(demo_project, path, "dem")

    text = call_in_thread(tools.describe_layer, "dem").text

    sample = _sample_line(text)
    read, total, windows = int(sample[1].replace(",", "")), int(sample[2].replace(",", "")), int(sample[4])
    assert total == SIDE * SIDE and 1_000_000 <= read < total // 2
    assert float(sample[3]) == pytest.approx(100 * read / total, rel=0.05)
    assert sample[5] == "whole blocks" and (sample[6], sample[7]) == ("256", "256")
    assert read <= windows * 256 * 256
    figures = _figures(text)
    span = full["max"] - full["min"]
    assert abs(figures["mean"] - full["mean"]) <= MEAN_TOLERANCE * span, (figures, full)
    assert figures["std"] == pytest.approx(full["std"], rel=0.1), (figures, full)
    assert full["min"] <= figures["min"] <= figures["max"] <= full["max"], (figures, full)
    assert "Band 1 (Float32, nodata -9999)" in text


def test_a_large_class_raster_names_only_classes_that_occur_and_says_a_rare_one_may_be_missing(
    tools, demo_project, tmp_path
):
    """Byte land cover with nodata 0 and a class 9 in one 3 x 3 patch outside every window the sample reads.

    Classes and nodata vary within a few dozen pixels, so any block holds them in about their overall shares;
    a pattern as large as the sample's spacing (a nodata collar one block wide) is sampled at that spacing.
    """
    width = height = SIDE
    _unit, windows = plan_windows(width, height, (256, 256))
    covered = np.zeros((height // 256 + 1, width // 256 + 1), dtype=bool)
    for x, y, _w, _h in windows:
        covered[y // 256, x // 256] = True
    row, col = (int(v) for v in np.argwhere(~covered)[0])  # a block the sample skips
    rare_y, rare_x = row * 256 + 100, col * 256 + 100

    path = tmp_path / "cover.tif"
    dataset = _create(path, width, height, gdal.GDT_Byte, ["TILED=YES", "COMPRESS=DEFLATE", "ZLEVEL=1"], 0)
    band = dataset.GetRasterBand(1)
    counts = np.zeros(256, dtype=np.int64)
    x = np.arange(width, dtype=np.int32)
    for top in range(0, height, CHUNK):
        y = np.arange(top, min(top + CHUNK, height), dtype=np.int32)[:, None]
        chunk = (1 + (x // 97 + y // 89) % 7).astype(np.uint8)
        chunk[(x // 50 + y // 50) % 10 == 0] = 0  # nodata: 10% of the pixels, in small patches everywhere
        chunk[(y[:, 0] >= rare_y) & (y[:, 0] < rare_y + 3), rare_x : rare_x + 3] = 9
        band.WriteArray(chunk, 0, top)
        counts += np.bincount(chunk.ravel(), minlength=256)
    dataset = None
    _add(demo_project, path, "cover")

    text = call_in_thread(tools.describe_layer, "cover").text

    _sample_line(text)
    assert "a rare class may be missing" in text
    occurring = set(np.flatnonzero(counts[1:]) + 1)
    assert 9 in occurring
    classes = text.split("valid pixels:")[1].splitlines()[0]
    shown = {int(code): float(share) for code, share in re.findall(r"\b(\d+) ([\d.]+)%", classes)}
    assert set(shown) <= occurring, (shown, text)  # nothing invented
    assert 0 not in shown and 9 not in shown  # nodata is no class; the patch lies outside the sample
    assert f"categorical, {len(shown)} classes" in text
    valid = counts[1:].sum()
    for code, share in shown.items():
        assert share == pytest.approx(100 * counts[code] / valid, abs=SHARE_TOLERANCE), (code, text)
    nodata = float(re.search(r"; ([\d.]+)% nodata", text)[1])
    assert nodata == pytest.approx(100 * counts[0] / counts.sum(), abs=SHARE_TOLERANCE)


def test_a_band_stored_in_big_strips_is_sampled_in_windows_not_read_whole(tools, demo_project, tmp_path):
    """A compressed GeoTIFF in strips of 6,000 x 1,024 pixels: windows of 512 x 512, memory bounded."""
    side = SIDE
    path = tmp_path / "strip.tif"
    full = _write_surface(path, side, side, ["COMPRESS=DEFLATE", "ZLEVEL=1", "BLOCKYSIZE=1024"])
    assert gdal.Open(str(path)).GetRasterBand(1).GetBlockSize() == [side, 1024]
    _add(demo_project, path, "strip")

    text = call_in_thread(tools.describe_layer, "strip").text

    sample = _sample_line(text)
    assert sample[5] == "windows" and (sample[6], sample[7]) == ("512", "512")
    figures = _figures(text)
    assert abs(figures["mean"] - full["mean"]) <= MEAN_TOLERANCE * (full["max"] - full["min"]), (figures, full)
    assert full["min"] <= figures["min"] <= figures["max"] <= full["max"]


@pytest.mark.parametrize(
    ("kind", "dtype", "codes", "nodata"),
    [(gdal.GDT_Byte, np.uint8, [1, 5, 9, 200], 0), (gdal.GDT_Int16, np.int16, [-3, 0, 7, 1200], -32768)],
)
def test_classes_at_the_exact_limit_are_counted_exactly(tools, demo_project, tmp_path, kind, dtype, codes, nodata):
    """At ``EXACT_PIXELS`` every pixel is read and every class share equals numpy's (negative codes too)."""
    side = math.isqrt(EXACT_PIXELS)
    rng = np.random.default_rng(7)
    values = rng.choice(np.array([*codes, nodata], dtype=dtype), size=(side, side), p=[0.4, 0.3, 0.2, 0.05, 0.05])
    values[0, 0] = codes[-1]  # one more of the rarest, in the first pixel
    path = tmp_path / "classes.tif"
    dataset = _create(path, side, side, kind, ["TILED=YES"], nodata)
    dataset.GetRasterBand(1).WriteArray(values)
    dataset = None
    _add(demo_project, path, "classes")

    text = call_in_thread(tools.describe_layer, "classes").text

    assert f"Statistics: exact, from all {side * side:,} pixels." in text, text
    valid = values[values != nodata]
    found, counts = np.unique(valid, return_counts=True)
    assert f"categorical, {found.size} classes" in text
    for code, count in zip(found.tolist(), counts.tolist(), strict=True):
        assert re.search(rf"(?<![\d-]){code} {100 * count / valid.size:.1f}%", text), (code, text)
    assert f"; {100 * (values == nodata).mean():.2g}% nodata" in text
