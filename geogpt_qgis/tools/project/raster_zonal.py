"""Zonal summaries of a raster within the polygons of a layer, through QGIS's own zonal algorithms.

A continuous band goes through ``native:zonalstatisticsfb`` (count, mean, min,
max, standard deviation, and the majority of an integer band), a categorical
one through ``native:zonalhistogram`` (pixels per class); both exist in the
registry from QGIS 3.16 to 3.44 and reproject the zones to the raster's CRS
themselves.  They run through the processing runner, so the
result is a layer in the project stored like any other result, and the model
reads a table: per zone the statistics, or each class's share of the zone's
pixels with its label, and the area they cover.  Areas come from pixel counts
times the pixel area when the raster is projected (its map units squared, in
m2 / ha for metres).  A geographic raster's pixels have no fixed area (at 60°N
a pixel is half as wide as at the equator, and shrinks row by row): each pixel
whose centre is in the zone (QGIS's rule) counts with its own ellipsoidal area,
summed per class with GDAL and numpy on the worker.  A share of the
zone's polygon area would count the part of the zone outside the raster or on
nodata, and weigh northern and southern pixels alike.

The class counts of a GDAL raster are read that way too, whatever its CRS:
``native:zonalhistogram`` takes the pixel width for the height, so on a grid
whose pixels are not square it counts half or twice the pixels (measured on
QGIS 3.22.16, 3.40.6 and 3.44.15: 400 of 800 pixels of 20 x 10 m).  The
result layer's ``px_<code>`` / ``px_NODATA`` fields are rewritten with those
counts (a field added for a class it missed), so the layer and the table agree.

``native:zonalstatisticsfb`` has no such fault: measured against numpy over
the pixels whose centre is in the zone, its count, mean, min, max, standard
deviation (population) and majority (the smallest value on a tie) are exact on
20 x 10 m, 10 x 20 m and 0.02 x 0.01 degree pixels, for zones beyond the
raster's edge, around nodata, and in another CRS than the raster (QGIS 3.22.16,
3.40.6 and 3.44.15; tests/qgis/test_raster_zonal_stats.py).  One rule of its own is
said in the table: a zone holding at most one pixel centre is summarised from
every pixel it overlaps, each weighted by the share of it the zone covers, and
its count is that sum of shares (a fraction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qgis.core import (
    QgsCoordinateTransform,
    QgsEllipsoidUtils,
    QgsFeatureRequest,
    QgsProject,
    QgsProviderRegistry,
    QgsUnitTypes,
    QgsVectorLayer,
)

from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact, ToolResult
from geogpt_qgis.core.text import NAME_MAX_CHARS, markdown_table, short
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.layers import python_value, resolve_vector_layer
from geogpt_qgis.tools.measures import WGS84_ELLIPSOID, crs_name, ellipsoidal_method
from geogpt_qgis.tools.processing.compat import GEOMETRY_POLYGON
from geogpt_qgis.tools.project.raster_sample import LABEL_FIELDS, resolve_raster
from geogpt_qgis.tools.rasters import has_mask, number, plan_raster_read, scaled

ZONAL_STATS = "native:zonalstatisticsfb"
ZONAL_HISTOGRAM = "native:zonalhistogram"
# count, mean, min, max, stdev, majority: the enum's order has not changed since 3.16
STATISTICS = {"count": 0, "mean": 2, "min": 5, "max": 6, "stdev": 4, "majority": 9}
MAX_ZONES_SHOWN = 30
CENTRES = "Pixels counted: those whose centre is in the zone, nodata left out."
PARTIAL = (
    "* a zone holding at most one pixel centre: every pixel it overlaps, weighted by the share of it"
    " the zone covers (pixels = the sum of those shares)"
)
MAX_CLASSES_SHOWN = 8
NODATA = "NODATA"  # native:zonalhistogram's name for the nodata pixels' field (px_NODATA)


@dataclass
class ZonalPlan:
    """What the main thread found out about the raster and the zones."""

    raster: str
    zones: str
    categorical: bool
    labels: dict[float, str]
    pixel_area: float  # in the raster's map units squared; 0 when geographic
    area_unit: str
    path: str = ""  # a classed GDAL raster's file (its pixels are read for the class counts and areas)
    geotransform: tuple[float, ...] = ()
    ellipsoid: tuple[float, float] = (6378137.0, 6356752.314245)  # semi-major, semi-minor axes (m)
    crs: Any = field(default=None)  # the raster's CRS (zones are transformed into it)
    integer: bool = False  # an integer band: its majority means something
    crs_note: str = ""  # how the zones met the raster's CRS, said in the table's heading
    method: str = ""  # how its areas are measured: "planar in EPSG:25832", "ellipsoidal on WGS 84"

    def statistics(self) -> list[str]:
        """The zonal statistics asked for, in the table's order."""
        keys = ["count", "mean", "min", "max", "stdev"]
        return [*keys, "majority"] if self.integer else keys


