"""Values of a raster's bands at points: coordinates the model gives, or the features of a layer (a place too).

``plan_sample`` runs on the main thread: it resolves the raster and the points
and puts every point into the raster's CRS (``QgsCoordinateTransform``, so a
point layer or coordinates in another CRS are reprojected, never read as if
they were in the raster's).  ``read_samples`` then reads one pixel per point
and band with GDAL on the worker.  A point off the raster and a nodata pixel
are said in words, never as a number that could pass for a value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsFeatureRequest,
    QgsGeometry,
    QgsPointXY,
    QgsProject,
    QgsRasterLayer,
    QgsVectorLayer,
)

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.core.text import NAME_MAX_CHARS, markdown_table, short
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layers import layer_kind, python_value, resolve_layer, resolve_vector_layer
from geogpt_qgis.tools.processing.compat import GEOMETRY_POINT
from geogpt_qgis.tools.rasters import RasterReadPlan, gdal_labels, number, plan_raster_read, read_window, shown_values

MAX_POINTS = 50
MAX_BANDS = 12
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PAIR = re.compile(rf"^\s*({_NUMBER})\s*[, ]\s*({_NUMBER})\s*$")
_CRS_PREFIX = re.compile(r"^\s*([A-Za-z]+:\d+)\s*[:,;]?\s*")
LABEL_FIELDS = ("name", "label", "title", "navn")


@dataclass
class SamplePlan:
    """Points in the raster's CRS with their labels and the coordinates to show (made on the main thread)."""

    raster: RasterReadPlan
    labels: list[str]
    shown: list[tuple[float, float]]  # as given (coordinates) or in the layer's CRS
    points: list[tuple[float, float]]  # in the raster's CRS
    source_note: str


def resolve_raster(project: QgsProject, ref: str) -> QgsRasterLayer:
    """Like ``resolve_vector_layer``, for a raster: a vector passed here is refused with what it is."""
    layer = resolve_layer(project, ref)
    if not isinstance(layer, QgsRasterLayer):
        raise ToolError(f"layer {layer.name()!r} is a {layer_kind(layer)} layer; this needs a raster layer")
    return layer


def parse_coordinates(text: str) -> tuple[str, list[tuple[float, float]]] | None:
    """``'x y; x y'`` or ``'x,y; x,y'``, optionally after a CRS (``'EPSG:4326 x y'``): the CRS ("" if none)
    and the pairs; ``None`` when ``text`` is not coordinates (then it names a layer)."""
    crs = ""
    prefix = _CRS_PREFIX.match(text)
    if prefix:
        crs, text = prefix.group(1), text[prefix.end() :]
    parts = [part for part in text.split(";") if part.strip()]
    pairs = [_PAIR.match(part) for part in parts]
    if not parts or not all(pairs):
        return None
    return crs, [(float(m.group(1)), float(m.group(2))) for m in pairs if m]


def plan_sample(project: QgsProject, layer: str, at: str) -> SamplePlan:
    """Resolve the raster and the points (main thread)."""
    raster = resolve_raster(project, layer)
    parsed = parse_coordinates(at or "")
    if parsed is not None:
        crs, coordinates = parsed
        source = QgsCoordinateReferenceSystem(crs) if crs else project.crs()
        if not source.isValid():
            raise ToolError(f"unknown CRS {crs!r}; give an authority id such as 'EPSG:4326' or leave it empty")
        labels = [f"point {i}" for i in range(1, len(coordinates) + 1)]
        shown = coordinates
        note = f"coordinates in {source.authid() or 'the project CRS'}"
    else:
        points_layer = resolve_vector_layer(project, at)
        if not points_layer.isSpatial():
            raise ToolError(f"layer {points_layer.name()!r} has no geometry; give a point layer or coordinates 'x y'")
        source = points_layer.crs()
        labels, shown, polygonal = _layer_points(points_layer)
        note = f"features of {points_layer.name()!r}" + (" (a point inside each)" if polygonal else "")
    if not shown:
        raise ToolError("no points to sample: give coordinates 'x y; x y' or a layer with features")
    if len(shown) > MAX_POINTS:
        raise ToolError(
            f"more than {MAX_POINTS} points; sample at most {MAX_POINTS} at a time (filter the layer first)"
        )
    transform = QgsCoordinateTransform(source, raster.crs(), project.transformContext())
    points = []
    for x, y in shown:
        try:
            point = transform.transform(QgsPointXY(x, y))
        except Exception as error:  # noqa: BLE001 - QgsCsException: worded for the model
            raise ToolError(f"cannot put ({x:g}, {y:g}) into the raster's CRS: {error}") from None
        points.append((point.x(), point.y()))
    read_plan = plan_raster_read(raster)
    if not read_plan.source:
        raise ToolError(f"{raster.name()!r} is not a GDAL raster (provider {raster.providerType()}); cannot sample it")
    return SamplePlan(read_plan, labels, list(shown), points, note)


