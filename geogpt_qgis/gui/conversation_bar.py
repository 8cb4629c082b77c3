"""The strip above the chat: the conversation's title and what can be done with it."""

from __future__ import annotations

from qgis.PyQt.QtCore import pyqtSignal
from qgis.PyQt.QtWidgets import QMenu, QPushButton, QToolButton, QWidget

from geogpt_qgis.gui.responsive import ElidedLabel, ResponsiveRow
from geogpt_qgis.toolbelt.help import open_guide
from geogpt_qgis.toolbelt.i18n import tr

TITLE_MIN_WIDTH = 70


class ConversationBar(ResponsiveRow):
    """Title, the conversation list toggle, New, and a menu: rename, export, run log, delete."""

    list_toggled = pyqtSignal(bool)
    new_requested = pyqtSignal()
    rename_requested = pyqtSignal()
    export_requested = pyqtSignal()
    run_log_requested = pyqtSignal()
    delete_requested = pyqtSignal()
    forget_always_requested = pyqtSignal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = ElidedLabel()  # a long title ends in "…"; all of it in the tooltip
        self.title.setObjectName("geogptConversationTitle")
        self.title.setMinimumWidth(TITLE_MIN_WIDTH)  # the buttons go short before the title goes
        self.list_button = QToolButton()
        self.list_button.setText(tr("Conversations"))
        self.list_button.setCheckable(True)
        self.list_button.setToolTip(tr("Your conversations: resume, rename, delete, export"))
        self.list_button.toggled.connect(self.list_toggled)
        self.new_button = QPushButton(tr("New conversation"))  # the one way to start afresh (no menu twin)
        self.new_button.setObjectName("geogptNew")
        self.new_button.clicked.connect(self.new_requested)
        self.menu = QMenu(self)
        self.rename_action = self.menu.addAction(tr("Rename…"), self.rename_requested.emit)
        self.export_action = self.menu.addAction(tr("Export to Markdown…"), self.export_requested.emit)
        self.run_log_action = self.menu.addAction(tr("Run log…"), self.run_log_requested.emit)
        self.forget_always_action = self.menu.addAction(
            tr("Ask again for steps approved 'always'"), self.forget_always_requested.emit
        )
        self.menu.addSeparator()
        self.delete_action = self.menu.addAction(tr("Delete"), self.delete_requested.emit)
        self.menu.addSeparator()
        # The plugin's MCP server (issue 25), also in Settings > Options > GeoGPT with its address and token.
        self.mcp_action = self.menu.addAction(tr("Serve GeoGPT's tools to other assistants (MCP)"))
        self.mcp_action.setCheckable(True)
        self.mcp_action.toggled.connect(switch_mcp_server)
        self.menu.aboutToShow.connect(self._show_mcp_state)
        self.menu.addSeparator()
        self.guide_action = self.menu.addAction(tr("User guide"), open_guide)  # the guide shipped with the plugin
        self.more_button = QToolButton()
        self.more_button.setText("⋯")
        self.more_button.setToolTip(tr("More for this conversation"))
        self.more_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.more_button.setMenu(self.menu)
        self.add(self.title, 1)
        self.add(self.list_button, short="☰")  # narrow dock: short labels, the full ones in the tooltips
        self.add(self.new_button, short="+")
        self.add(self.more_button)
        self.set_title("")

    def set_title(self, title: str) -> None:
        """The conversation's title; an empty one reads "Untitled" (not "New conversation", the button beside it)."""
        self.current_title = title
        self.title.set_full_text(title or tr("Untitled conversation"))

    def _show_mcp_state(self) -> None:
        """The switch shows the saved setting (the options page may have changed it) without acting on it."""
        from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

        self.mcp_action.blockSignals(True)
        self.mcp_action.setChecked(PlgOptionsManager.get_plg_settings().mcp_enabled)
        self.mcp_action.blockSignals(False)


def switch_mcp_server(on: bool) -> None:
    """Save the MCP switch and let the running plugin's server follow it (started or stopped off the main thread)."""
    from geogpt_qgis.mcp_server.service import current_service
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    PlgOptionsManager.set_value("mcp_enabled", on)
    service = current_service()
    if service is not None:
        service.apply(PlgOptionsManager.get_plg_settings())