def is_polygon_layer(project: QgsProject, ref: str) -> bool:
    """Whether ``ref`` names a polygon layer (then ``describe_layer(at=...)`` summarises zones)."""
    try:
        layer = resolve_vector_layer(project, ref)
    except ToolError:
        return False
    polygons: bool = layer.geometryType() == GEOMETRY_POLYGON
    return polygons


def _plan(project: QgsProject, raster_ref: str, zones_ref: str) -> ZonalPlan:
    raster = resolve_raster(project, raster_ref)
    zones = resolve_vector_layer(project, zones_ref)
    read = plan_raster_read(raster)
    labels = read.labels.get(1, {})
    provider = raster.dataProvider()
    integer = provider is not None and provider.dataType(1) in _integer_types()
    categorical = bool(labels) or (integer and provider.colorTable(1) != [])
    geographic = raster.crs().isGeographic()
    unit = QgsUnitTypes.toAbbreviatedString(raster.crs().mapUnits())
    plan = ZonalPlan(
        raster=raster.name(),
        zones=zones.name(),
        categorical=categorical,
        labels=labels,
        pixel_area=0.0 if geographic else abs(read.pixel_x * read.pixel_y),
        area_unit=unit,
        integer=integer,
        crs_note=_crs_note(zones.crs(), raster.crs()),
        method=ellipsoidal_method(raster.crs().ellipsoidAcronym() or WGS84_ELLIPSOID)
        if geographic
        else f"planar in {crs_name(raster.crs())}",
    )
    path = ""
    if raster.providerType() == "gdal":
        path = QgsProviderRegistry.instance().decodeUri("gdal", raster.source()).get("path") or ""
        path = path if path and Path(path).is_file() else ""
    if path and _rotated(path):
        raise ToolError(
            f"{raster.name()!r} is a rotated grid (its rows do not run east-west): QGIS resamples it north-up for "
            "zonal statistics, which changes counts, shares and means. Warp it north-up first (run_algorithm "
            "gdal:warpreproject, RESAMPLING 0 = nearest neighbour), then summarise the warped raster"
        )
    if categorical and path:
        plan.path, plan.crs = path, raster.crs()
        ellipsoid = QgsEllipsoidUtils.ellipsoidParameters(raster.crs().ellipsoidAcronym())
        if geographic and ellipsoid.valid and ellipsoid.semiMajor > 0 and ellipsoid.semiMinor > 0:
            plan.ellipsoid = (ellipsoid.semiMajor, ellipsoid.semiMinor)
    return plan


def _rotated(path: str) -> bool:
    """Whether a GDAL raster's geotransform has rotation terms (main thread: opens the header only)."""
    from osgeo import gdal

    dataset = gdal.OpenEx(path, gdal.OF_RASTER | gdal.OF_READONLY)
    geotransform = dataset.GetGeoTransform() if dataset is not None else None
    return bool(geotransform and (geotransform[2] or geotransform[4]))


def _crs_note(zones: Any, raster: Any) -> str:
    """The zones are reprojected to the raster's CRS by the algorithms (said); a layer without a CRS is refused.

    Without one the algorithms read the zones' coordinates as the raster's and
    label their output EPSG:4326 (3.22 to 3.44), which the output checks reject
    after the work is done: better to say so before, with the remedy.
    """
    for kind, crs in (("zones", zones), ("raster", raster)):
        if not crs.isValid():
            raise ToolError(
                f"the {kind} layer has no CRS, so zones and pixels cannot be matched: assign it one "
                "(run_algorithm native:assignprojection, or the layer's properties), then ask again"
            )
    if zones != raster:
        return f"; zones reprojected from {_crs_name(zones)} to the raster's {_crs_name(raster)}"
    return ""


def _crs_name(crs: Any) -> str:
    return crs.authid() or short(crs.description(), NAME_MAX_CHARS) or "unknown CRS"


def _integer_types() -> set[Any]:
    from qgis.core import Qgis

    names = ("Byte", "Int8", "UInt16", "Int16", "UInt32", "Int32")
    return {getattr(Qgis.DataType, name) for name in names if hasattr(Qgis.DataType, name)}


