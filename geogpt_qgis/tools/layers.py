"""Find project layers by what the model calls them, and describe them compactly.

Everything here runs on the main thread (it reads ``QgsProject``), except
``read_sample`` and ``collect_matching_ids``, which iterate a
``QgsVectorLayerFeatureSource`` and are meant for the worker.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from qgis.core import (
    QgsEllipsoidUtils,
    QgsExpression,
    QgsExpressionContext,
    QgsExpressionContextUtils,
    QgsFeatureRequest,
    QgsFeedback,
    QgsMapLayer,
    QgsProject,
    QgsRasterLayer,
    QgsRectangle,
    QgsUnitTypes,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
    QgsWkbTypes,
)
from qgis.PyQt.QtCore import QByteArray, QVariant

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.text import counted, single_line
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.naming import unique_name
from geogpt_qgis.tools.processing.output_checks import check_layer
from geogpt_qgis.tools.thread_guard import assert_main_thread

CANCEL_CHECK_EVERY = 500
MAX_LAYER_NAME_CHARS = 100  # a name the model gives a layer; longer ones are refused (renames) or cut (results)


def ordered_layers(project: QgsProject) -> list[QgsMapLayer]:
    """Project layers in layer-tree order, then any layer not in the tree."""
    assert_main_thread("the project's layers were read")
    in_tree = [node.layer() for node in project.layerTreeRoot().findLayers() if node.layer() is not None]
    seen = {layer.id() for layer in in_tree}
    rest = [layer for layer_id, layer in project.mapLayers().items() if layer_id not in seen]
    return in_tree + rest


def check_new_layer_name(name: str) -> str:
    """``name`` stripped, if the model may give it to a layer; else a ``ToolError`` saying why.

    Layer names are saved in the project and shown to the model in every later
    prompt, so a name must be one short line: a line break or control
    character could make it read as an instruction of its own.
    """
    name = name.strip()
    if not name:
        raise ToolError("the new name is empty")
    if single_line(name) != name:
        raise ToolError(
            "a layer name must be a single line without control characters (line breaks, tabs...); "
            "nothing was changed. Give a plain one-line name."
        )
    if len(name) > MAX_LAYER_NAME_CHARS:
        raise ToolError(
            f"a layer name may have at most {MAX_LAYER_NAME_CHARS} characters, not {len(name)}; "
            "nothing was changed. Give a shorter name."
        )
    return name


def add_result_layer(project: QgsProject, layer: QgsMapLayer, base: str) -> str:
    """Add a tool's result layer under ``base`` (``base_2``... if taken); returns the name it got (main thread).

    ``base`` comes from the model: it is put on one line and cut to ``MAX_LAYER_NAME_CHARS``.
    """
    assert_main_thread("a layer was added to the project")
    base = " ".join(single_line(base).split())[:MAX_LAYER_NAME_CHARS] or "result"
    check_layer(layer, f"the result layer {base!r}")  # coordinates that do not fit their CRS never reach the project
    layer.setName(unique_name(base, {other.name() for other in ordered_layers(project)}))
    project.addMapLayer(layer)
    name: str = layer.name()
    return name


def resolve_layer(project: QgsProject, ref: str) -> QgsMapLayer:
    """The layer whose id or name is ``ref`` (exact, then case-insensitive).

    Raises ``ToolError`` naming the closest layers when nothing matches, and
    listing the ids when a name is ambiguous.
    """
    ref = (ref or "").strip()
    layers = ordered_layers(project)
    by_id = {layer.id(): layer for layer in layers}
    if ref in by_id:
        return by_id[ref]
    for matches in (
        [layer for layer in layers if layer.name() == ref],
        [layer for layer in layers if layer.name().casefold() == ref.casefold()],
    ):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            ids = ", ".join(layer.id() for layer in matches)
            raise ToolError(f"several layers are named {ref!r} (ids: {ids}); pass the layer id instead")
    if not layers:
        raise ToolError(f"no layer {ref!r}: the project has no layers")
    raise ToolError(did_you_mean(ref, [layer.name() for layer in layers], "layer"))


def resolve_vector_layer(project: QgsProject, ref: str) -> QgsVectorLayer:
    """Like ``resolve_layer`` but the layer must be a vector layer."""
    layer = resolve_layer(project, ref)
    if not isinstance(layer, QgsVectorLayer):
        raise ToolError(f"layer {layer.name()!r} is a {layer_kind(layer)} layer; this needs a vector layer")
    return layer


def layer_kind(layer: QgsMapLayer) -> str:
    if isinstance(layer, QgsVectorLayer):
        return "vector"
    if isinstance(layer, QgsRasterLayer):
        return "raster"
    return type(layer).__name__.replace("Qgs", "").replace("Layer", "").lower() or "other"


def geometry_label(layer: QgsMapLayer) -> str:
    """``MultiPolygon``, ``Point``, ``no geometry`` (tables) or ``-`` (not vector)."""
    if not isinstance(layer, QgsVectorLayer):
        return "-"
    if not layer.isSpatial():
        return "no geometry"
    geometry: str = QgsWkbTypes.displayString(layer.wkbType())
    return geometry


def feature_count_label(layer: QgsMapLayer) -> str:
    if isinstance(layer, QgsVectorLayer):
        count = layer.featureCount()
        return f"{count:,}" if count >= 0 else "unknown"
    return "-"


def features_label(layer: QgsMapLayer) -> str:
    """``1 feature``, ``31 features``, ``an unknown number of features``; ``-`` for a layer without features."""
    return counted(layer.featureCount(), "feature") if isinstance(layer, QgsVectorLayer) else "-"


def crs_label(layer: QgsMapLayer) -> str:
    crs = layer.crs()
    if not crs.isValid():
        return "none"
    return crs.authid() or crs.description() or "unknown"


def crs_details(layer: QgsMapLayer) -> str:
    """``EPSG:25832 (ETRS89 / UTM zone 32N), units: meters, projected``."""
    crs = layer.crs()
    if not crs.isValid():
        return "no CRS set"
    units = QgsUnitTypes.toString(crs.mapUnits())
    kind = "geographic" if crs.isGeographic() else "projected"
    return f"{crs.authid() or 'custom'} ({crs.description()}), units: {units}, {kind}"


def is_visible(project: QgsProject, layer: QgsMapLayer) -> bool:
    node = project.layerTreeRoot().findLayer(layer.id())
    return bool(node and node.isVisible())


def format_extent(rect: QgsRectangle, geographic: bool) -> str:
    digits = 5 if geographic else 1
    if rect.isNull():
        return "empty"
    return (
        f"{rect.xMinimum():.{digits}f}, {rect.yMinimum():.{digits}f} : "
        f"{rect.xMaximum():.{digits}f}, {rect.yMaximum():.{digits}f}"
    )


@dataclass
class VectorReadPlan:
    """What the worker needs to read features of a layer without touching the layer."""

    layer_id: str
    layer_name: str
    source: QgsVectorLayerFeatureSource
    field_names: list[str]
    field_types: list[str]
    feature_count: int
    primary_key_indexes: list[int]


def ellipsoid_made_here(ellipsoid: str) -> None:
    """Build ``ellipsoid`` (what ``$area``/``$length`` and expression fields measure on) here, on the main thread.

    QGIS 3.22 caches an ellipsoid with a CRS built on the thread that first asks
    for it.  First asked by a read on a tool call's thread (a filter with
    ``$area``, any layer with an expression field), it died with that thread:
    every later measure on that ellipsoid, the project's own included, was NaN
    (headless, where no map canvas had asked for it first).
    """
    if ellipsoid and ellipsoid.upper() != "NONE":
        QgsEllipsoidUtils.ellipsoidParameters(ellipsoid)


def plan_vector_read(layer: QgsVectorLayer) -> VectorReadPlan:
    """Snapshot a layer for reading off the main thread (call on the main thread)."""
    for project in (QgsProject.instance(), layer.project()):  # the worker's read measures expression fields on it
        if project is not None:
            ellipsoid_made_here(project.ellipsoid())
    fields = layer.fields()
    return VectorReadPlan(
        layer_id=layer.id(),
        layer_name=layer.name(),
        source=QgsVectorLayerFeatureSource(layer),
        field_names=[f.name() for f in fields],
        field_types=[f.typeName() for f in fields],
        feature_count=layer.featureCount(),
        primary_key_indexes=list(layer.primaryKeyAttributes()),
    )


def python_value(value: Any) -> Any:
    """A QGIS attribute value as a plain Python value: ``None`` for NULL, ``datetime`` for Qt dates, bytes for blobs.

    Nothing Qt-typed may reach the model's text, a typed result or the run log: under Qt 5 a NULL
    attribute is a null ``QVariant`` (which prints ``NULL`` and cannot be serialised), dates are
    ``QDate``/``QDateTime``/``QTime`` and binary fields ``QByteArray``.
    """
    if value is None:
        return None
    is_null = getattr(value, "isNull", None)
    if callable(is_null) and is_null():
        return None
    if isinstance(value, QByteArray):
        return bytes(value.data())
    if isinstance(value, QVariant):  # one PyQt did not unwrap
        return python_value(value.value())
    for method in ("toPyDateTime", "toPyDate", "toPyTime"):
        convert = getattr(value, method, None)
        if callable(convert):
            converted = convert()
            return converted if isinstance(converted, (dt.date, dt.time)) else str(value)
    return value


def _feedback_for(cancel: CancelToken) -> tuple[QgsFeedback, Any]:
    feedback = QgsFeedback()
    release = cancel.on_cancel(feedback.cancel)
    return feedback, release


def read_sample(plan: VectorReadPlan, limit: int, cancel: CancelToken) -> list[tuple[Any, ...]]:
    """Attribute rows of the first ``limit`` features (worker thread; no geometry)."""
    request = QgsFeatureRequest()
    request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
    request.setLimit(limit)
    return read_rows(plan, request, None, cancel)


def read_rows(
    plan: VectorReadPlan, request: QgsFeatureRequest, columns: list[str] | None, cancel: CancelToken
) -> list[tuple[Any, ...]]:
    """Attribute rows (all fields, or ``columns``) of the features ``request`` selects (worker thread)."""
    feedback, release = _feedback_for(cancel)
    request.setFeedback(feedback)
    rows: list[tuple[Any, ...]] = []
    try:
        for index, feature in enumerate(plan.source.getFeatures(request)):
            if index % CANCEL_CHECK_EVERY == 0:
                cancel.raise_if_cancelled()
            values = [feature[name] for name in columns] if columns else feature.attributes()
            rows.append(tuple(python_value(v) for v in values))
    finally:
        release()
    cancel.raise_if_cancelled()
    return rows


def collect_matching_ids(plan: VectorReadPlan, request: QgsFeatureRequest, cancel: CancelToken) -> list[int]:
    """Ids of the features ``request`` selects (worker thread, cancellable mid-scan)."""
    feedback, release = _feedback_for(cancel)
    request.setFeedback(feedback)
    ids: list[int] = []
    try:
        for index, feature in enumerate(plan.source.getFeatures(request)):
            if index % CANCEL_CHECK_EVERY == 0:
                cancel.raise_if_cancelled()
            ids.append(feature.id())
    finally:
        release()
    cancel.raise_if_cancelled()
    return ids


def check_evaluates(
    layer: QgsVectorLayer, expression: QgsExpression, what: str, context: QgsExpressionContext | None = None
) -> None:
    """Evaluate ``expression`` on one feature, so a type error comes back now, not as a silent empty result.

    ``what`` names it in the error ("the expression", "the label expression", "rule '...'").
    """
    context = context or QgsExpressionContext(QgsExpressionContextUtils.globalProjectLayerScopes(layer))
    request = QgsFeatureRequest()
    request.setLimit(1)
    for feature in layer.getFeatures(request):
        context.setFeature(feature)
        expression.prepare(context)
        expression.evaluate(context)
        if expression.hasEvalError():
            raise ToolError(f"{what} fails on {layer.name()!r}: {expression.evalErrorString()}")
