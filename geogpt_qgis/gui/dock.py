"""The GeoGPT dock: a light container that builds the chat panel the first time it is shown.

QGIS creates the dock at start-up (so it can restore its place in the window),
but the chat panel and everything it imports are only built when the dock is
first shown: a user who keeps it closed pays almost nothing.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from qgis.core import QgsProject
from qgis.gui import QgsDockWidget
from qgis.PyQt.QtGui import QIcon
from qgis.PyQt.QtWidgets import QWidget

from geogpt_qgis.__about__ import TITLE
from geogpt_qgis.gui.settings_events import settings_events
from geogpt_qgis.toolbelt.paths import icon_path

if TYPE_CHECKING:
    from pathlib import Path

    from qgis.gui import QgisInterface

    from geogpt_qgis.gui.chat_panel import ChatPanel


class ChatDock(QgsDockWidget):
    """The dock widget QGIS manages; ``panel`` holds the chat."""

    def __init__(
        self,
        iface: QgisInterface | None,
        project: QgsProject | None = None,
        store_path: Path | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(TITLE, parent)
        self.setObjectName("GeoGptChatDock")
        self.iface = iface
        self.project = project or QgsProject.instance()
        self.store_path = store_path
        self._panel: ChatPanel | None = None
        icon = icon_path("geogpt.svg")
        if icon.is_file():
            self.setWindowIcon(QIcon(str(icon)))

    @property
    def panel(self) -> ChatPanel:
        """The chat panel, built on first use."""
        if self._panel is None:
            from geogpt_qgis.gui.chat_panel import ChatPanel

            self._panel = ChatPanel(self.iface, self.project, self.store_path, self)
            self.setWidget(self._panel)
            settings_events().changed.connect(self._settings_saved)
        return self._panel

    def showEvent(self, event) -> None:  # noqa: ANN001 - Qt event
        self.panel  # noqa: B018 - build the panel before the first paint
        super().showEvent(event)

    def _settings_saved(self) -> None:
        """Settings > Options saved: the chat's approval choice follows (the model picker re-reads by itself)."""
        if self._panel is not None:
            from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

            self._panel.composer.choose_policy(PlgOptionsManager.get_plg_settings().approval_policy)

    def shutdown(self) -> None:
        """Stop the agent and release everything (plugin unload, QGIS exit)."""
        if self._panel is not None:
            with contextlib.suppress(TypeError):  # not connected
                settings_events().changed.disconnect(self._settings_saved)
            self._panel.shutdown()
