"""Build real QGIS renderers from checked inputs (main thread): what the Layer Styling panel then shows.

Every builder gets values already read and classes already computed (on the
worker), and only assembles symbols and renderer objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qgis.core import (
    Qgis,
    QgsCategorizedSymbolRenderer,
    QgsColorRamp,
    QgsExpression,
    QgsFeatureRenderer,
    QgsFillSymbol,
    QgsGraduatedSymbolRenderer,
    QgsHeatmapRenderer,
    QgsHillshadeRenderer,
    QgsLineSymbol,
    QgsMarkerSymbol,
    QgsRendererCategory,
    QgsRendererRange,
    QgsRuleBasedRenderer,
    QgsSingleSymbolRenderer,
    QgsSymbol,
    QgsUnitTypes,
    QgsVectorLayer,
)
from qgis.PyQt.QtGui import QColor

from geogpt_qgis.tools.maps.classify import ClassRange, method_object
from geogpt_qgis.tools.processing.compat import enum_member

OTHER_COLOR = "#bdbdbd"
HEATMAP_RADIUS_MM = 10.0
MILLIMETERS = enum_member((Qgis, "RenderUnit", "Millimeters"), (QgsUnitTypes, "RenderUnit", "RenderMillimeters"))


@dataclass(frozen=True)
class SymbolLook:
    """What the call says about every symbol: fill, outline, opacity and size; ``None`` keeps the default.

    ``size`` (mm) is the one size that matters for the geometry: a point's
    size, a line's width, a polygon's outline width.
    """

    fill: QColor | None = None
    outline: QColor | None = None
    opacity: float | None = None
    size: float | None = None


def base_symbol(layer: QgsVectorLayer, look: SymbolLook, keep_current: bool = False) -> QgsSymbol:
    """The layer's default symbol (or, with ``keep_current``, its single symbol) with ``look`` applied."""
    renderer = layer.renderer()
    if keep_current and isinstance(renderer, QgsSingleSymbolRenderer) and renderer.symbol() is not None:
        symbol = renderer.symbol().clone()
    else:
        symbol = QgsSymbol.defaultSymbol(layer.geometryType())
    if look.fill is not None:
        symbol.setColor(look.fill)
    if look.opacity is not None:
        symbol.setOpacity(look.opacity)
    if look.outline is not None:
        for index in range(symbol.symbolLayerCount()):
            _call(symbol.symbolLayer(index), "setStrokeColor", look.outline)
    if look.size is not None:
        set_size(symbol, look.size)
    return symbol


def set_size(symbol: QgsSymbol, size: float) -> None:
    """A point's size, a line's width or a polygon's outline width, in millimetres."""
    if isinstance(symbol, QgsMarkerSymbol):
        symbol.setSizeUnit(MILLIMETERS)
        symbol.setSize(size)
    elif isinstance(symbol, QgsLineSymbol):
        symbol.setWidthUnit(MILLIMETERS)
        symbol.setWidth(size)
    elif isinstance(symbol, QgsFillSymbol):
        for index in range(symbol.symbolLayerCount()):
            _call(symbol.symbolLayer(index), "setStrokeWidthUnit", MILLIMETERS)
            _call(symbol.symbolLayer(index), "setStrokeWidth", size)


def size_words(symbol: QgsSymbol) -> str:
    """``size 3 mm``, ``width 0.8 mm`` or ``outline width 1 mm``: what ``set_size`` set, read back."""
    if isinstance(symbol, QgsMarkerSymbol):
        return f"size {symbol.size():g} mm"
    if isinstance(symbol, QgsLineSymbol):
        return f"width {symbol.width():g} mm"
    layers = [symbol.symbolLayer(i) for i in range(symbol.symbolLayerCount())]
    widths = [item.strokeWidth() for item in layers if callable(getattr(item, "strokeWidth", None))]
    return f"outline width {widths[0]:g} mm" if widths else "no outline to size"


def _call(item: Any, method: str, value: Any) -> None:
    setter = getattr(item, method, None)
    if callable(setter):
        setter(value)


