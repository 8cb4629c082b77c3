"""Labels: a layer's features labelled with a field or an expression, readable on any map.

The result is QGIS's own simple labeling (``QgsPalLayerSettings``), so the user
finds it in the Layer Styling panel and can keep refining it.  The tool picks
what a cartographer would for the geometry type (points: the cartographic
positions around the point; lines: curved along the line; polygons: centred
inside), always draws a text buffer so labels stay legible over imagery, and
can hide labels when zoomed out.  The labeling each call replaces is kept (per
layer, for the session) so ``text="undo"`` puts the previous labels back.  An expression is parsed and checked like
every other expression (``tools/safety/expressions.py``) and tried on one
feature before the layer changes, so a bad call changes nothing.
"""

from __future__ import annotations

import math
from typing import Any

from qgis.core import (
    Qgis,
    QgsAbstractVectorLayerLabeling,
    QgsExpression,
    QgsFeatureRequest,
    QgsPalLayerSettings,
    QgsTextBufferSettings,
    QgsTextFormat,
    QgsUnitTypes,
    QgsVectorLayer,
    QgsVectorLayerSimpleLabeling,
)
from qgis.PyQt.QtGui import QColor

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, gated
from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Expression
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.base import ToolContext, ToolError, ToolFunction
from geogpt_qgis.tools.layers import check_evaluates, layer_kind, resolve_layer
from geogpt_qgis.tools.processing.compat import (
    GEOMETRY_LINE,
    GEOMETRY_POINT,
    GEOMETRY_POLYGON,
    enum_member,
    enum_value,
)
from geogpt_qgis.tools.safety.expressions import expression_request, require_safe_expression
from geogpt_qgis.tools.safety.targets import named_layer_targets

OFF_WORDS = frozenset({"off", "none", "no", "remove", "clear"})
DEFAULT_SIZE = 10.0
MIN_SIZE, MAX_SIZE = 4.0, 72.0
BUFFER_MM = 1.0
UNDO = "undo"
MAX_DEPTH, MAX_LAYERS = 20, 200


def _placement(member: str) -> Any:
    """A placement by name: ``Qgis.LabelPlacement`` (3.26+) or ``QgsPalLayerSettings.Placement`` (3.22)."""
    return enum_member((Qgis, "LabelPlacement", member), (QgsPalLayerSettings, "Placement", member))


# What each geometry type gets, and how the result names it.
PLACEMENTS: dict[int, tuple[str, str]] = {
    GEOMETRY_POINT: ("OrderedPositionsAroundPoint", "around each point"),
    GEOMETRY_LINE: ("Curved", "curved along each line"),
    GEOMETRY_POLYGON: ("OverPoint", "centred inside each polygon"),
}
RENDER_POINTS = enum_member((Qgis, "RenderUnit", "Points"), (QgsUnitTypes, "RenderUnit", "RenderPoints"))
RENDER_MILLIMETERS = enum_member((Qgis, "RenderUnit", "Millimeters"), (QgsUnitTypes, "RenderUnit", "RenderMillimeters"))


