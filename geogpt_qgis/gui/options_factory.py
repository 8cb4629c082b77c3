"""The factory QGIS asks for the GeoGPT page of Settings > Options.

Registered at ``initGui``, so it lives apart from the page: the page and the
widgets it is built from are imported only when the options dialog first
opens, not while QGIS starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgis.gui import QgsOptionsWidgetFactory
from qgis.PyQt.QtGui import QIcon

from geogpt_qgis.__about__ import TITLE
from geogpt_qgis.toolbelt.paths import icon_path

if TYPE_CHECKING:
    from qgis.gui import QgisInterface
    from qgis.PyQt.QtWidgets import QWidget

    from geogpt_qgis.gui.options_page import OptionsPage


class GeoGptOptionsFactory(QgsOptionsWidgetFactory):
    """Registered with ``iface.registerOptionsWidgetFactory``; QGIS asks it for a page each time the dialog opens."""

    def __init__(self, iface: QgisInterface | None = None) -> None:
        super().__init__(TITLE, QIcon(str(icon_path("geogpt.svg"))))
        self.iface = iface

    def createWidget(self, parent: QWidget | None = None) -> OptionsPage:  # noqa: N802 - Qt override
        from geogpt_qgis.gui.options_page import OptionsPage

        return OptionsPage(parent, self.iface)
