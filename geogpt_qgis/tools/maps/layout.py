"""A print layout made from the map view: map, title, legend, scale bar, north arrow and attribution.

It is an ordinary QGIS print layout kept in the project's Layout Manager, so
the user can open it and refine it like one they made.  Its name is the
title (or "GeoGPT map"); a layout this module made is marked with the title
it was made for, so exporting again with the same title replaces that layout
(what a user expects after "make the title bigger... export again") while a
layout the user made and named the same is never touched: the new one gets
a " (2)" suffix instead.  Layouts are not thread-safe: everything here runs
on the main thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from qgis.core import (
    Qgis,
    QgsApplication,
    QgsLayerTreeGroup,
    QgsLayoutExporter,
    QgsLayoutItemLabel,
    QgsLayoutItemLegend,
    QgsLayoutItemMap,
    QgsLayoutItemPicture,
    QgsLayoutItemScaleBar,
    QgsLayoutPoint,
    QgsLayoutSize,
    QgsMapLayer,
    QgsPrintLayout,
    QgsProject,
    QgsRectangle,
    QgsTextFormat,
    QgsUnitTypes,
)
from qgis.PyQt.QtGui import QFont

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.export_target import Page
from geogpt_qgis.tools.maps.map_view import MapView
from geogpt_qgis.tools.processing.compat import enum_member
from geogpt_qgis.tools.thread_guard import assert_main_thread

DEFAULT_NAME = "GeoGPT map"
MARK = "geogpt/export_title"  # custom property: the title a layout was made for
NORTH_ARROW_SVG = "arrows/NorthArrow_02.svg"
MADE_WITH = "Made with QGIS"
# Item ids, so the user (and the tests) find each item in the Layout Manager's item list.
MAP_ID, TITLE_ID, LEGEND_ID = "map", "title", "legend"
SCALE_BAR_ID, NORTH_ID, ATTRIBUTION_ID = "scale bar", "north arrow", "attribution"
MARGIN_MM, GAP_MM, TITLE_MM, FOOTER_MM = 10.0, 4.0, 12.0, 14.0
NORTH_MM = (12.0, 18.0)
_MILLIMETERS = enum_member((Qgis, "LayoutUnit", "Millimeters"), (QgsUnitTypes, "LayoutUnit", "LayoutMillimeters"))
_SUCCESS = enum_member((QgsLayoutExporter, "ExportResult", "Success"))


@dataclass
class MadeLayout:
    """The layout made and what it shows, for the tool's answer."""

    layout: QgsPrintLayout
    name: str
    replaced: bool
    legend_layers: list[str] = field(default_factory=list)
    scale_units: str = ""
    north_arrow: str = ""  # the SVG, or "" for the text arrow
    has_title: bool = False


def page_sizes() -> dict[str, tuple[float, float]]:
    """QGIS's paper sizes by name, portrait, in millimetres (the screen sizes in pixels are left out)."""
    sizes: dict[str, tuple[float, float]] = {}
    for entry in QgsApplication.pageSizeRegistry().entries():
        if entry.size.units() == _MILLIMETERS:
            sizes.setdefault(entry.name, (entry.size.width(), entry.size.height()))
    return sizes


def layout_name(project: QgsProject, title: str) -> tuple[str, bool]:
    """The name to use and whether it replaces a layout made for the same title (never one the user made)."""
    base = title.strip() or DEFAULT_NAME
    manager = project.layoutManager()
    number = 1
    while True:
        name = base if number == 1 else f"{base} ({number})"
        existing = manager.layoutByName(name)
        if existing is None:
            return name, False
        if existing.customProperty(MARK) == base:
            return name, True
        number += 1


def north_arrow_svg() -> str:
    """QGIS's own north arrow SVG from the SVG search paths ("" if this install lacks it)."""
    for folder in QgsApplication.svgPaths():
        candidate = Path(folder) / NORTH_ARROW_SVG
        if candidate.is_file():
            return str(candidate)
    return ""


def attribution_text(layers: list[QgsMapLayer]) -> str:
    """The layers' attributions and metadata rights, once each, or "Made with QGIS"."""
    found: list[str] = []
    for layer in layers:
        properties = getattr(layer, "serverProperties", None)  # 3.38+: attribution moved there
        server = properties() if callable(properties) else None
        attribution = server.attribution() if server is not None and hasattr(server, "attribution") else ""
        if not attribution and hasattr(layer, "attribution"):
            attribution = layer.attribution()
        found += [attribution, *layer.metadata().rights()]
    unique = list(dict.fromkeys(" ".join(text.split()) for text in found if text and text.strip()))
    return "Sources: " + "; ".join(unique) if unique else MADE_WITH