def single(layer: QgsVectorLayer, look: SymbolLook) -> QgsFeatureRenderer:
    """One symbol; without a fill colour the current single symbol's colour is kept."""
    return QgsSingleSymbolRenderer(base_symbol(layer, look, keep_current=look.fill is None))


def categorized(
    layer: QgsVectorLayer, field: str, values: list[Any], other: bool, ramp: QgsColorRamp, look: SymbolLook
) -> QgsFeatureRenderer:
    """One class per value, coloured along ``ramp``; ``other`` adds the catch-all class (QGIS's empty value)."""
    categories = []
    for index, value in enumerate(values):
        symbol = base_symbol(layer, look)
        symbol.setColor(ramp.color(index / max(len(values) - 1, 1)))
        categories.append(QgsRendererCategory(value, symbol, "NULL" if value is None else str(value)))
    if other:
        symbol = base_symbol(layer, look)
        symbol.setColor(QColor(OTHER_COLOR))
        categories.append(QgsRendererCategory("", symbol, "other"))
    renderer = QgsCategorizedSymbolRenderer(field, categories)
    renderer.setSourceColorRamp(ramp.clone())
    return renderer


def graduated(
    layer: QgsVectorLayer, field: str, method: str, ranges: list[ClassRange], ramp: QgsColorRamp, look: SymbolLook
) -> QgsFeatureRenderer:
    """Class ranges coloured along ``ramp``, with the QGIS classification method the panel shows."""
    renderer = QgsGraduatedSymbolRenderer(field)
    renderer.setClassificationMethod(method_object(method))
    for item in ranges:
        renderer.addClassRange(QgsRendererRange(item.lower, item.upper, base_symbol(layer, look), item.label))
    renderer.setSourceSymbol(base_symbol(layer, look))
    renderer.updateColorRamp(ramp.clone())
    return renderer


def rule_based(layer: QgsVectorLayer, rules: list[tuple[str, QColor]], look: SymbolLook) -> QgsFeatureRenderer:
    """One rule per ``(expression, colour)``; the expression ``ELSE`` catches the features no rule matched."""
    root = QgsRuleBasedRenderer.Rule(None)
    for expression, color in rules:
        symbol = base_symbol(layer, look)
        symbol.setColor(color)
        root.appendChild(QgsRuleBasedRenderer.Rule(symbol, 0, 0, expression, expression))
    return QgsRuleBasedRenderer(root)


def heatmap(field: str, ramp: QgsColorRamp) -> QgsFeatureRenderer:
    """A heatmap of the points, ``field`` weighting each one (none: all count the same)."""
    renderer = QgsHeatmapRenderer()
    renderer.setColorRamp(ramp.clone())
    renderer.setRadius(HEATMAP_RADIUS_MM)
    if field:
        renderer.setWeightExpression(QgsExpression.quotedColumnRef(field))
    return renderer


def hillshade(layer: Any) -> QgsHillshadeRenderer:
    """QGIS's hillshade renderer on band 1, sun from the north-west at 45°."""
    renderer = QgsHillshadeRenderer(layer.dataProvider(), 1, 315.0, 45.0)
    renderer.setZFactor(1.0)
    return renderer


RENDERER_WORDS = {
    "singleSymbol": "single symbol",
    "categorizedSymbol": "categorized",
    "graduatedSymbol": "graduated",
    "RuleRenderer": "rule-based",
    "heatmapRenderer": "heatmap",
    "nullSymbol": "no symbols",
    "singlebandpseudocolor": "singleband pseudocolor",
    "paletted": "paletted",
    "hillshade": "hillshade",
    "singlebandgray": "singleband gray",
    "multibandcolor": "multiband color",
}


def renderer_words(layer: Any) -> str:
    """``graduated``, ``singleband pseudocolor``...: the layer's renderer as the panel names it."""
    renderer = layer.renderer()
    if renderer is None:
        return "no renderer"
    kind: str = renderer.type()
    return RENDERER_WORDS.get(kind, kind)
