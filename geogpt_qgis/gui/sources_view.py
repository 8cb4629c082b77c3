"""The "Sources" section under an answer, and the bookkeeping that builds it from the turn's tool artifacts.

Layer names are links to the layer's id: a click asks the panel to select that
layer in the layer tree (``layer_clicked(layer_id, name)``), so two layers of
the same name are told apart.  A layer stored before ids were kept links to its
name instead (``layer_id`` empty).  Chart and exported file paths open the file.  The section
starts collapsed, like tool steps, so answers stay the first thing read.
"""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import quote

from qgis.PyQt.QtCore import QUrl, pyqtSignal
from qgis.PyQt.QtGui import QDesktopServices
from qgis.PyQt.QtWidgets import QWidget

from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact
from geogpt_qgis.core.events import ToolFinished
from geogpt_qgis.core.sources import Sources, collect_sources
from geogpt_qgis.gui.auto_height import AutoHeightTextBrowser
from geogpt_qgis.gui.collapsible import CollapsibleSection
from geogpt_qgis.toolbelt.i18n import tr

LAYER_SCHEME = "layer"  # layer:<id>
LAYER_NAME_SCHEME = "layername"  # layername:<name>, for a layer stored without its id
FILES = {"Charts", "Files"}  # local files: a click opens them


def sources_html(sources: Sources) -> str:
    """The lists as HTML; layers and results link to ``layer:<id>``, charts and written files to the file."""
    headings = {
        "Layers": tr("Layers"),
        "Tables": tr("Tables"),
        "Collections": tr("Collections"),
        "Algorithms": tr("Algorithms"),
        "Results": tr("Results"),
        "Charts": tr("Charts"),
        "Files": tr("Files"),
    }
    linked = {"Layers": sources.layers, "Results": sources.results}
    lines = []
    for heading, items in sources.sections():
        if heading in linked:
            shown = [f'<a href="{layer_link(layer)}">{html.escape(layer.name)}</a>' for layer in linked[heading]]
        elif heading in FILES:
            shown = [
                f'<a href="{QUrl.fromLocalFile(item).toString()}" title="{html.escape(item)}">'
                f"{html.escape(Path(item).name)}</a>"
                for item in items
            ]
        else:
            shown = [f"<code>{html.escape(item)}</code>" for item in items]
        lines.append(f"<b>{html.escape(headings[heading])}:</b> " + ", ".join(shown))
    return "<br/>".join(lines)


def layer_link(layer: LayerRef) -> str:
    """``layer:<id>``, or ``layername:<name>`` for a reference without an id."""
    if layer.layer_id:
        return f"{LAYER_SCHEME}:{quote(layer.layer_id, safe='')}"
    return f"{LAYER_NAME_SCHEME}:{quote(layer.name, safe='')}"


class SourcesView(CollapsibleSection):
    """``▸ Sources (5)``; expanded: the lists, with clickable layer names."""

    layer_clicked = pyqtSignal(str, str)  # layer id ("" for a layer stored without one), name

    def __init__(self, sources: Sources, parent: QWidget | None = None) -> None:
        body = AutoHeightTextBrowser(max_height=220)
        body.setOpenLinks(False)
        body.setOpenExternalLinks(False)
        count = sum(len(items) for _, items in sources.sections())
        super().__init__(tr("Sources ({n})").format(n=count), body, parent)
        self.setObjectName("geogptSources")
        self.sources = sources
        body.setHtml(sources_html(sources))
        body.anchorClicked.connect(self._follow)

    def _follow(self, url: QUrl) -> None:
        target = url.path(QUrl.ComponentFormattingOption.FullyDecoded)
        if url.scheme() == LAYER_SCHEME:
            known = [layer for layer in self.sources.layers + self.sources.results if layer.layer_id == target]
            self.layer_clicked.emit(target, known[0].name if known else "")
        elif url.scheme() == LAYER_NAME_SCHEME:
            self.layer_clicked.emit("", target)
        elif url.isLocalFile():
            QDesktopServices.openUrl(url)

    def click_layer(self, layer: LayerRef | str) -> None:
        """What a click on ``layer`` does (for tests and keyboard use); a name is its first entry of that name."""
        if isinstance(layer, str):
            named = [ref for ref in self.sources.layers + self.sources.results if ref.name == layer]
            layer = named[0] if named else LayerRef(layer)
        self._follow(QUrl(layer_link(layer)))


class TurnSources:
    """The artifacts of the turn on screen, from the run's events, until its answer is final."""

    def __init__(self) -> None:
        self.artifacts: list[ToolArtifact] = []

    def reset(self) -> None:
        self.artifacts.clear()

    def record(self, event: object) -> None:
        if isinstance(event, ToolFinished) and event.ok:
            self.artifacts.append(event.artifact)

    def sources(self) -> Sources:
        return collect_sources(self.artifacts)
