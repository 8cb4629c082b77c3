"""The styling part of the maps family: ``style_layer`` sets a real QGIS renderer, and undoes it.

Three steps, so nothing slow runs on the main thread and a bad call changes
nothing: the arguments are checked (worker), the layer, field, ramp and rules
are checked against the project (main thread), the values or raster
statistics are read and the classes computed (worker), and only then is the
renderer built and set, the replaced style kept for undo, and the map and
legend refreshed (main thread).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from qgis.core import (
    QgsFeatureRequest,
    QgsMapLayer,
    QgsPalettedRasterRenderer,
    QgsRasterLayer,
    QgsVectorLayer,
    QgsWkbTypes,
)

from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Expression
from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.layers import VectorReadPlan, plan_vector_read, read_rows, resolve_layer
from geogpt_qgis.tools.maps import ramps, renderers
from geogpt_qgis.tools.maps.classify import GRADUATED, METHOD_WORDS, class_ranges, describe_ranges
from geogpt_qgis.tools.maps.style_checks import (
    RAMPED,
    RASTER_METHODS,
    VECTOR_METHODS,
    StyleRequest,
    check_field,
    check_request,
    check_rule,
    valid_method,
)
from geogpt_qgis.tools.maps.style_history import SavedStyle, StyleHistory
from geogpt_qgis.tools.rasters import RasterReadPlan, band_summary, gdal_labels, plan_raster_read

DEFAULT_CLASSES = 5
MAX_CATEGORIES = 12  # more distinct values: the 11 most common get a class, the rest one "other" class
SHOWN_CATEGORIES = 12


@dataclass
class StylePlan:
    """The layer and what must be read for it (made on the main thread, read on the worker)."""

    request: StyleRequest
    layer_id: str
    layer_name: str
    ramp_name: str = ""
    vector: VectorReadPlan | None = None
    raster: RasterReadPlan | None = None


@dataclass
class StyleData:
    """What the worker read: category values, class ranges or the raster's range and codes."""

    values: list[Any] = dataclasses.field(default_factory=list)
    other: int = 0  # distinct values folded into the "other" class
    ranges: list[Any] = dataclasses.field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    codes: list[float] = dataclasses.field(default_factory=list)
    labels: dict[float, str] = dataclasses.field(default_factory=dict)  # a paletted raster's class names


