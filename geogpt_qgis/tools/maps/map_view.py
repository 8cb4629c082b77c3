"""What "the current map" is when exporting: the canvas the user sees, or the project's saved view headless.

With QGIS's window (``iface``), the map canvas's extent and CRS are what the
user looks at.  Without it (the CLI, the MCP server) there is no canvas: the
project's saved default view is used, or else the full extent of the visible
layers, in the project's CRS.  The layers are the visible ones of the layer
tree, in its drawing order (a custom layer order included).  Main thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsCsException,
    QgsMapLayer,
    QgsProject,
    QgsRectangle,
)

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.thread_guard import assert_main_thread

HEADLESS_WIDTH_PX = 1200  # a plain image without a canvas: this wide at 96 dpi, as tall as the view's shape
SCREEN_DPI = 96.0
MARGIN = 0.02  # around the layers' full extent, so nothing touches the frame


@dataclass
class MapView:
    """The extent, CRS and layers to draw; ``size``/``dpi``: the canvas's pixels, when there is a canvas."""

    extent: QgsRectangle
    crs: QgsCoordinateReferenceSystem
    layers: list[QgsMapLayer]
    source: str  # "the map canvas", "the project's saved view" or "the visible layers' full extent"
    size: tuple[int, int] = (0, 0)
    dpi: float = SCREEN_DPI

    def image_pixels(self, dpi: int) -> tuple[int, int]:
        """The plain image's size at ``dpi``: the canvas scaled from its own dpi, or the headless width."""
        width, height = self.size
        if not width or not height:
            width = HEADLESS_WIDTH_PX
            height = max(1, round(HEADLESS_WIDTH_PX * self.extent.height() / max(self.extent.width(), 1e-12)))
        factor = dpi / self.dpi
        return max(1, round(width * factor)), max(1, round(height * factor))


def visible_layers(project: QgsProject) -> list[QgsMapLayer]:
    """The layers checked visible in the layer tree, in drawing order (top first)."""
    root = project.layerTreeRoot()
    shown = []
    for layer in root.layerOrder():
        node = root.findLayer(layer.id())
        if node is not None and node.isVisible() and layer.isValid():
            shown.append(layer)
    return shown


def current_view(project: QgsProject, iface: Any) -> MapView:
    """The view to export: the canvas with ``iface``, otherwise the project's saved view or full extent."""
    assert_main_thread("the map view was read")
    layers = visible_layers(project)
    if not layers:
        raise ToolError("no layer is visible in the layer tree, so the map would be empty; show a layer first")
    canvas = iface.mapCanvas() if iface is not None else None
    if canvas is not None:
        settings = canvas.mapSettings()
        extent = canvas.extent()
        size = settings.outputSize()
        if not extent.isEmpty() and size.width() > 0 and size.height() > 0:
            return MapView(
                QgsRectangle(extent),
                settings.destinationCrs(),
                layers,
                "the map canvas",
                (size.width(), size.height()),
                settings.outputDpi() or SCREEN_DPI,
            )
    crs = project.crs()
    saved = project.viewSettings().defaultViewExtent()
    if not saved.isEmpty():
        extent = _transformed(QgsRectangle(saved), saved.crs(), crs, project)
        if extent is not None and not extent.isEmpty():
            return MapView(extent, crs, layers, "the project's saved view")
    full = QgsRectangle()
    full.setMinimal()
    for layer in layers:
        box = _transformed(layer.extent(), layer.crs(), crs, project)
        if box is not None and not box.isEmpty():
            full.combineExtentWith(box)
    if full.isEmpty():
        raise ToolError("the visible layers have no extent to draw (are they empty?)")
    full.grow(max(full.width(), full.height()) * MARGIN)
    return MapView(full, crs, layers, "the visible layers' full extent")


def _transformed(
    box: QgsRectangle, source: QgsCoordinateReferenceSystem, target: QgsCoordinateReferenceSystem, project: QgsProject
) -> QgsRectangle | None:
    if not source.isValid() or not target.isValid() or source == target:
        return box
    try:
        return QgsCoordinateTransform(source, target, project).transformBoundingBox(box)
    except QgsCsException:
        return None
