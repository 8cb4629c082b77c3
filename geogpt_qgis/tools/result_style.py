"""The style of a vector layer a tool made: the map under it, its source and its selection stay readable.

QGIS gives a new layer an opaque fill in a random colour; a buffer added
above the layer it was made from then hides that layer and its selection.
A result gets a see-through fill with a clear outline (polygons), a bold
line (lines) or a ring (points), in one of a few colours that none of the
demo's layers nor QGIS's yellow selection use.  Rasters get theirs from
``raster_outputs``.
"""

from __future__ import annotations

import zlib

from qgis.core import (
    QgsFillSymbol,
    QgsLineSymbol,
    QgsMarkerSymbol,
    QgsSingleSymbolRenderer,
    QgsSymbol,
    QgsVectorLayer,
    QgsWkbTypes,
)

from geogpt_qgis.tools.thread_guard import assert_main_thread

# Magenta, orange, teal, violet: strong beside the map's pastels and the yellow selection.
PALETTE = ("230,0,126", "232,106,0", "0,150,136", "106,61,154")
FILL_ALPHA = 90  # of 255: about 35 % opaque, so what lies under the result shows through
OUTLINE_WIDTH = "0.6"  # millimetres
LINE_WIDTH = "0.9"
RING_SIZE = "4.2"  # a point result rings the point under it instead of covering it


def result_symbol(layer: QgsVectorLayer) -> QgsSymbol | None:
    """The symbol for a result layer of ``layer``'s geometry type; ``None`` for a layer without geometry."""
    colour = PALETTE[zlib.crc32(layer.name().encode("utf-8")) % len(PALETTE)]
    kind = layer.geometryType()
    if kind == QgsWkbTypes.GeometryType.PolygonGeometry:
        return QgsFillSymbol.createSimple(
            {
                "color": f"{colour},{FILL_ALPHA}",
                "outline_color": f"{colour},255",
                "outline_width": OUTLINE_WIDTH,
            }
        )
    if kind == QgsWkbTypes.GeometryType.LineGeometry:
        return QgsLineSymbol.createSimple({"line_color": f"{colour},255", "line_width": LINE_WIDTH})
    if kind == QgsWkbTypes.GeometryType.PointGeometry:
        return QgsMarkerSymbol.createSimple(
            {
                "name": "circle",
                "color": "0,0,0,0",
                "outline_color": f"{colour},255",
                "outline_width": OUTLINE_WIDTH,
                "size": RING_SIZE,
            }
        )
    return None


def style_result(layer: QgsVectorLayer) -> None:
    """Give a freshly made result layer the result style (main thread, before it is added to the project)."""
    assert_main_thread("a result layer was styled")
    symbol = result_symbol(layer)
    if symbol is not None:
        layer.setRenderer(QgsSingleSymbolRenderer(symbol))