class StylePart:
    """``style_layer``: single, categorized, graduated, rule-based, heatmap and raster styles, with undo."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.history = StyleHistory()  # "undo that" within this session's conversations
        project = getattr(ctx, "project", None)
        if project is not None:
            project.cleared.connect(self.history.clear)  # another project may reuse the same layer ids

    def tools(self) -> list[Any]:
        return [self.style_layer]

    def style_layer(
        self,
        layer: str,
        method: str = "",
        field: Expression = "",
        classes: int | None = None,
        color: str = "",
        opacity: float | None = None,
        size: float | None = None,
    ) -> ToolResult:
        """Style a layer.

        Args:
            method: single, categorized, quantile, jenks, rules, heatmap, pseudocolor, hillshade, undo
            size: mm: point size, line or outline width
        """
        if method.strip().lower() == "undo":
            return self.ctx.on_main(self._undo, layer)
        classes = DEFAULT_CLASSES if classes is None else classes
        request = check_request(method, field, classes, color, opacity, size)
        plan = self.ctx.on_main(self._plan, layer, request)
        data = self._read(plan)
        return self.ctx.on_main(self._apply, plan, data)

    # -- main thread -------------------------------------------------------
    def _plan(self, ref: str, request: StyleRequest) -> StylePlan:
        target = resolve_layer(self.ctx.project, ref)
        if isinstance(target, QgsRasterLayer):
            return self._plan_raster(target, request)
        if not isinstance(target, QgsVectorLayer):
            raise ToolError(f"{target.name()!r} is not a vector or raster layer, so it cannot be styled")
        if not target.isSpatial():
            raise ToolError(f"{target.name()!r} has no geometry, so it has no map style")
        request.method = request.method or "single"
        if request.method == "single" and request.ramp:
            ramps.parse_colors(request.ramp)  # a colour the method left unread: say why it is not one
        method = valid_method(request.method, VECTOR_METHODS, RASTER_METHODS, target.name(), "vector")
        plan = StylePlan(request, target.id(), target.name(), vector=plan_vector_read(target))
        check_field(target, request)
        if method == "heatmap" and target.geometryType() != QgsWkbTypes.GeometryType.PointGeometry:
            raise ToolError(f"a heatmap needs a point layer; {target.name()!r} is not one")
        for expression, _ in request.rules:
            check_rule(target, expression)
        if method in RAMPED:
            plan.ramp_name, _ = ramps.ramp(request.ramp, _default_ramp(method))
        return plan

    def _plan_raster(self, target: QgsRasterLayer, request: StyleRequest) -> StylePlan:
        request.method = {"": "pseudocolor", "categorized": "paletted"}.get(request.method, request.method)
        method = valid_method(request.method, RASTER_METHODS, VECTOR_METHODS, target.name(), "raster")
        look = request.look
        if request.field or look.fill is not None or look.outline is not None or look.size is not None:
            raise ToolError(
                "a raster style takes method, color (a colour ramp, e.g. Viridis) and opacity; "
                "field, colours and size are for vector layers"
            )
        plan = StylePlan(request, target.id(), target.name())
        if method != "hillshade":
            if target.providerType() != "gdal":
                raise ToolError(f"{target.name()!r} is a {target.providerType()} raster; {method} needs a file raster")
            plan.raster = plan_raster_read(target)
            plan.ramp_name, _ = ramps.ramp(request.ramp, ramps.RASTER_RAMP)
        return plan

    def _apply(self, plan: StylePlan, data: StyleData) -> ToolResult:
        target = self.ctx.project.mapLayer(plan.layer_id)
        if target is None:
            raise ToolError(f"the layer {plan.layer_name!r} was removed from the project while styling")
        previous = SavedStyle.of(target)
        text = self._set_renderer(target, plan, data)
        self.history.push(target.id(), previous)
        self._refresh(target)
        done = ToolArtifact(layers=(LayerRef.of(target),))
        return ToolResult(text + " (method=undo restores the previous style)", done)

    def _set_renderer(self, target: QgsMapLayer, plan: StylePlan, data: StyleData) -> str:
        request, name = plan.request, repr(target.name())
        method, look = request.method, request.look
        if isinstance(target, QgsRasterLayer):
            return _style_raster(target, method, data, plan.ramp_name, look.opacity)
        if not isinstance(target, QgsVectorLayer):
            raise ToolError(f"{name} is no longer a vector layer")
        if method == "single":
            target.setRenderer(renderers.single(target, look))
            symbol = target.renderer().symbol()
            sized = f", {renderers.size_words(symbol)}" if look.size is not None else ""
            return (
                f"Styled {name} with a single symbol: colour {symbol.color().name()}, "
                f"opacity {symbol.opacity():g}{sized}."
            )
        ramp_name, ramp = ramps.ramp(plan.ramp_name, plan.ramp_name) if plan.ramp_name else ("", None)
        if method == "categorized" and ramp is not None:
            target.setRenderer(renderers.categorized(target, request.field, data.values, data.other > 0, ramp, look))
            return f"Styled {name} categorized by {request.field} (ramp {ramp_name}): " + _categories_text(data)
        if method in GRADUATED and ramp is not None:
            target.setRenderer(renderers.graduated(target, request.field, method, data.ranges, ramp, look))
            return (
                f"Styled {name} graduated: {len(data.ranges)} {METHOD_WORDS[method]} classes of {request.field} "
                f"(ramp {ramp_name}): {describe_ranges(data.ranges)}."
            )
        if method == "rules":
            target.setRenderer(renderers.rule_based(target, request.rules, look))
            listed = "; ".join(f"{expression} → {color.name()}" for expression, color in request.rules)
            return f"Styled {name} rule-based, {len(request.rules)} rules: {listed}."
        if ramp is None:
            raise ToolError(f"{method} needs a colour ramp")
        target.setRenderer(renderers.heatmap(request.field, ramp))
        weight = f", weighted by {request.field}" if request.field else ""
        radius = plain_number(renderers.HEATMAP_RADIUS_MM)
        return f"Styled {name} as a heatmap (radius {radius} mm, ramp {ramp_name}{weight})."

    def _undo(self, ref: str) -> ToolResult:
        target = resolve_layer(self.ctx.project, ref)
        saved = self.history.pop(target.id())
        if saved is None:
            raise ToolError(f"no earlier style of {target.name()!r} to restore: style_layer has not changed it")
        replaced = renderers.renderer_words(target)
        try:
            saved.restore(target)
        except RuntimeError as exc:
            self.history.push(target.id(), saved)
            raise ToolError(str(exc)) from exc
        self._refresh(target)
        left = self.history.depth(target.id())
        more = f" {left} earlier style{'s' if left != 1 else ''} can still be restored." if left else ""
        return ToolResult(
            f"Restored the previous style of {target.name()!r}: {renderers.renderer_words(target)} "
            f"(replacing {replaced}).{more}",
            ToolArtifact(layers=(LayerRef.of(target),)),
        )

    def _refresh(self, target: QgsMapLayer) -> None:
        target.triggerRepaint()
        target.emitStyleChanged()
        if self.ctx.iface is not None:
            view = self.ctx.iface.layerTreeView()
            if view is not None:
                view.refreshLayerSymbology(target.id())

    # -- worker ------------------------------------------------------------
    def _read(self, plan: StylePlan) -> StyleData:
        method = plan.request.method
        if plan.raster is not None:
            low, high, codes = band_summary(plan.raster, self.ctx.cancel)
            if low is None or high is None:
                raise ToolError(f"every pixel of {plan.layer_name!r} is nodata; there is nothing to style")
            if method == "paletted" and not codes:
                raise ToolError(
                    f"paletted needs a band of at most 32 whole-number values; {plan.layer_name!r} has a "
                    f"range of {plain_number(low)} to {plain_number(high)}: use method pseudocolor"
                )
            labels = (plan.raster.labels.get(1) or _gdal_labels(plan.raster.source)) if method == "paletted" else {}
            return StyleData(minimum=low, maximum=high, codes=codes, labels=labels)
        if method not in ("categorized", *GRADUATED) or plan.vector is None:
            return StyleData()
        values = self._field_values(plan.vector, plan.request.field)
        if method == "categorized":
            return _categories(values)
        numbers = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(float(v))]
        if not numbers:
            raise ToolError(f"{plan.request.field!r} of {plan.layer_name!r} has no values to classify (all NULL)")
        return StyleData(ranges=class_ranges(method, numbers, plan.request.classes))

    def _field_values(self, vector: VectorReadPlan, name: str) -> list[Any]:
        request = QgsFeatureRequest()
        request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
        request.setSubsetOfAttributes([name], vector.source.fields())
        return [row[0] for row in read_rows(vector, request, [name], self.ctx.cancel)]


def _default_ramp(method: str) -> str:
    if method == "categorized":
        return ramps.CATEGORY_RAMP
    return ramps.HEATMAP_RAMP if method == "heatmap" else ramps.GRADUATED_RAMP


def _categories(values: list[Any]) -> StyleData:
    counts = Counter(values)
    if len(counts) <= MAX_CATEGORIES:
        return StyleData(values=_sorted(counts))
    common = [value for value, _ in counts.most_common(MAX_CATEGORIES - 1)]
    return StyleData(values=_sorted(common), other=len(counts) - len(common))


def _sorted(values: Any) -> list[Any]:
    """Numbers in order, then text, then NULL."""

    def key(value: Any) -> tuple[int, float, str]:
        if value is None:
            return (2, 0.0, "")
        if isinstance(value, int | float):
            return (0, float(value), "")
        return (1, 0.0, str(value))

    return sorted(values, key=key)


def _categories_text(data: StyleData) -> str:
    shown = ", ".join("NULL" if v is None else str(v) for v in data.values[:SHOWN_CATEGORIES])
    if data.other:
        return f"{len(data.values)} most common values ({shown}) and 'other' for the {data.other} other values."
    return f"{len(data.values)} classes: {shown}."


def _gdal_labels(source: str) -> dict[float, str]:
    """GDAL's category names or attribute-table names of band 1 (worker)."""
    from osgeo import gdal

    dataset = gdal.OpenEx(source, gdal.OF_RASTER | gdal.OF_READONLY)  # kept: a band must not outlive it
    return gdal_labels(dataset.GetRasterBand(1))


