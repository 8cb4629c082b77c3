"""Describe a raster layer compactly: grid, units, CRS, and per band its type, nodata, statistics and classes.

Split like the vector reads: ``plan_raster_read`` snapshots what only the main
thread may touch (the layer, its renderer's class labels) into a plain
``RasterReadPlan``; ``describe_raster`` then reads pixels with GDAL on the
worker, through a dataset of its own.  Which pixels (``raster_scan``): all of
them up to ``EXACT_PIXELS``; above that about ``SAMPLE_PIXELS`` real pixels in
whole blocks spread evenly (a compressed 10,000 x 10,000 GeoTIFF under a
second; never an overview, whose resampled values the data may not have), and
the text says the figures are approximate, how they were sampled and that
extremes and rare classes may lie outside the sample.  Pixels a GDAL mask band
hides count as missing, as QGIS draws them transparent.  Nothing is written
beside the data (GDAL's .aux.xml caches are not used: the statistics are
computed here with numpy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qgis.core import QgsPalettedRasterRenderer, QgsRasterLayer, QgsUnitTypes

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.core.text import NAME_MAX_CHARS, short
from geogpt_qgis.tools.raster_scan import EXACT_PIXELS as EXACT_PIXELS  # re-exported: tests size rasters by it
from geogpt_qgis.tools.raster_scan import class_counts, read_band
from geogpt_qgis.tools.raster_scan import has_mask as has_mask  # re-exported for the sample and zonal tools
from geogpt_qgis.tools.raster_scan import read_window as read_window

MAX_CLASSES = 32  # an integer band with at most this many values (and a palette or few values) is categorical
MAX_BANDS_DESCRIBED = 12
SHOWN_CLASSES = 16
# Values data producers write into gaps; one that is the min or max, far from the rest, is named as a likely fill.
FILL_VALUES = frozenset(
    {
        -9999.0,
        -99999.0,
        -32768.0,
        -32767.0,
        32767.0,
        65535.0,
        -3.4028234663852886e38,
        3.4028234663852886e38,
        -1e30,
        1e30,
    }
)
FILL_GAP = 5.0


@dataclass
class RasterReadPlan:
    """What the worker needs to describe a raster without touching the layer (made on the main thread)."""

    name: str
    source: str  # a GDAL dataset name; empty when the provider is not GDAL
    width: int
    height: int
    band_count: int
    pixel_x: float
    pixel_y: float
    units: str  # "m", "degrees"...
    labels: dict[int, dict[float, str]] = field(default_factory=dict)  # band -> value -> label (the renderer's)


def plan_raster_read(layer: QgsRasterLayer) -> RasterReadPlan:
    """Snapshot a raster layer (main thread): its GDAL source and the class labels its paletted renderer shows."""
    renderer = layer.renderer()
    labels: dict[int, dict[float, str]] = {}
    if isinstance(renderer, QgsPalettedRasterRenderer):
        # inputBand() from QGIS 3.38, where band() is deprecated; 3.22 has only band().
        band = renderer.inputBand() if hasattr(renderer, "inputBand") else renderer.band()
        labels[band] = {float(c.value): c.label for c in renderer.classes()}
    crs = layer.crs()
    units = QgsUnitTypes.toAbbreviatedString(crs.mapUnits()) if crs.isValid() else "map units"
    return RasterReadPlan(
        name=layer.name(),
        source=layer.source() if layer.providerType() == "gdal" else "",
        width=layer.width(),
        height=layer.height(),
        band_count=layer.bandCount(),
        pixel_x=layer.rasterUnitsPerPixelX(),
        pixel_y=layer.rasterUnitsPerPixelY(),
        units=units or "map units",
        labels=labels,
    )


def grid_line(plan: RasterReadPlan) -> str:
    """``Size: 800 x 600 pixels, 1 band; pixel 10 x 10 m``."""
    bands = f"{plan.band_count} band" + ("s" if plan.band_count != 1 else "")
    return (
        f"Size: {plan.width:,} x {plan.height:,} pixels, {bands}; "
        f"pixel {plan.pixel_x:.6g} x {plan.pixel_y:.6g} {plan.units}"
    )


def describe_raster(plan: RasterReadPlan, cancel: CancelToken) -> list[str]:
    """One line per band (worker thread): type, nodata, statistics or classes; then how they were computed."""
    if not plan.source:
        return ["Band statistics: not available for this provider (not a GDAL raster)."]
    from osgeo import gdal

    gdal.UseExceptions()
    try:
        dataset = gdal.OpenEx(plan.source, gdal.OF_RASTER | gdal.OF_READONLY)
    except RuntimeError as error:
        return [f"Band statistics: GDAL cannot read the source ({short(str(error), 200)})."]
    lines: list[str] = []
    basis = ""
    for index in range(1, min(dataset.RasterCount, MAX_BANDS_DESCRIBED) + 1):
        cancel.raise_if_cancelled()
        band = dataset.GetRasterBand(index)
        read = read_band(band, dataset.RasterXSize, dataset.RasterYSize, cancel)
        basis = read.basis()
        lines.append(_band_line(index, band, read.values, read.masked, plan.labels.get(index, {})))
    if dataset.RasterCount > MAX_BANDS_DESCRIBED:
        lines.append(f"(bands {MAX_BANDS_DESCRIBED + 1}-{dataset.RasterCount} not described)")
    lines.append(f"Statistics: {basis}.")
    return lines


def band_summary(plan: RasterReadPlan, cancel: CancelToken) -> tuple[float | None, float | None, list[float]]:
    """Band 1's min, max and (an integer band of at most ``MAX_CLASSES`` values) its values (worker thread)."""
    from osgeo import gdal

    gdal.UseExceptions()
    cancel.raise_if_cancelled()
    dataset = gdal.OpenEx(plan.source, gdal.OF_RASTER | gdal.OF_READONLY)
    band = dataset.GetRasterBand(1)
    valid = shown_values(band, read_band(band, dataset.RasterXSize, dataset.RasterYSize, cancel).values)
    if valid.size == 0:
        return None, None, []
    counted = class_counts(valid, MAX_CLASSES) if valid.dtype.kind in "iu" else None
    classes = [float(c) for c in counted[0]] if counted is not None else []
    return float(valid.min()), float(valid.max()), classes


