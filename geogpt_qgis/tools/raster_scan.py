"""Which pixels a band's statistics come from: all of them when that is quick, else an even grid of windows.

Exact up to ``EXACT_PIXELS`` pixels (a 2,800 x 2,800 band reads in well under a
second).  Above that, about ``SAMPLE_PIXELS`` pixels in windows, one drawn in
each cell of an even lattice over the whole raster (stratified, seeded: the
same raster gives the same figures), so that neither a trend, the raster's
edges nor a regular pattern bias the figures.
Each window is one of the file's own blocks (a 256 x 256 tile decompresses
once, so a compressed 10,000 x 10,000 GeoTIFF is sampled in a fraction of a
second), or a ``WINDOW`` x ``WINDOW`` part of a block too big to read whole
(one strip holding the whole image), so memory stays bounded.

Every value is a real pixel read at full resolution (``ReadAsArray`` of a
window, no buffer size): never an overview, whose averaged or cubic values a
categorical band does not have (classes 1, 5 and 9 read as seven classes).  A
sample's min, max and classes are the sample's: the text says so.  Pixels a
GDAL mask band hides are left out and counted, as QGIS draws them transparent.
Worker thread: plain GDAL on a dataset of the caller's own.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.core.cancel import CancelToken

EXACT_PIXELS = 8_000_000  # read every pixel up to this many per band (a Float32 band: ~0.2 s, ~100 MB at most)
SAMPLE_PIXELS = 6_000_000  # about this many pixels per band otherwise
JITTER = 0.5  # a window's place in its cell: the middle, moved at most a quarter of the cell either way
MAX_WINDOW_PIXELS = 1_048_576  # a block bigger than this is read in parts
WINDOW = 512  # the side of such a part, in pixels

Window = tuple[int, int, int, int]  # x, y, width, height in pixels


@dataclass(frozen=True)
class BandRead:
    """Pixels read from a band (flattened, the mask's hidden ones left out) and how they were chosen."""

    values: Any
    masked: int  # pixels read that the mask band hides
    read: int  # pixels read, hidden ones included
    total: int  # pixels in the band
    windows: int
    window_size: tuple[int, int]
    whole_blocks: bool  # each window is one of the file's blocks

    @property
    def exact(self) -> bool:
        return self.read == self.total

    def basis(self) -> str:
        """How the figures were computed, for the model: exact, or approximate with the sample's size and layout."""
        if self.exact:
            return f"exact, from all {self.total:,} pixels"
        width, height = self.window_size
        unit = "whole blocks" if self.whole_blocks else "windows"
        return (
            f"approximate, from {self.read:,} of the {self.total:,} pixels ({100 * self.read / self.total:.2g}%: "
            f"{self.windows} {unit} of {width:,} x {height:,} spread evenly, read at full resolution); min, max and "
            "classes are the sample's: the raster's extremes may lie outside it and a rare class may be missing"
        )


def plan_windows(
    width: int, height: int, block: tuple[int, int], wanted_pixels: int = SAMPLE_PIXELS
) -> tuple[tuple[int, int], list[Window]]:
    """The window size and the windows to read from a ``width`` x ``height`` band stored in ``block``-sized blocks.

    The window is the block, or a ``WINDOW`` x ``WINDOW`` part of a block of more
    than ``MAX_WINDOW_PIXELS``.  Every window when the band has at most
    ``EXACT_PIXELS`` pixels; else about ``wanted_pixels`` of them, one in each
    cell of an even lattice over the whole raster (``_pick``), unless they
    would hold half of the band or more: then every window (a sample that
    dense costs about what the exact figures do, and with cells hardly larger
    than a window its pixels would not stand for equal shares).
    """
    unit_x, unit_y = max(1, min(block[0], width)), max(1, min(block[1], height))
    if unit_x * unit_y > MAX_WINDOW_PIXELS:
        unit_x, unit_y = min(unit_x, WINDOW), min(unit_y, WINDOW)
    columns, rows = math.ceil(width / unit_x), math.ceil(height / unit_y)
    if width * height <= EXACT_PIXELS:
        picks = [(col, row) for row in range(rows) for col in range(columns)]
    else:
        wanted = max(1, round(wanted_pixels / (unit_x * unit_y)))
        if columns == 1:  # strips: one in each of ``wanted`` stretches of rows
            across, down = 1, wanted
        else:  # a lattice of stretches, as many across as down for a square raster
            step = max(1.0, math.sqrt(columns * rows / wanted))
            across, down = math.ceil(columns / step), math.ceil(rows / step)
        # Seeded by the grid: the same raster gives the same sample, and the same figures, every time.
        seed = f"{width}x{height}/{unit_x}x{unit_y}"
        chance = random.Random(seed)  # noqa: S311  # nosec B311 # a seeded pixel sample, not a secret
        picks = sorted(
            {
                (_pick(width, unit_x, across, i, chance), _pick(height, unit_y, down, j, chance))
                for j in range(min(down, rows))
                for i in range(min(across, columns))
            },
            key=lambda pick: (pick[1], pick[0]),
        )
    windows = [_window(col, row, unit_x, unit_y, width, height) for col, row in picks]
    if 2 * sum(w * h for _x, _y, w, h in windows) >= width * height:  # half of it or more: read it all, exact
        windows = [_window(col, row, unit_x, unit_y, width, height) for row in range(rows) for col in range(columns)]
    return (unit_x, unit_y), windows


def _window(col: int, row: int, unit_x: int, unit_y: int, width: int, height: int) -> Window:
    x, y = col * unit_x, row * unit_y
    return x, y, min(unit_x, width - x), min(unit_y, height - y)


def read_band(band: Any, width: int, height: int, cancel: CancelToken | None = None) -> BandRead:
    """The band's pixels per ``plan_windows`` (one read when exact); ``cancel`` is polled between windows."""
    import numpy as np

    block_x, block_y = band.GetBlockSize()
    unit, windows = plan_windows(width, height, (block_x, block_y))
    whole = unit == (max(1, min(block_x, width)), max(1, min(block_y, height)))
    if width * height <= EXACT_PIXELS:
        windows = [(0, 0, width, height)]  # one read
    parts, masked, read = [], 0, 0
    for x, y, size_x, size_y in windows:
        if cancel is not None:
            cancel.raise_if_cancelled()
        values, hidden = read_window(band, x, y, size_x, size_y)
        parts.append(values)
        masked += hidden
        read += size_x * size_y
    values = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return BandRead(values, masked, read, width * height, len(windows), unit, whole)


def has_mask(band: Any) -> bool:
    """Whether a GDAL mask band (internal mask, alpha) hides pixels beyond what the nodata value says."""
    from osgeo import gdal

    flags = band.GetMaskFlags()
    return not flags & (gdal.GMF_ALL_VALID | gdal.GMF_NODATA)


def read_window(band: Any, x: int, y: int, width: int, height: int) -> tuple[Any, int]:
    """A window's pixels at full resolution, flattened, without those the band's mask hides; and how many it hid."""
    values = band.ReadAsArray(x, y, width, height).ravel()
    if not has_mask(band):
        return values, 0
    shown = band.GetMaskBand().ReadAsArray(x, y, width, height).ravel() != 0
    return values[shown], int(values.size - shown.sum())


def class_counts(valid: Any, limit: int) -> tuple[Any, Any] | None:
    """The distinct values of an integer array and how often each occurs; ``None`` past ``limit`` distinct values.

    Up to 16-bit integers are counted with ``bincount`` (no sort: 4 M bytes in
    milliseconds, where ``np.unique`` takes a third of a second); wider ones
    are sorted only when a first slice shows at most ``limit`` values (more
    there means more in all).
    """
    import numpy as np

    if valid.size == 0:
        return None
    if valid.dtype.itemsize <= 2:
        low = int(valid.min()) if valid.dtype.kind == "i" else 0
        counts = np.bincount(valid.astype(np.int32) - low if low else valid)
        present = np.flatnonzero(counts)
        if present.size > limit:
            return None
        return (present + low).astype(valid.dtype), counts[present]
    if np.unique(valid[:100_000]).size > limit:
        return None
    codes, counts = np.unique(valid, return_counts=True)
    return (codes, counts) if codes.size <= limit else None


def _pick(extent: int, unit: int, strata: int, index: int, chance: random.Random) -> int:
    """The window (of ``unit`` pixels) holding a pixel near the middle of stretch ``index`` of ``strata`` equal ones.

    Stratified: every stretch of the raster gets one window, each standing for
    as many pixels as any other, so neither a trend nor the edges (where
    nodata collars are) weigh more than their share.  Jittered around the
    middle rather than exactly there: an exact lattice aliases with a regular
    pattern (fields, a repeated tile; one synthetic land cover read 21.6% for a
    class of 14.3%), a place drawn anywhere in the cell doubles the error on a
    smooth surface (measured on the benchmark's rasters).  Seeded: repeatable.
    """
    strata = max(1, min(strata, math.ceil(extent / unit)))
    where = 0.5 + (chance.random() - 0.5) * JITTER
    return min(math.ceil(extent / unit) - 1, int((index + where) * extent / strata) // unit)