def _layer_points(layer: QgsVectorLayer) -> tuple[list[str], list[tuple[float, float]], bool]:
    names = {name.casefold(): name for name in layer.fields().names()}
    label_field = next((names[key] for key in LABEL_FIELDS if key in names), None)
    request = QgsFeatureRequest()
    request.setLimit(MAX_POINTS + 1)
    labels, points = [], []
    polygonal = layer.geometryType() != GEOMETRY_POINT
    for feature in layer.getFeatures(request):
        geometry: QgsGeometry = feature.geometry()
        if geometry.isNull() or geometry.isEmpty():
            continue
        point = (geometry.pointOnSurface() if polygonal else geometry.centroid()).asPoint()
        value = python_value(feature[label_field]) if label_field else None
        labels.append(short(str(value), NAME_MAX_CHARS) if value is not None else f"fid {feature.id()}")
        points.append((point.x(), point.y()))
    return labels, points, polygonal


def read_samples(plan: SamplePlan, cancel: CancelToken) -> str:
    """The table of values (worker thread): one row per point, one column per band."""
    from osgeo import gdal

    gdal.UseExceptions()
    dataset = gdal.OpenEx(plan.raster.source, gdal.OF_RASTER | gdal.OF_READONLY)
    inverse = gdal.InvGeoTransform(dataset.GetGeoTransform())
    bands = {index: dataset.GetRasterBand(index) for index in range(1, min(dataset.RasterCount, MAX_BANDS) + 1)}
    labels = {index: plan.raster.labels.get(index) or gdal_labels(band) for index, band in bands.items()}
    rows = []
    for label, (sx, sy), (x, y) in zip(plan.labels, plan.shown, plan.points, strict=True):
        cancel.raise_if_cancelled()
        col = math.floor(inverse[0] + inverse[1] * x + inverse[2] * y)
        row = math.floor(inverse[3] + inverse[4] * x + inverse[5] * y)
        inside = 0 <= col < dataset.RasterXSize and 0 <= row < dataset.RasterYSize
        cells = [label, f"{sx:.10g}", f"{sy:.10g}"]  # UTM northings 10 m apart differ in the 7th digit
        for index, band in bands.items():
            if not inside:
                cells.append("outside the raster")
                continue
            cell, masked = read_window(band, col, row, 1, 1)
            shown = shown_values(band, cell)  # nodata compared in the band's own type (float32 0.1 is not 0.1)
            if masked:
                cells.append("nodata (hidden by the mask band)")
                continue
            if shown.size == 0:
                cells.append("nodata (no value here)")
                continue
            value = shown[0].item()
            if labels[index] and float(value) in labels[index]:
                cells.append(f"{value:g} {labels[index][float(value)]}")
            else:
                cells.append(number(value))
        rows.append(cells)
    headers = ["point", "x", "y", *(f"band {index}" for index in bands)]
    head = f"Values of {plan.raster.name!r} at {len(rows)} points ({plan.source_note}):"
    return head + "\n" + markdown_table(headers, rows)
