"""Before an algorithm runs: what in its inputs changes its figures, and which rule it applies, said in its result.

- Each input layer gets the entry checks (``tools/data_checks``: invalid geometry, holes stored as
  shells, overlapping polygons, Z, mixed types, conflicting georeferencing), named by layer.
- A raster with a band scale/offset read by a GDAL tool that computes on values: GDAL computes on
  the stored numbers (NDVI 0.25 where the physical values give 0.333); the note gives the formula.
- Counting points in polygons: ``native:countpointsinpolygon`` counts a point only in a polygon
  that strictly contains it; the points exactly on a boundary are counted and the rule stated.
- A mean of a rate-like field where a count-like field varies: the unweighted mean is not the
  area's rate; the weighted mean is computed and given beside it.

Bounded: at most ``MAX_POINTS``/``MAX_ZONES``/``MAX_ROWS`` features are read, on the worker thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from qgis.core import (
    QgsFeatureRequest,
    QgsProject,
    QgsRasterLayer,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
)

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.data_checks import CheckPlan, check_notes, plan_checks
from geogpt_qgis.tools.layers import python_value
from geogpt_qgis.tools.processing.params import PreparedParameters

MAX_POINTS = 50_000
MAX_ZONES = 5_000
MAX_ROWS = 100_000
COUNT_POINTS = "native:countpointsinpolygon"
# By name without the provider: QGIS 3.40 runs the renamed native:basicstatisticsforfields (same parameters).
MEAN_ALGORITHMS = {"basicstatisticsforfields": ("INPUT_LAYER", "FIELD_NAME")}
# GDAL tools that copy or move pixels keep a band's scale/offset with them; the others compute on stored numbers.
GDAL_KEEPS_SCALING = frozenset(
    {
        "gdal:warpreproject",
        "gdal:translate",
        "gdal:cliprasterbyextent",
        "gdal:cliprasterbymasklayer",
        "gdal:assignprojection",
        "gdal:buildvirtualraster",
        "gdal:overviews",
        "gdal:gdalinfo",
    }
)
RATE_FIELD = re.compile(r"rate|ratio|pct|percent|share|density|proportion|per_|_per|per1000|average|avg|mean", re.I)
WEIGHT_FIELD = re.compile(r"pop|inhabit|resident|household|people|persons|count|total|number|^n_|weight|labou?r", re.I)


@dataclass
class InputPlan:
    """What the worker checks of an algorithm's inputs (made on the main thread)."""

    checks: list[CheckPlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # found on the main thread already (scale/offset)
    points: QgsVectorLayerFeatureSource | None = None
    zones: QgsVectorLayerFeatureSource | None = None
    mean_source: QgsVectorLayerFeatureSource | None = None
    mean_field: str = ""
    weight_fields: list[str] = field(default_factory=list)


def _layer(project: QgsProject, name: str) -> Any:
    found = project.mapLayersByName(name)
    return found[0] if found else None


def plan_inputs(project: QgsProject, algorithm_id: str, prepared: PreparedParameters) -> InputPlan:
    """Snapshot what to check (main thread): each input layer, and the algorithm-specific checks."""
    plan = InputPlan()
    input_names, values = prepared.input_names, prepared.values
    for name in dict.fromkeys(prepared.input_layers):
        layer = _layer(project, name)
        check = plan_checks(layer)
        if check is not None:
            plan.checks.append(check)
        gdal_computes = algorithm_id.startswith("gdal:") and algorithm_id not in GDAL_KEEPS_SCALING
        if isinstance(layer, QgsRasterLayer) and gdal_computes:
            plan.notes += _scaling_notes(algorithm_id, layer)
    if algorithm_id == COUNT_POINTS:
        points, zones = _layer(project, input_names.get("POINTS", "")), _layer(project, input_names.get("POLYGONS", ""))
        if isinstance(points, QgsVectorLayer) and isinstance(zones, QgsVectorLayer) and points.crs() == zones.crs():
            plan.points, plan.zones = QgsVectorLayerFeatureSource(points), QgsVectorLayerFeatureSource(zones)
    mean_parameters = (
        MEAN_ALGORITHMS.get(algorithm_id.split(":", 1)[-1]) if algorithm_id.startswith(("qgis:", "native:")) else None
    )
    if mean_parameters is not None:
        layer_param, field_param = mean_parameters
        layer = _layer(project, input_names.get(layer_param, ""))
        if isinstance(layer, QgsVectorLayer):
            field_name = values.get(field_param)
            _plan_mean(plan, layer, field_name if isinstance(field_name, str) else "")
    return plan


def _scaling_notes(algorithm_id: str, layer: QgsRasterLayer) -> list[str]:
    provider = layer.dataProvider()
    notes = []
    for band in range(1, layer.bandCount() + 1):
        scale, offset = provider.bandScale(band), provider.bandOffset(band)
        if (scale, offset) != (1.0, 0.0):
            notes.append(
                f"{algorithm_id} computes on the stored numbers of {layer.name()!r} band {band}, ignoring its scale "
                f"{scale:g} and offset {offset:g} (its values are stored × {scale:g} {'+' if offset >= 0 else '-'} "
                f"{abs(offset):g}, as describe_layer shows them): in a formula write that input as "
                f"(A*{scale:g}{offset:+g}) (its own letter), or the result is wrong."
            )
    return notes


def _plan_mean(plan: InputPlan, layer: QgsVectorLayer, field_name: str) -> None:
    fields = layer.fields()
    if not field_name or fields.indexOf(field_name) < 0 or not RATE_FIELD.search(field_name):
        return
    weights = [
        f.name()
        for f in fields
        if f.isNumeric()
        and f.name() != field_name
        and WEIGHT_FIELD.search(f.name())
        and not RATE_FIELD.search(f.name())
    ]
    if weights:
        plan.mean_source, plan.mean_field, plan.weight_fields = QgsVectorLayerFeatureSource(layer), field_name, weights


def input_notes(plan: InputPlan, cancel: CancelToken) -> list[str]:
    """The notes for an algorithm's inputs (worker thread)."""
    notes = list(plan.notes)
    for check in plan.checks:
        notes += [f"input {check.name!r}: {line}" for line in check_notes(check, cancel)]
    if plan.points is not None and plan.zones is not None:
        notes += _boundary_notes(plan.points, plan.zones, cancel)
    if plan.mean_source is not None:
        notes += _weighted_mean_notes(plan, plan.mean_source, cancel)
    return notes


def _wkbs(source: QgsVectorLayerFeatureSource, limit: int, cancel: CancelToken) -> list[bytes]:
    request = QgsFeatureRequest()
    request.setNoAttributes()
    request.setLimit(limit)
    found = []
    for index, feature in enumerate(source.getFeatures(request)):
        if index % 1000 == 0:
            cancel.raise_if_cancelled()
        geometry = feature.geometry()
        if not geometry.isNull():
            found.append(bytes(geometry.asWkb()))
    return found


def _boundary_notes(
    points: QgsVectorLayerFeatureSource, zones: QgsVectorLayerFeatureSource, cancel: CancelToken
) -> list[str]:
    import shapely

    point_geoms = shapely.from_wkb(_wkbs(points, MAX_POINTS, cancel))
    zone_geoms = shapely.from_wkb(_wkbs(zones, MAX_ZONES, cancel))
    if not len(point_geoms) or not len(zone_geoms):
        return []
    edges = shapely.STRtree(shapely.boundary(zone_geoms))
    on_edge, _ = edges.query(point_geoms, predicate="intersects")
    count = len(set(on_edge.tolist()))
    capped = " (of the first points and polygons read)" if len(point_geoms) >= MAX_POINTS else ""
    if not count:
        return []
    return [
        f"{COUNT_POINTS} counts a point only in a polygon that strictly contains it: {count:,} point"
        f"{'s lie' if count != 1 else ' lies'} exactly on a polygon boundary{capped} and "
        f"{'are' if count != 1 else 'is'} counted in no polygon. To count them, join by location with "
        "'intersects' (native:joinattributesbylocation, then aggregate), and say which rule the counts use."
    ]


def _weighted_mean_notes(plan: InputPlan, source: QgsVectorLayerFeatureSource, cancel: CancelToken) -> list[str]:
    request = QgsFeatureRequest()
    request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
    request.setLimit(MAX_ROWS)
    rows = []
    for index, feature in enumerate(source.getFeatures(request)):
        if index % 1000 == 0:
            cancel.raise_if_cancelled()
        rows.append([python_value(feature[name]) for name in (plan.mean_field, *plan.weight_fields)])
    notes = []
    for column, weight in enumerate(plan.weight_fields, start=1):
        pairs = [
            (float(row[0]), float(row[column]))
            for row in rows
            if isinstance(row[0], (int, float)) and isinstance(row[column], (int, float)) and row[column] >= 0
        ]
        weights = [w for _, w in pairs]
        if len(pairs) < 2 or not sum(weights) or max(weights) <= min(weights) * 1.05:
            continue  # the weights hardly vary: the plain mean is the weighted one
        weighted = sum(v * w for v, w in pairs) / sum(weights)
        notes.append(
            f"MEAN is the unweighted mean of {plan.mean_field!r} over features; weighted by {weight!r} (which "
            f"differs from feature to feature) it is {weighted:.6g}. For the rate of the whole area use the weighted "
            f"mean: sum({plan.mean_field} * {weight}) / sum({weight})."
        )
    return notes