def _style_raster(layer: QgsRasterLayer, method: str, data: StyleData, ramp_name: str, opacity: float | None) -> str:
    from geogpt_qgis.tools.raster_outputs import OutputStats, style

    name = repr(layer.name())
    if method == "hillshade":
        layer.setRenderer(renderers.hillshade(layer))
        text = f"Styled {name} as a hillshade (sun from 315°, 45° high)."
    elif method == "paletted":
        style(layer, OutputStats(layer.id(), data.minimum, data.maximum, data.codes), False, ramp_name)
        renderer = layer.renderer()
        for code, label in data.labels.items():  # the class names it had, or GDAL's
            if isinstance(renderer, QgsPalettedRasterRenderer) and code in data.codes:
                renderer.setLabel(code, label)
        codes = ", ".join(
            f"{plain_number(c)} {data.labels[c]}" if data.labels.get(c) else plain_number(c)
            for c in data.codes[:SHOWN_CATEGORIES]
        )
        text = f"Styled {name} paletted (ramp {ramp_name}): {len(data.codes)} values: {codes}."
    else:
        style(layer, OutputStats(layer.id(), data.minimum, data.maximum, []), False, ramp_name)
        low, high = plain_number(data.minimum or 0.0), plain_number(data.maximum or 0.0)
        text = f"Styled {name} singleband pseudocolor (ramp {ramp_name}) from {low} to {high} (band 1 min and max)."
    if opacity is not None and layer.renderer() is not None:
        layer.renderer().setOpacity(opacity)
    return text