def build_layout(project: QgsProject, view: MapView, page: Page, title: str) -> MadeLayout:
    """Make the layout for ``view`` on ``page`` (``keep_layout`` then puts it in the Layout Manager)."""
    assert_main_thread("a print layout was made")
    name, replaced = layout_name(project, title)
    shown_title = title.strip() or project.title().strip()
    layout = QgsPrintLayout(project)
    layout.initializeDefaults()
    layout.setName(name)
    layout.setCustomProperty(MARK, title.strip() or DEFAULT_NAME)
    layout.pageCollection().page(0).setPageSize(QgsLayoutSize(page.width_mm, page.height_mm))
    width, height = page.width_mm, page.height_mm
    top = MARGIN_MM + (TITLE_MM + GAP_MM if shown_title else 0.0)
    legend_width = min(55.0, width * 0.25)
    map_width = width - 2 * MARGIN_MM - legend_width - GAP_MM
    map_height = height - top - MARGIN_MM - FOOTER_MM
    made = MadeLayout(layout, name, replaced, has_title=bool(shown_title))

    map_item = QgsLayoutItemMap(layout)
    map_item.setId(MAP_ID)
    layout.addLayoutItem(map_item)
    map_item.attemptMove(QgsLayoutPoint(MARGIN_MM, top))
    map_item.attemptResize(QgsLayoutSize(map_width, map_height))
    map_item.setCrs(view.crs)
    map_item.setLayers(view.layers)
    map_item.setKeepLayerSet(True)  # the layout shows what was exported, whatever is toggled later
    map_item.setExtent(fitted(view.extent, map_width / map_height))
    map_item.setFrameEnabled(True)

    if shown_title:
        _label(
            layout,
            TITLE_ID,
            shown_title,
            20,
            True,
            QgsLayoutPoint(MARGIN_MM, MARGIN_MM),
            (width - 2 * MARGIN_MM, TITLE_MM),
        )
    made.legend_layers = _legend(layout, map_item, view, QgsLayoutPoint(MARGIN_MM + map_width + GAP_MM, top))
    footer = top + map_height + GAP_MM
    made.scale_units = _scale_bar(layout, map_item, QgsLayoutPoint(MARGIN_MM, footer))
    made.north_arrow = _north_arrow(layout, map_item, MARGIN_MM + map_width, top)
    _label(
        layout,
        ATTRIBUTION_ID,
        attribution_text(view.layers),
        7,
        False,
        QgsLayoutPoint(MARGIN_MM + map_width / 2, footer),
        (map_width / 2 + legend_width + GAP_MM, FOOTER_MM - GAP_MM),
    )

    return made


def keep_layout(project: QgsProject, made: MadeLayout) -> None:
    """Put the layout in the project's Layout Manager, in place of GeoGPT's earlier one of the same name.

    Called once the file is written, so a failed export leaves the Layout Manager as it was.
    """
    assert_main_thread("a print layout was added to the project")
    manager = project.layoutManager()
    old = manager.layoutByName(made.name)
    if old is not None:
        manager.removeLayout(old)
    if not manager.addLayout(made.layout):
        raise ToolError(f"the map was written, but QGIS did not add the layout {made.name!r} to the Layout Manager")


def export_layout(layout: QgsPrintLayout, path: Path, kind: str, dpi: int) -> None:
    """Write the layout to ``path`` (via a partial file renamed at the end, so a failure keeps an old file)."""
    assert_main_thread("a print layout was exported")
    partial = path.with_name(f".{path.stem}.geogpt-partial{path.suffix}")
    exporter = QgsLayoutExporter(layout)
    if kind == "PDF":
        pdf = QgsLayoutExporter.PdfExportSettings()
        pdf.dpi = dpi
        result = exporter.exportToPdf(str(partial), pdf)
    else:
        image = QgsLayoutExporter.ImageExportSettings()
        image.dpi = dpi
        image.exportMetadata = False  # GDAL cannot add metadata to a PNG in place (it says so on stderr)
        from osgeo import gdal

        # QGIS then opens the PNG with GDAL to georeference it, which PNG cannot take: GDAL's complaint is noise.
        gdal.PushErrorHandler("CPLQuietErrorHandler")
        try:
            result = exporter.exportToImage(str(partial), image)
        finally:
            gdal.PopErrorHandler()
    if result != _SUCCESS or not partial.is_file():
        if partial.is_file():
            partial.unlink()
        said = exporter.errorMessage() if hasattr(exporter, "errorMessage") else ""  # QGIS 3.40+
        raise ToolError(
            f"QGIS could not write {str(path)!r} ({_result_name(result)}{': ' + said if said else ''}); "
            "check that the folder is writable and has space"
        )
    os.replace(partial, path)