def _band_line(index: int, band: Any, values: Any, masked: int, labels: dict[float, str]) -> str:
    import numpy as np
    from osgeo import gdal

    type_name = gdal.GetDataTypeName(band.DataType)
    nodata = band.GetNoDataValue()
    name = band.GetDescription()
    head = f"Band {index}" + (f" {short(name, NAME_MAX_CHARS)!r}" if name else "") + f" ({type_name}"
    head += f", nodata {nodata:g}" if nodata is not None else ", no nodata value"
    scale, offset = band_scaling(band)
    head += (
        f"; values shown as stored × {scale:g} + {offset:g}, as QGIS shows them)" if (scale, offset) != (1, 0) else ")"
    )
    valid = shown_values(band, values)
    missing = values.size - valid.size + masked
    read = values.size + masked
    hidden = " or hidden by the mask band" if masked else ""
    share_missing = f"; {100 * missing / read:.2g}% nodata{hidden}" if missing else ""
    if valid.size == 0:
        return f"{head}: every pixel is nodata"
    labels = labels or gdal_labels(band)
    if valid.dtype.kind in "iu":
        counted = class_counts(valid, MAX_CLASSES)
        if counted is not None and (labels or band.GetColorTable() is not None or len(counted[0]) <= 12):
            codes, counts = counted
            return f"{head}: categorical, {len(codes)} classes{share_missing}; share of valid pixels: " + _classes(
                codes, counts, labels
            )
    data = valid.astype(np.float64)
    line = (
        f"{head}: min {number(data.min())}, max {number(data.max())}, mean {number(data.mean())}, "
        f"std {number(data.std())}{share_missing}"
    )
    return line + (_fill_note(data) if nodata is None and not masked else "")


