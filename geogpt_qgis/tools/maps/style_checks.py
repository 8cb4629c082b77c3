"""style_layer's arguments checked before anything changes: the method, colours, rules, field and expressions.

``check_request`` needs no project (worker thread); ``check_field`` and
``check_rule`` look at the layer (main thread).  Every refusal says what would
work: the valid methods, the closest field names, the numeric fields, the
syntax of a rule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from qgis.core import (
    QgsExpression,
    QgsFeatureRequest,
    QgsVectorLayer,
)
from qgis.PyQt.QtGui import QColor

from geogpt_qgis.core.fuzzy import closest_names, did_you_mean
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layers import check_evaluates
from geogpt_qgis.tools.maps import ramps, renderers
from geogpt_qgis.tools.maps.classify import GRADUATED, MAX_CLASSES
from geogpt_qgis.tools.safety.expressions import require_safe_expression

VECTOR_METHODS = ("single", "categorized", *GRADUATED, "rules", "heatmap")
RASTER_METHODS = ("pseudocolor", "paletted", "hillshade")
ALIASES = {
    "single symbol": "single",
    "simple": "single",
    "categorised": "categorized",
    "categories": "categorized",
    "unique values": "categorized",
    "equal interval": "equal",
    "natural breaks": "jenks",
    "pretty breaks": "pretty",
    "rule-based": "rules",
    "rule based": "rules",
    "pseudocolour": "pseudocolor",
    "singleband pseudocolor": "pseudocolor",
}
RAMPED = {"categorized", *GRADUATED, "heatmap", "pseudocolor", "paletted"}
MAX_SIZE_MM = 50.0  # a point 5 cm across, a line or outline 5 cm wide: past that, a unit mistake


@dataclass
class StyleRequest:
    """The call's arguments, checked and parsed (worker)."""

    method: str
    field: str
    classes: int
    ramp: str
    look: renderers.SymbolLook
    rules: list[tuple[str, QColor]] = dataclasses.field(default_factory=list)


def check_request(
    method: str, field: str, classes: int, color: str, opacity: float | None, size: float | None = None
) -> StyleRequest:
    """The arguments parsed and checked against each other, before the project is looked at."""
    method = " ".join(method.strip().lower().replace("_", " ").split())
    method = ALIASES.get(method, method)
    if method not in (*VECTOR_METHODS, *RASTER_METHODS, ""):
        close = closest_names(method, [*VECTOR_METHODS, *RASTER_METHODS])
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        vector, raster = ", ".join(VECTOR_METHODS), ", ".join(RASTER_METHODS)
        raise ToolError(f"no style method {method!r}; {hint}vector: {vector}; raster: {raster}")
    if method in GRADUATED and not 2 <= classes <= MAX_CLASSES:
        raise ToolError(f"classes must be 2 to {MAX_CLASSES}, not {classes}")
    if opacity is not None and not 0.0 <= opacity <= 1.0:
        raise ToolError(f"opacity must be between 0 and 1, not {opacity:g}")
    if opacity is not None and method == "heatmap":
        raise ToolError("a heatmap has no opacity of its own; call again without opacity")
    _check_size(method, size)
    text, ramp, fill, outline = color.strip(), "", None, None
    if method in RAMPED:
        ramp = text  # these methods colour along a ramp: color names it
    elif method == "" and text and not _colours(text):
        ramp = text  # a raster's ramp; for a vector, its colour error comes once the layer is known
    elif method in ("single", ""):
        fill, outline = ramps.parse_colors(text)
    elif text:
        hint = "rules take their colours in field: 'expr=colour;...'" if method == "rules" else "it uses none"
        raise ToolError(f"color is a colour for single or a ramp for {', '.join(sorted(RAMPED))}; {method}: {hint}")
    look = renderers.SymbolLook(fill, outline, opacity, size)
    if method == "rules":
        return StyleRequest(method, "", classes, ramp, look, parse_rules(field))
    if field.strip() and method in ("single", ""):
        raise ToolError("field needs a method: categorized, or quantile/equal/jenks/pretty for a numeric field")
    return StyleRequest(method, field.strip(), classes, ramp, look)


def _check_size(method: str, size: float | None) -> None:
    """A size in millimetres for the symbols: more than 0, at most ``MAX_SIZE_MM``, and not for heatmaps or rasters."""
    if size is None:
        return
    if not 0.0 < size <= MAX_SIZE_MM:
        raise ToolError(
            f"size is in millimetres, more than 0 and at most {MAX_SIZE_MM:g} (e.g. 2 for a point, "
            f"0.5 for a line or outline), not {size:g}"
        )
    if method in ("heatmap", *RASTER_METHODS):
        raise ToolError(f"a {method} style has no symbol size; call again without size")


def _colours(text: str) -> bool:
    return all(QColor("".join(part.split())).isValid() or not part.strip() for part in text.split(","))


def parse_rules(text: str) -> list[tuple[str, QColor]]:
    """``"pupils" > 300=red; ELSE=grey`` as ``[(expression, colour)]``: the colour follows each rule's last '='."""
    rules = []
    for number, part in enumerate((p for p in text.split(";") if p.strip()), start=1):
        expression, sep, color = part.rpartition("=")
        if not sep or not expression.strip() or not QColor("".join(color.split())).isValid():
            raise ToolError(
                f"rule {number} {part.strip()!r} needs 'expression=colour', e.g. \"pupils\" > 300=red; ELSE=grey"
            )
        rules.append((expression.strip(), ramps.parse_color(color)))
    if not rules:
        raise ToolError("rules need field='expression=colour; ...', e.g. \"pupils\" > 300=red; ELSE=grey")
    return rules


def valid_method(method: str, valid: tuple[str, ...], other: tuple[str, ...], name: str, kind: str) -> str:
    if method in valid:
        return method
    other_kind = "raster" if kind == "vector" else "vector"
    raise ToolError(f"{method} is a {other_kind} style; {name!r} is a {kind} layer: use {', '.join(valid)}")


def check_field(layer: QgsVectorLayer, request: StyleRequest) -> None:
    if not request.field and request.method in ("categorized", *GRADUATED):
        raise ToolError(f"{request.method} needs a field: the attribute to classify by")
    if not request.field:
        return
    fields = layer.fields()
    names = fields.names()
    if request.field not in names:
        raise ToolError(did_you_mean(request.field, names, f"field in {layer.name()!r}"))
    if request.method in (*GRADUATED, "heatmap") and not fields.field(request.field).isNumeric():
        keys = set(layer.primaryKeyAttributes())
        numeric = [f.name() for i, f in enumerate(fields) if f.isNumeric() and i not in keys]
        listed = ", ".join(numeric) if numeric else "none"
        raise ToolError(
            f"{request.field!r} is not numeric; {request.method} needs a numeric field (numeric fields: {listed}); "
            "use categorized for text"
        )


def check_rule(layer: QgsVectorLayer, expression: str) -> None:
    if expression.strip().upper() == "ELSE":
        return
    parsed = QgsExpression(expression)
    if parsed.hasParserError():
        problem = " ".join(parsed.parserErrorString().split())
        raise ToolError(f"rule {expression!r} is not a valid expression: {problem}")
    require_safe_expression(expression, "the rule")
    names = layer.fields().names()
    for column in sorted(parsed.referencedColumns()):
        if column != QgsFeatureRequest.ALL_ATTRIBUTES and column not in names:
            raise ToolError(did_you_mean(column, names, f"field in {layer.name()!r}") + " (in a rule)")
    check_evaluates(layer, parsed, f"rule {expression!r}")  # not a rule that silently matches nothing