def zonal_summary(ctx: ToolContext, raster: str, zones: str) -> ToolResult:
    """Run the zonal algorithm (worker thread) and read its result layer into a table."""
    from geogpt_qgis.tools.processing.runner import ProcessingRunner

    plan = ctx.on_main(_plan, ctx.project, raster, zones)
    name = f"{zones}_{raster}_zonal"
    if plan.categorical:
        parameters = {"INPUT_RASTER": raster, "RASTER_BAND": 1, "INPUT_VECTOR": zones, "COLUMN_PREFIX": "px_"}
        run = ProcessingRunner(ctx).run(ZONAL_HISTOGRAM, parameters, name)
    else:
        parameters = {
            "INPUT": zones,
            "INPUT_RASTER": raster,
            "RASTER_BAND": 1,
            "COLUMN_PREFIX": "z_",
            "STATISTICS": [STATISTICS[key] for key in plan.statistics()],
        }
        run = ProcessingRunner(ctx).run(ZONAL_STATS, parameters, name)
    added = run.artifact.added[-1].layer_id if run.artifact.added else ""
    areas: dict[int, dict[str, tuple[int, float]]] | None = None
    if plan.categorical:
        zones_wkb = ctx.on_main(_zone_geometries, ctx.project, plan, added)
        areas = pixel_areas(plan, zones_wkb) if zones_wkb is not None else None
        if areas is not None:
            ctx.on_main(_rewrite_class_fields, ctx.project, added, areas)
    table = ctx.on_main(_table, ctx.project, plan, added, areas)
    read = {layer.name: layer for layer in run.artifact.layers}  # the run's inputs, with their ids
    layers = tuple(read.get(name, LayerRef(name)) for name in (plan.raster, plan.zones))
    artifact = ToolArtifact(layers=layers, added=run.artifact.added)
    # What the run found in the zones or the raster (invalid or overlapping zones, two georeferencings) stays said.
    notes = [line for line in run.text.splitlines() if line.startswith("Note: input ")]
    return ToolResult("\n".join([run.text.splitlines()[0], table, *notes]), artifact)


def _zone_geometries(project: QgsProject, plan: ZonalPlan, layer_id: str) -> list[tuple[int, bytes]] | None:
    """The zones' polygons in the raster's CRS as WKB (main thread); ``None``: no file or no north-up grid."""
    from osgeo import gdal

    layer = project.mapLayer(layer_id)
    if not plan.path or not isinstance(layer, QgsVectorLayer):
        return None
    dataset = gdal.Open(plan.path)
    geotransform = tuple(dataset.GetGeoTransform()) if dataset is not None else ()
    if len(geotransform) != 6 or geotransform[2] or geotransform[4]:
        return None  # a rotated grid: its rows are not parallels
    plan.geotransform = geotransform
    transform = QgsCoordinateTransform(layer.crs(), plan.crs, project.transformContext())
    zones = []
    for feature in layer.getFeatures(QgsFeatureRequest()):
        geometry = feature.geometry()
        if geometry.transform(transform) == 0:  # Qgis.GeometryOperationResult.Success
            zones.append((feature.id(), bytes(geometry.asWkb())))
    return zones