def fitted(extent: QgsRectangle, ratio: float) -> QgsRectangle:
    """``extent`` grown around its centre to the width/height ``ratio`` of the map frame.

    (``QgsLayoutItemMap.zoomToExtent`` leaves a new item's extent empty on QGIS 3.22, and ``setExtent``
    would resize the frame to the extent's shape instead.)
    """
    width, height = extent.width(), extent.height()
    if width / max(height, 1e-12) < ratio:
        width = height * ratio
    else:
        height = width / ratio
    centre = extent.center()
    return QgsRectangle(
        centre.x() - width / 2, centre.y() - height / 2, centre.x() + width / 2, centre.y() + height / 2
    )


def _result_name(result: object) -> str:
    """The exporter's result by name (``FileError``...), compared as enum members."""
    for name in ("FileError", "MemoryError", "PrintError", "SvgLayerError", "IteratorError", "Canceled"):
        member = getattr(QgsLayoutExporter, name, None)
        if member is not None and result == member:
            return name
    return str(result)


def _label(
    layout: QgsPrintLayout, item_id: str, text: str, size: float, bold: bool, where: QgsLayoutPoint, box: tuple
) -> QgsLayoutItemLabel:
    label = QgsLayoutItemLabel(layout)
    label.setId(item_id)
    label.setText(text)
    font = QFont()
    font.setPointSizeF(size)
    font.setBold(bold)
    if hasattr(label, "setTextFormat"):  # 3.24+; setFont is deprecated there
        text_format = QgsTextFormat.fromQFont(font)
        text_format.setSize(size)
        label.setTextFormat(text_format)
    else:
        label.setFont(font)
    layout.addLayoutItem(label)
    label.attemptMove(where)
    label.attemptResize(QgsLayoutSize(*box))
    return label


def _legend(layout: QgsPrintLayout, map_item: QgsLayoutItemMap, view: MapView, where: QgsLayoutPoint) -> list[str]:
    """A legend of the exported layers only (hidden layers and emptied groups removed); their names."""
    legend = QgsLayoutItemLegend(layout)
    legend.setId(LEGEND_ID)
    legend.setTitle("Legend")
    layout.addLayoutItem(legend)
    legend.setLinkedMap(map_item)
    legend.setAutoUpdateModel(False)  # its own copy of the layer tree, which can be filtered
    root = legend.model().rootGroup()
    shown = {layer.id() for layer in view.layers}
    for node in root.findLayers():
        if node.layerId() not in shown:
            node.parent().removeChildNode(node)
    _drop_empty_groups(root)
    legend.attemptMove(where)
    legend.adjustBoxSize()
    return [node.name() for node in root.findLayers()]


def _drop_empty_groups(group: QgsLayerTreeGroup) -> None:
    for child in list(group.children()):
        if isinstance(child, QgsLayerTreeGroup):
            _drop_empty_groups(child)
            if not child.children():
                group.removeChildNode(child)


def _scale_bar(layout: QgsPrintLayout, map_item: QgsLayoutItemMap, where: QgsLayoutPoint) -> str:
    """A scale bar in units suited to the map's CRS (metres or kilometres when projected in metres)."""
    bar = QgsLayoutItemScaleBar(layout)
    bar.setId(SCALE_BAR_ID)
    bar.setStyle("Single Box")
    layout.addLayoutItem(bar)
    bar.setLinkedMap(map_item)
    bar.applyDefaultSize(bar.guessUnits())
    bar.attemptMove(where)
    units: str = QgsUnitTypes.toString(bar.units())
    return units


def _north_arrow(layout: QgsPrintLayout, map_item: QgsLayoutItemMap, right: float, top: float) -> str:
    """QGIS's north arrow SVG in the map's top right corner, turned with the map; a text "N ↑" without it."""
    svg = north_arrow_svg()
    width, height = NORTH_MM
    where = QgsLayoutPoint(right - width - 2, top + 2)
    if not svg:
        _label(layout, NORTH_ID, "N\n↑", 14, True, where, (width, height))
        return ""
    arrow = QgsLayoutItemPicture(layout)
    arrow.setId(NORTH_ID)
    arrow.setPicturePath(svg)
    layout.addLayoutItem(arrow)
    arrow.attemptMove(where)
    arrow.attemptResize(QgsLayoutSize(width, height))
    arrow.setLinkedMap(map_item)
    return svg
