"""Zonal summaries of a raster within the polygons of a layer, through QGIS's own zonal algorithms.

A continuous band goes through ``native:zonalstatisticsfb`` (count, mean, min,
max), a categorical one through ``native:zonalhistogram`` (pixels per class);
both exist in the registry from QGIS 3.16 to 3.44 and reproject the zones to the
raster's CRS themselves.  They run through the processing runner, so the
result is a layer in the project stored like any other result, and the model
reads a table: per zone the statistics, or each class's share of the zone's
pixels with its label, and the area they cover.  Areas come from pixel counts
times the pixel area when the raster is projected (its map units squared, in
m2 / ha for metres); for a geographic raster, whose pixels have no fixed area,
the share is applied to the zone's ellipsoidal area instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qgis.core import QgsDistanceArea, QgsFeatureRequest, QgsProject, QgsUnitTypes, QgsVectorLayer

from geogpt_qgis.core.artifacts import ToolArtifact, ToolResult
from geogpt_qgis.core.text import NAME_MAX_CHARS, markdown_table, short
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.layers import python_value, resolve_vector_layer
from geogpt_qgis.tools.processing.compat import GEOMETRY_POLYGON
from geogpt_qgis.tools.raster_sample import LABEL_FIELDS, resolve_raster
from geogpt_qgis.tools.rasters import plan_raster_read

ZONAL_STATS = "native:zonalstatisticsfb"
ZONAL_HISTOGRAM = "native:zonalhistogram"
STATISTICS = [0, 2, 5, 6]  # count, mean, min, max (the enum's order has not changed since 3.16)
MAX_ZONES_SHOWN = 30
MAX_CLASSES_SHOWN = 8


@dataclass
class ZonalPlan:
    """What the main thread found out about the raster and the zones."""

    raster: str
    zones: str
    categorical: bool
    labels: dict[float, str]
    pixel_area: float  # in the raster's map units squared; 0 when geographic
    area_unit: str


def is_polygon_layer(project: QgsProject, ref: str) -> bool:
    """Whether ``ref`` names a polygon layer (then ``describe_layer(at=...)`` summarises zones)."""
    try:
        layer = resolve_vector_layer(project, ref)
    except ToolError:
        return False
    return layer.geometryType() == GEOMETRY_POLYGON


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
    return ZonalPlan(
        raster=raster.name(),
        zones=zones.name(),
        categorical=categorical,
        labels=labels,
        pixel_area=0.0 if geographic else abs(read.pixel_x * read.pixel_y),
        area_unit=unit,
    )


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
            "STATISTICS": STATISTICS,
        }
        run = ProcessingRunner(ctx).run(ZONAL_STATS, parameters, name)
    added = run.artifact.added[-1].layer_id if run.artifact.added else ""
    table = ctx.on_main(_table, ctx.project, plan, added)
    artifact = ToolArtifact(layers=(plan.raster, plan.zones), added=run.artifact.added)
    return ToolResult(run.text.splitlines()[0] + "\n" + table, artifact)


def _table(project: QgsProject, plan: ZonalPlan, layer_id: str) -> str:
    layer = project.mapLayer(layer_id)
    if not isinstance(layer, QgsVectorLayer):
        raise ToolError("the zonal algorithm added no layer")
    names = layer.fields().names()
    label_field = next((n for n in names if n.casefold() in LABEL_FIELDS), None)
    measure = QgsDistanceArea()
    measure.setSourceCrs(layer.crs(), project.transformContext())
    measure.setEllipsoid(project.ellipsoid() if project.ellipsoid() != "NONE" else "EPSG:7030")
    rows: list[list[str]] = []
    total = 0
    for feature in layer.getFeatures(QgsFeatureRequest()):
        total += 1
        if len(rows) >= MAX_ZONES_SHOWN:
            continue
        label = python_value(feature[label_field]) if label_field else None
        zone = short(str(label), NAME_MAX_CHARS) if label is not None else f"fid {feature.id()}"
        if plan.categorical:
            rows.append([zone, _shares(plan, feature, names, measure)])
        else:
            values = [python_value(feature[f"z_{key}"]) for key in ("count", "mean", "min", "max")]
            rows.append([zone, *(_num(v) for v in values)])
    headers = (
        ["zone", "classes (share of pixels, area)"] if plan.categorical else ["zone", "pixels", "mean", "min", "max"]
    )
    more = f"\n({total - MAX_ZONES_SHOWN} more zones in the layer)" if total > MAX_ZONES_SHOWN else ""
    basis = (
        f"areas from pixel counts x {plan.pixel_area:g} {plan.area_unit}2"
        if plan.pixel_area
        else "geographic raster: areas are each share of the zone's ellipsoidal area"
    )
    return f"{plan.raster!r} within {plan.zones!r} ({basis}):\n" + markdown_table(headers, rows) + more


def _shares(plan: ZonalPlan, feature: Any, names: list[str], measure: QgsDistanceArea) -> str:
    counts: dict[str, float] = {}
    for name in names:
        if name.startswith("px_") and name != "px_NODATA":
            count = python_value(feature[name]) or 0
            if count:
                counts[name[3:]] = float(count)
    pixels = sum(counts.values())
    if not pixels:
        return "no pixels"
    zone_area = 0.0 if plan.pixel_area else measure.measureArea(feature.geometry())
    parts = []
    for code, count in sorted(counts.items(), key=lambda item: -item[1])[:MAX_CLASSES_SHOWN]:
        label = plan.labels.get(_code(code))
        named = f"{code} {label}" if label else code
        area = count * plan.pixel_area if plan.pixel_area else zone_area * count / pixels
        parts.append(f"{named} {100 * count / pixels:.1f}% {_area(area, plan)}")
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
    return f"{value:.6g}" if isinstance(value, float) else str(value)
