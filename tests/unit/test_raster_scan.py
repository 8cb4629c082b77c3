"""Which windows a band's statistics read (tools/raster_scan.py), and the class counts, against plain numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.tools.raster_scan import EXACT_PIXELS, SAMPLE_PIXELS, WINDOW, class_counts, plan_windows, read_band


def _covered(width: int, height: int, windows) -> np.ndarray:
    hits = np.zeros((height, width), dtype=np.int32)
    for x, y, w, h in windows:
        assert x >= 0 and y >= 0 and w > 0 and h > 0 and x + w <= width and y + h <= height
        hits[y : y + h, x : x + w] += 1
    return hits


def test_up_to_the_exact_limit_every_pixel_is_read_once():
    side = math.isqrt(EXACT_PIXELS)
    unit, windows = plan_windows(side, side, (256, 256))
    assert unit == (256, 256)
    assert (_covered(side, side, windows) == 1).all()


def test_a_large_band_is_sampled_in_whole_blocks_one_in_each_cell_of_an_even_lattice():
    side = 10_000
    unit, windows = plan_windows(side, side, (256, 256))
    assert unit == (256, 256)
    assert plan_windows(side, side, (256, 256)) == (unit, windows)  # the same raster, the same sample
    assert all(x % 256 == 0 and y % 256 == 0 for x, y, _w, _h in windows)  # whole blocks, aligned
    assert len({(x, y) for x, y, _w, _h in windows}) == len(windows)  # aligned and distinct: no pixel twice
    read = sum(w * h for _x, _y, w, h in windows)
    assert SAMPLE_PIXELS * 0.8 <= read <= SAMPLE_PIXELS * 1.25
    cells = round(len(windows) ** 0.5)
    assert cells * cells == len(windows)
    # One window in each cell of a cells x cells lattice: every part of the raster stands for its share.
    per_cell = {(int((x + 128) * cells / side), int((y + 128) * cells / side)) for x, y, _w, _h in windows}
    assert per_cell == {(i, j) for i in range(cells) for j in range(cells)}
    area = np.array([w * h for _x, _y, w, h in windows], dtype=np.float64)
    centre_x = np.array([x + w / 2 for x, _y, w, _h in windows]) @ area / area.sum()
    centre_y = np.array([y + h / 2 for _x, y, _w, h in windows]) @ area / area.sum()
    # The sample's centre of mass is the raster's (a linear trend averages out) within one block.
    assert abs(centre_x - side / 2) < 256 and abs(centre_y - side / 2) < 256
    columns = sorted({x for x, _y, _w, _h in windows})
    assert len(columns) > cells  # not one shared set of columns: a regular pattern cannot line up with all


def test_a_block_too_big_to_read_whole_is_read_in_windows_and_strips_are_whole_strips():
    unit, windows = plan_windows(6_000, 6_000, (6_000, 2_048))
    assert unit == (WINDOW, WINDOW) and len(windows) > 1
    assert _covered(6_000, 6_000, windows).max() == 1
    assert sum(w * h for _x, _y, w, h in windows) < 36_000_000 / 2
    # 9 M pixels (over the exact limit) of which the sample would hold more than half: all of them, exact.
    unit, windows = plan_windows(3_000, 3_000, (3_000, 3_000))
    assert unit == (WINDOW, WINDOW) and (_covered(3_000, 3_000, windows) == 1).all()
    unit, windows = plan_windows(8_000, 6_000, (8_000, 1))  # one row per strip
    assert unit == (8_000, 1)
    assert all(x == 0 and w == 8_000 and h == 1 for x, _y, w, h in windows)
    assert SAMPLE_PIXELS * 0.8 <= len(windows) * 8_000 <= SAMPLE_PIXELS * 1.25
    ys = [y for _x, y, _w, _h in windows]
    assert abs(np.mean(ys) - 3_000) < 20 and len(set(ys)) == len(ys)


@pytest.mark.parametrize(
    ("dtype", "codes"),
    [(np.uint8, [0, 3, 255]), (np.uint16, [7, 65_535]), (np.int16, [-32_768, -3, 0, 12]), (np.int32, [-5, 10**9])],
)
def test_class_counts_equal_numpys(dtype, codes):
    values = np.random.default_rng(3).choice(np.array(codes, dtype=dtype), size=50_000)
    found, counts = class_counts(values, 32)
    expected, expected_counts = np.unique(values, return_counts=True)
    assert found.tolist() == expected.tolist() and counts.tolist() == expected_counts.tolist()
    assert found.dtype == values.dtype


def test_class_counts_give_up_past_the_limit():
    assert class_counts(np.arange(40, dtype=np.uint8), 32) is None
    assert class_counts(np.arange(200_000, dtype=np.int32), 32) is None
    assert class_counts(np.zeros(0, dtype=np.uint8), 32) is None


class _Band:
    """A GDAL band's reading surface over no file: every read counted, Stop pressed after the third."""

    def __init__(self, cancel: CancelToken) -> None:
        self.reads: list[tuple[int, int, int, int]] = []
        self.cancel = cancel

    def GetBlockSize(self) -> list[int]:  # noqa: N802 - GDAL's name
        return [256, 256]

    def GetMaskFlags(self) -> int:  # noqa: N802
        from osgeo import gdal

        return gdal.GMF_ALL_VALID

    def ReadAsArray(self, x: int, y: int, width: int, height: int) -> np.ndarray:  # noqa: N802
        self.reads.append((x, y, width, height))
        if len(self.reads) == 3:
            self.cancel.cancel()
        return np.zeros((height, width), dtype=np.float32)


def test_stop_ends_a_sampled_read_between_two_windows():
    cancel = CancelToken()
    band = _Band(cancel)
    with pytest.raises(RunCancelled):
        read_band(band, 10_000, 10_000, cancel)
    assert len(band.reads) == 3  # the window after Stop was never read
    assert all(w == h == 256 for _x, _y, w, h in band.reads)  # full-resolution windows, no buffer size
