"""The styles style_layer replaced, per layer, so "undo that" restores the one before.

Kept as the layer's symbology XML (QGIS's own style export, the Symbology
category: the renderer with its symbols, classes and ramp) and a clone of its
renderer, set back after the XML: QGIS 3.40 and 3.44 lose a graduated
renderer's label format ("trim zeroes") in the XML round trip, so the legend
would read differently after an undo.  In memory: one
stack per layer id for the tools' session, bounded in depth and in layers,
emptied when the project is closed (a reopened project has the same layer
ids).  Main thread only (it reads and writes layers).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from qgis.core import QgsMapLayer, QgsRasterLayer, QgsReadWriteContext, QgsVectorLayer
from qgis.PyQt.QtXml import QDomDocument

MAX_DEPTH = 20
MAX_LAYERS = 200
SYMBOLOGY = QgsMapLayer.StyleCategory.Symbology


def symbology_xml(layer: QgsMapLayer) -> str:
    """The layer's symbology as QGIS style XML."""
    document = QDomDocument()
    layer.exportNamedStyle(document, QgsReadWriteContext(), SYMBOLOGY)
    xml: str = document.toString()
    return xml


def apply_symbology_xml(layer: QgsMapLayer, xml: str) -> None:
    """Set the layer's symbology from ``symbology_xml`` output."""
    document = QDomDocument()
    document.setContent(xml)
    ok, error = layer.importNamedStyle(document, SYMBOLOGY)
    if not ok:
        raise RuntimeError(f"the saved style could not be restored: {error}")


@dataclass(frozen=True)
class SavedStyle:
    """A layer's symbology as XML, with an exact copy of its renderer."""

    xml: str
    renderer: Any  # a clone of the layer's QgsFeatureRenderer or QgsRasterRenderer, or None

    @classmethod
    def of(cls, layer: QgsMapLayer) -> SavedStyle:
        renderer = layer.renderer() if isinstance(layer, (QgsVectorLayer, QgsRasterLayer)) else None
        return cls(symbology_xml(layer), renderer.clone() if renderer is not None else None)

    def restore(self, layer: QgsMapLayer) -> None:
        """The XML first (opacity, blending...), then the renderer itself."""
        apply_symbology_xml(layer, self.xml)
        if self.renderer is not None and isinstance(layer, (QgsVectorLayer, QgsRasterLayer)):
            layer.setRenderer(self.renderer.clone())


class StyleHistory:
    """A bounded stack of earlier styles per layer id."""

    def __init__(self) -> None:
        self._stacks: OrderedDict[str, list[SavedStyle]] = OrderedDict()

    def push(self, layer_id: str, saved: SavedStyle) -> None:
        stack = self._stacks.setdefault(layer_id, [])
        stack.append(saved)
        del stack[:-MAX_DEPTH]
        self._stacks.move_to_end(layer_id)
        while len(self._stacks) > MAX_LAYERS:
            self._stacks.popitem(last=False)

    def pop(self, layer_id: str) -> SavedStyle | None:
        stack = self._stacks.get(layer_id)
        if not stack:
            return None
        saved = stack.pop()
        if not stack:
            del self._stacks[layer_id]
        return saved

    def depth(self, layer_id: str) -> int:
        return len(self._stacks.get(layer_id, ()))

    def clear(self) -> None:
        self._stacks.clear()