def pixel_areas(plan: ZonalPlan, zones: list[tuple[int, bytes]]) -> dict[int, dict[str, tuple[int, float]]]:
    """Per zone, each class's pixels whose centre is in the zone: their count and area (worker).

    The area is the pixel area (map units squared) on a projected grid, each
    pixel's ellipsoidal area in m2 on a geographic one.  The counts replace the
    algorithm's (see the module's docstring: non-square pixels).  Nodata pixels
    are counted under ``NODATA`` (with no area).
    """
    import numpy as np
    from osgeo import gdal, ogr

    dataset = gdal.Open(plan.path)
    band = dataset.GetRasterBand(1)
    nodata = band.GetNoDataValue()
    west, width, _r1, north, _r2, height = plan.geotransform
    columns, rows = dataset.RasterXSize, dataset.RasterYSize
    found: dict[int, dict[str, tuple[int, float]]] = {}
    for fid, wkb in zones:
        geometry = ogr.CreateGeometryFromWkb(wkb)
        if geometry is None:
            continue
        left, right, bottom, top = geometry.GetEnvelope()
        c0, c1 = sorted(((left - west) / width, (right - west) / width))
        r0, r1 = sorted(((top - north) / height, (bottom - north) / height))
        c0, r0 = max(math.floor(c0), 0), max(math.floor(r0), 0)
        c1, r1 = min(math.ceil(c1), columns), min(math.ceil(r1), rows)
        found[fid] = {}
        if c1 <= c0 or r1 <= r0:
            continue
        values = band.ReadAsArray(c0, r0, c1 - c0, r1 - r0)
        mask = _burn(geometry, (west + c0 * width, width, 0.0, north + r0 * height, 0.0, height), c1 - c0, r1 - r0)
        hidden = np.zeros_like(mask)
        if nodata is not None:
            hidden |= values == nodata
        if has_mask(band):  # an internal mask or alpha hides pixels QGIS draws transparent
            hidden |= band.GetMaskBand().ReadAsArray(c0, r0, c1 - c0, r1 - r0) == 0
        if nodata is not None or hidden.any():
            found[fid][NODATA] = (int((mask & hidden).sum()), 0.0)
            mask &= ~hidden
        tops = north + (r0 + np.arange(r1 - r0)) * height
        if plan.pixel_area:
            row_area = np.full(r1 - r0, plan.pixel_area)
        else:
            row_area = _band_area(np.radians(tops), np.radians(tops + height), math.radians(abs(width)), plan.ellipsoid)
        weights = np.broadcast_to(row_area[:, None], values.shape)
        values = scaled(band, values)  # classes as QGIS names them (nodata was matched in stored units above)
        for code in np.unique(values[mask]):
            chosen = mask & (values == code)
            found[fid][_code_text(code)] = (int(chosen.sum()), float(weights[chosen].sum()))
    return found


def _rewrite_class_fields(project: QgsProject, layer_id: str, found: dict[int, dict[str, tuple[int, float]]]) -> None:
    """Put the pixel-by-pixel class counts into the result layer's ``px_`` fields (main thread).

    A zone the counts do not cover (the geometry could not be transformed) keeps
    QGIS's figures; a class QGIS did not see gets its field.
    """
    from qgis.core import QgsField

    layer = project.mapLayer(layer_id)
    provider = layer.dataProvider() if isinstance(layer, QgsVectorLayer) else None
    if provider is None:
        return
    codes = sorted({code for counts in found.values() for code in counts}, key=lambda c: (c == NODATA, _code(c)))
    names = layer.fields().names()
    template = next((layer.fields().field(n) for n in names if n.startswith("px_")), None)
    missing = []
    for code in codes:
        if f"px_{code}" not in names:
            new = QgsField(template if template is not None else _count_field())
            new.setName(f"px_{code}")
            missing.append(new)
    if missing and provider.addAttributes(missing):
        layer.updateFields()
    indices = {n[3:]: i for i, n in enumerate(layer.fields().names()) if n.startswith("px_")}
    changes = {
        fid: {index: counts.get(code, (0, 0.0))[0] for code, index in indices.items()} for fid, counts in found.items()
    }
    if changes:
        provider.changeAttributeValues(changes)
        layer.reload()


def _burn(geometry: Any, geotransform: tuple[float, ...], columns: int, rows: int) -> Any:
    """Pixels of a window whose centre lies in ``geometry`` (GDAL's rasterize; QGIS's zonal rule too)."""
    from osgeo import gdal, ogr

    target = gdal.GetDriverByName("MEM").Create("", columns, rows, 1, gdal.GDT_Byte)
    target.SetGeoTransform(geotransform)
    source = ogr.GetDriverByName("Memory").CreateDataSource("")
    layer = source.CreateLayer("zone")
    feature = ogr.Feature(layer.GetLayerDefn())
    feature.SetGeometry(geometry)
    layer.CreateFeature(feature)
    gdal.PushErrorHandler("CPLQuietErrorHandler")  # the zone has no CRS of its own: it is in the raster's
    try:
        gdal.RasterizeLayer(target, [1], layer, burn_values=[1])
    finally:
        gdal.PopErrorHandler()
    return target.GetRasterBand(1).ReadAsArray() == 1


def _band_area(south: Any, north: Any, longitude: float, ellipsoid: tuple[float, float]) -> Any:
    """m2 between two parallels over ``longitude`` radians on an ellipsoid (exact: the authalic integral)."""
    import numpy as np

    a, b = ellipsoid
    e = math.sqrt(max(1.0 - (b * b) / (a * a), 0.0))

    def integral(phi: Any) -> Any:
        s = np.sin(phi)
        if e < 1e-12:
            return 2.0 * s
        return s / (1.0 - e * e * s * s) + np.log((1.0 + e * s) / (1.0 - e * s)) / (2.0 * e)

    return np.abs(b * b * longitude / 2.0 * (integral(north) - integral(south)))