class LabelPart:
    """The ``label_layer`` tool of the maps family."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.history = LabelHistory()
        project = getattr(ctx, "project", None)
        if project is not None:
            project.cleared.connect(self.history.clear)  # another project may reuse the same layer ids

    def tools(self) -> list[ToolFunction]:
        return [self.label_layer]

    def preview_label_layer(
        self, layer: str, text: str, size: float | None = None, max_scale: float | None = None
    ) -> ApprovalRequest | None:
        """Only an expression with side effects asks; it is parsed, not run."""
        request = expression_request(f"Label {layer!r}", [("the label", text)])
        if request is not None:
            request.targets = self.ctx.on_main(named_layer_targets, self.ctx.project, layer, ("label",))
        return request

    @gated(preview_label_layer)
    def label_layer(
        self, layer: str, text: Expression, size: float | None = None, max_scale: float | None = None
    ) -> ToolResult:
        """Label by field or expression (or off, undo); hidden beyond 1:max_scale."""
        if not text.strip():
            raise ToolError('give text: a field name, an expression, or "off" to remove the labels')
        size = DEFAULT_SIZE if size is None else float(size)
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise ToolError(f"size is in points, from {MIN_SIZE:g} to {MAX_SIZE:g}, not {size:g}")
        if max_scale is not None and not 0 <= max_scale < math.inf:
            raise ToolError(f"max_scale is a scale denominator such as 25000, not {max_scale:g}")
        return self.ctx.on_main(self._label, layer, text.strip(), size, max_scale or None, approval_granted())

    def _label(self, ref: str, text: str, size: float, max_scale: float | None, approved: bool) -> ToolResult:
        target = resolve_layer(self.ctx.project, ref)
        if not isinstance(target, QgsVectorLayer):
            raise ToolError(f"{target.name()!r} is a {layer_kind(target)} layer; only vector layers have labels")
        if not target.isSpatial():
            raise ToolError(f"{target.name()!r} has no geometry, so there is nothing to place labels on")
        done = ToolArtifact(layers=(LayerRef.of(target),))
        is_field = text in target.fields().names()
        if text.casefold() == UNDO and not is_field:
            return ToolResult(self._undo(target), done)
        if text.casefold() in OFF_WORDS and not is_field:
            had = target.labelsEnabled()
            if had:
                self.history.push(target)
            target.setLabelsEnabled(False)
            _refresh(target)
            said = f"Removed the labels of {target.name()!r}." if had else f"{target.name()!r} had no labels."
            return ToolResult(said, done)
        field, expression = _label_source(target, text, approved)
        placement_name, where = PLACEMENTS.get(enum_value(target.geometryType()), PLACEMENTS[GEOMETRY_POINT])
        settings = QgsPalLayerSettings()
        settings.fieldName = field or expression
        settings.isExpression = not field
        settings.drawLabels = True
        settings.placement = _placement(placement_name)
        settings.centroidInside = True  # polygons: the centroid is moved inside concave shapes
        settings.setFormat(_text_format(size))
        if max_scale:
            settings.scaleVisibility = True
            settings.minimumScale = float(max_scale)  # the most zoomed-out scale that still shows labels
            settings.maximumScale = 0.0
        self.history.push(target)
        target.setLabeling(QgsVectorLayerSimpleLabeling(settings))
        target.setLabelsEnabled(True)
        _refresh(target)
        what = f"field {field!r}" if field else f"the expression {expression}"
        scale = f"; shown at scales larger than 1:{plain_number(max_scale)}" if max_scale else ""
        return ToolResult(
            f"Labelled {target.name()!r} with {what} ({size:g} pt, white buffer, {where}{scale}). "
            'text="undo" restores the previous labels.',
            done,
        )

    def _undo(self, target: QgsVectorLayer) -> str:
        earlier = self.history.pop(target.id())
        if earlier is None:
            raise ToolError(f"no earlier labels of {target.name()!r} to restore: label_layer has not changed them")
        enabled, labeling = earlier
        target.setLabeling(labeling)
        target.setLabelsEnabled(enabled)
        _refresh(target)
        if not enabled:
            return f"Restored the previous labels of {target.name()!r}: none shown."
        settings = labeling.settings() if isinstance(labeling, QgsVectorLayerSimpleLabeling) else None
        shown = f" with {settings.fieldName!r}" if settings is not None else ""
        return f"Restored the previous labels of {target.name()!r}{shown}."


class LabelHistory:
    """The labelings label_layer replaced, a bounded stack per layer id (main thread)."""

    def __init__(self) -> None:
        self._stacks: dict[str, list[tuple[bool, QgsAbstractVectorLayerLabeling | None]]] = {}

    def push(self, layer: QgsVectorLayer) -> None:
        current = layer.labeling()
        stack = self._stacks.pop(layer.id(), [])  # re-inserted last: the least recently used go first
        stack.append((layer.labelsEnabled(), current.clone() if current is not None else None))
        self._stacks[layer.id()] = stack[-MAX_DEPTH:]
        while len(self._stacks) > MAX_LAYERS:
            del self._stacks[next(iter(self._stacks))]

    def pop(self, layer_id: str) -> tuple[bool, QgsAbstractVectorLayerLabeling | None] | None:
        stack = self._stacks.get(layer_id)
        if not stack:
            return None
        earlier = stack.pop()
        if not stack:
            del self._stacks[layer_id]
        return earlier

    def clear(self) -> None:
        self._stacks.clear()


def _label_source(layer: QgsVectorLayer, text: str, approved: bool) -> tuple[str, str]:
    """``(field, "")`` for a field name, ``("", expression)`` for a checked expression; else ``ToolError``."""
    names = layer.fields().names()
    if text in names:
        return text, ""
    same = [name for name in names if name.casefold() == text.casefold()]
    if len(same) == 1:
        return same[0], ""
    parsed = QgsExpression(text)
    if parsed.hasParserError():
        raise ToolError(
            f"{text!r} is neither a field of {layer.name()!r} nor a valid expression "
            f"({' '.join(parsed.parserErrorString().split())}); fields: {', '.join(names[:12])}"
        )
    require_safe_expression(text, "the label expression", approved)
    for column in sorted(parsed.referencedColumns()):
        if column != QgsFeatureRequest.ALL_ATTRIBUTES and column not in names:
            raise ToolError(did_you_mean(column, names, f"field in {layer.name()!r}"))
    check_evaluates(layer, parsed, "the label expression")
    return "", text


def _refresh(layer: QgsVectorLayer) -> None:
    """Redraw the layer and tell the Layer Styling panel and legend that its style changed."""
    layer.triggerRepaint()
    layer.emitStyleChanged()


def _text_format(size: float) -> QgsTextFormat:
    """Dark text in points with a white buffer: readable over any basemap."""
    text_format = QgsTextFormat()
    text_format.setSize(size)
    text_format.setSizeUnit(RENDER_POINTS)
    text_format.setColor(QColor("#202020"))
    buffer = QgsTextBufferSettings()
    buffer.setEnabled(True)
    buffer.setSize(BUFFER_MM)
    buffer.setSizeUnit(RENDER_MILLIMETERS)
    buffer.setColor(QColor("white"))
    text_format.setBuffer(buffer)
    return text_format
