"""The styles style_layer replaced, per layer, so "undo that" restores the one before.

Kept as the layer's symbology XML (QGIS's own style export, the Symbology
category: the renderer with its symbols, classes and ramp), in memory: one
stack per layer id for the tools' session, bounded in depth and in layers,
emptied when the project is closed (a reopened project has the same layer
ids).  Main thread only (it reads and writes layers).
"""

from __future__ import annotations

from collections import OrderedDict

from qgis.core import QgsMapLayer, QgsReadWriteContext
from qgis.PyQt.QtXml import QDomDocument

MAX_DEPTH = 20
MAX_LAYERS = 200
SYMBOLOGY = QgsMapLayer.StyleCategory.Symbology


def symbology_xml(layer: QgsMapLayer) -> str:
    """The layer's symbology as QGIS style XML."""
    document = QDomDocument()
    layer.exportNamedStyle(document, QgsReadWriteContext(), SYMBOLOGY)
    return document.toString()


def apply_symbology_xml(layer: QgsMapLayer, xml: str) -> None:
    """Set the layer's symbology from ``symbology_xml`` output."""
    document = QDomDocument()
    document.setContent(xml)
    ok, error = layer.importNamedStyle(document, SYMBOLOGY)
    if not ok:
        raise RuntimeError(f"the saved style could not be restored: {error}")


class StyleHistory:
    """A bounded stack of earlier styles per layer id."""

    def __init__(self) -> None:
        self._stacks: OrderedDict[str, list[str]] = OrderedDict()

    def push(self, layer_id: str, xml: str) -> None:
        stack = self._stacks.setdefault(layer_id, [])
        stack.append(xml)
        del stack[:-MAX_DEPTH]
        self._stacks.move_to_end(layer_id)
        while len(self._stacks) > MAX_LAYERS:
            self._stacks.popitem(last=False)

    def pop(self, layer_id: str) -> str | None:
        stack = self._stacks.get(layer_id)
        if not stack:
            return None
        xml = stack.pop()
        if not stack:
            del self._stacks[layer_id]
        return xml

    def depth(self, layer_id: str) -> int:
        return len(self._stacks.get(layer_id, ()))

    def clear(self) -> None:
        self._stacks.clear()