def _code_text(code: Any) -> str:
    value = float(code)
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _table(
    project: QgsProject,
    plan: ZonalPlan,
    layer_id: str,
    areas: dict[int, dict[str, tuple[int, float]]] | None = None,
) -> str:
    layer = project.mapLayer(layer_id)
    if not isinstance(layer, QgsVectorLayer):
        raise ToolError("the zonal algorithm added no layer")
    names = layer.fields().names()
    label_field = next((n for n in names if n.casefold() in LABEL_FIELDS), None)
    rows: list[list[str]] = []
    total = 0
    partial = False
    for feature in layer.getFeatures(QgsFeatureRequest()):
        total += 1
        if len(rows) >= MAX_ZONES_SHOWN:
            continue
        label = python_value(feature[label_field]) if label_field else None
        zone = short(str(label), NAME_MAX_CHARS) if label is not None else f"fid {feature.id()}"
        if plan.categorical:
            rows.append([zone, _shares(plan, feature, names, (areas or {}).get(feature.id()))])
        else:
            values = [python_value(feature[f"z_{key}"]) for key in plan.statistics()]
            cells = [_num(v) for v in values]
            if isinstance(values[0], float) and not values[0].is_integer():
                cells[0] += "*"  # QGIS's rule for a zone with at most one pixel centre (see PARTIAL)
                partial = True
            rows.append([zone, *cells])
    if plan.categorical:
        headers = ["zone", "classes (share of pixels, area)"]
    else:
        headers = ["zone", "pixels", "mean", "min", "max", "std", "majority"][: 1 + len(plan.statistics())]
    more = f"\n({total - MAX_ZONES_SHOWN} more zones in the layer)" if total > MAX_ZONES_SHOWN else ""
    more += "\n" + CENTRES
    if partial:
        more += "\n" + PARTIAL
    if not plan.categorical:
        basis = f"pixels of {plan.pixel_area:g} {plan.area_unit}2" if plan.pixel_area else "geographic raster"
    elif plan.pixel_area:
        basis = f"areas from pixel counts x {plan.pixel_area:g} {plan.area_unit}2, {plan.method}"
    elif areas is not None:
        basis = f"geographic raster: areas sum the area of each pixel, {plan.method}"
    else:
        basis = "geographic raster: pixel shares only, its pixel areas could not be read"

    heading = f"{plan.raster!r} within {plan.zones!r} ({basis}{plan.crs_note}):\n"
    return heading + markdown_table(headers, rows) + more


def _shares(plan: ZonalPlan, feature: Any, names: list[str], areas: dict[str, tuple[int, float]] | None) -> str:
    counts: dict[str, float] = {}
    for name in names:
        if name.startswith("px_") and name != "px_NODATA":
            count = python_value(feature[name]) or 0
            if count:
                counts[name[3:]] = float(count)
    if areas is not None:  # counted with the areas, pixel by pixel
        counts = {code: float(count) for code, (count, _m2) in areas.items() if count and code != NODATA}
    pixels = sum(counts.values())
    if not pixels:
        return "no pixels"
    parts = []
    for code, count in sorted(counts.items(), key=lambda item: -item[1])[:MAX_CLASSES_SHOWN]:
        label = plan.labels.get(_code(code))
        named = f"{code} {label}" if label and label != code else code
        if areas is not None:
            area = _area(areas[code][1], plan)
        elif plan.pixel_area:
            area = _area(count * plan.pixel_area, plan)
        else:
            area = ""
        parts.append(f"{named} {100 * count / pixels:.1f}% {area}".rstrip())
    if len(counts) > MAX_CLASSES_SHOWN:
        parts.append(f"... {len(counts) - MAX_CLASSES_SHOWN} more")
    return "; ".join(parts)


def _code(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _area(area: float, plan: ZonalPlan) -> str:
    if plan.pixel_area and plan.area_unit != "m":
        return f"{area:.4g} {plan.area_unit}2"
    return f"{area / 10_000:.4g} ha"


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return number(value) if isinstance(value, float) else str(value)


def _count_field() -> Any:
    """A 64-bit integer field, spelt the same on QGIS 3.22 (QVariant types) and 3.38+ (QMetaType types)."""
    return QgsVectorLayer("None?field=px:long", "counts", "memory").fields().field(0)