def _fill_note(data: Any) -> str:
    """A fill value in a band with no nodata declared (-9999 gaps counted as ground), said with the mean without it.

    Only a value from ``FILL_VALUES`` that is the band's min or max and lies far outside the other values
    (more than ``FILL_GAP`` of their range away): a real -9999 among values near it is left alone.
    """
    for fill in (data.min(), data.max()):
        if float(fill) not in FILL_VALUES:
            continue
        rest = data[data != fill]
        if rest.size == 0:
            continue
        spread = max(float(rest.max() - rest.min()), 1.0)
        if abs(float(fill) - float(rest.mean())) < FILL_GAP * spread:
            continue
        share = 100 * (data.size - rest.size) / data.size
        return (
            f". No nodata is declared, but {number(fill)} looks like a nodata fill value ({share:.2g}% of the "
            f"pixels): without it the mean is {number(rest.mean())}, min {number(rest.min())}, max "
            f"{number(rest.max())}. Ask whether it is nodata (then set it, e.g. gdal:translate NODATA={number(fill)})"
        )
    return ""


def band_scaling(band: Any) -> tuple[float, float]:
    """A GDAL band's scale and offset ((1, 0) when unset): QGIS shows stored × scale + offset, and so must we.

    A DEM kept as Int16 decimetres with scale 0.1 reads 1234 from GDAL where
    QGIS's identify tool, renderer and zonal statistics all say 123.4.
    """
    scale, offset = band.GetScale(), band.GetOffset()
    return (float(scale) if scale else 1.0), (float(offset) if offset else 0.0)


def shown_values(band: Any, values: Any) -> Any:
    """The valid pixels of ``values`` (read from ``band``) as QGIS shows them.

    NaN and nodata are dropped first, in stored units (GDAL's nodata is a
    stored value); then the scale and offset are applied (float64 when there are any).
    """
    import numpy as np

    valid = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    nodata = band.GetNoDataValue()
    if nodata is not None:
        valid = valid[valid != nodata]
    return scaled(band, valid)


def scaled(band: Any, stored: Any) -> Any:
    """``stored`` values (an array or a number) of ``band`` in the units QGIS shows."""
    scale, offset = band_scaling(band)
    if (scale, offset) == (1.0, 0.0):
        return stored
    import numpy as np

    return np.asarray(stored, dtype=np.float64) * scale + offset


def _classes(codes: Any, counts: Any, labels: dict[float, str]) -> str:
    total = counts.sum()
    order = sorted(zip(codes.tolist(), counts.tolist(), strict=True), key=lambda pair: -pair[1])
    parts = []
    for code, count in order[:SHOWN_CLASSES]:
        label = labels.get(float(code))
        named = f"{code} {short(label, 40)!r}" if label else f"{code}"
        parts.append(f"{named} {100 * count / total:.1f}%")
    if len(order) > SHOWN_CLASSES:
        parts.append(f"... {len(order) - SHOWN_CLASSES} more")
    return ", ".join(parts)


def gdal_labels(band: Any) -> dict[float, str]:
    """Class labels GDAL knows: category names, else a raster attribute table's name column."""
    names = band.GetCategoryNames() or []
    labels = {float(code): name for code, name in enumerate(names) if name}
    if labels:
        return labels
    table = band.GetDefaultRAT()
    if table is None:
        return {}
    from osgeo import gdal

    value_col = name_col = -1
    for col in range(table.GetColumnCount()):
        usage = table.GetUsageOfCol(col)
        if usage in (gdal.GFU_MinMax, gdal.GFU_Min) and value_col < 0:
            value_col = col
        elif usage == gdal.GFU_Name and name_col < 0:
            name_col = col
    if value_col < 0 or name_col < 0:
        return {}
    return {
        float(table.GetValueAsDouble(row, value_col)): table.GetValueAsString(row, name_col)
        for row in range(table.GetRowCount())
    }


def number(value: float) -> str:
    """Seven significant digits: 10001 and 10008.5 stay apart, and -9999.9 stays -9999.9 (not -1e+04)."""
    return f"{value:.7g}"
