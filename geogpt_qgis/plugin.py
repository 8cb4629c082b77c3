"""The QGIS plugin: an action, a menu entry, the chat dock, the options page, and a clean unload.

``initGui`` records a teardown step for everything it creates (an ``ExitStack``),
and ``unload`` runs them in reverse, every one even if another fails, so
unloading leaves no action, menu entry, dock, options page, signal connection,
log handler or translator behind.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from qgis.PyQt.QtCore import QCoreApplication, Qt
from qgis.PyQt.QtGui import QIcon
from qgis.PyQt.QtWidgets import QMenu

from geogpt_qgis.__about__ import TITLE
from geogpt_qgis.toolbelt.i18n import install_translator, tr
from geogpt_qgis.toolbelt.log import install_qgis_log_handler, remove_handler
from geogpt_qgis.toolbelt.paths import icon_path, profile_data_dir
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.toolbelt.qt_actions import QAction

if TYPE_CHECKING:
    from qgis.gui import QgisInterface

    from geogpt_qgis.gui.agent_preload import AgentPreload
    from geogpt_qgis.gui.chat_view import ChatView
    from geogpt_qgis.gui.dock import ChatDock
    from geogpt_qgis.gui.mcp_approvals import DockApprovals
    from geogpt_qgis.gui.options_factory import GeoGptOptionsFactory
    from geogpt_qgis.mcp_server.service import McpService

MENU = "&GeoGPT"
STORE_FILE = "conversations.sqlite"


class GeoGptPlugin:
    """GeoGPT's entry in QGIS."""

    def __init__(self, iface: QgisInterface) -> None:
        self.iface = iface
        self.dock: ChatDock | None = None
        self.action: QAction | None = None
        self.help_action: QAction | None = None
        self.options_factory: GeoGptOptionsFactory | None = None
        self.mcp_service: McpService | None = None
        self.agent_preload: AgentPreload | None = None
        self._teardown = contextlib.ExitStack()

    def initGui(self) -> None:
        settings = PlgOptionsManager.get_plg_settings()
        handler = install_qgis_log_handler(settings.debug_mode)
        self._teardown.callback(remove_handler, handler)
        translator = install_translator()
        if translator is not None:
            self._teardown.callback(QCoreApplication.removeTranslator, translator)

        self._keep_results()

        from geogpt_qgis.gui.dock import ChatDock

        main_window = self.iface.mainWindow()
        dock = ChatDock(self.iface, store_path=profile_data_dir() / STORE_FILE, parent=main_window)
        self.dock = dock
        self.iface.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        self._teardown.callback(self._remove_dock)

        from geogpt_qgis.gui.options_factory import GeoGptOptionsFactory

        options_factory = GeoGptOptionsFactory(self.iface)
        self.iface.registerOptionsWidgetFactory(options_factory)
        self.options_factory = options_factory
        self._teardown.callback(self._remove_options_page)

        # The MCP server (off unless switched on in the options); the SDK is imported only when it starts.
        from geogpt_qgis.gui.background import run_in_background
        from geogpt_qgis.mcp_server.service import McpService

        # No parent: unload drops it with the plugin's reference.  Gated MCP calls ask in the dock's chat:
        # the plugin hands the server the dock's approvals and the way back to the main thread (it imports no GUI).
        self.mcp_service = McpService(
            self.iface,
            run_in_background=run_in_background,
            approvals=self._dock_approvals,
            store_path=profile_data_dir() / STORE_FILE,
        )
        self.mcp_service.register()
        self._teardown.callback(self._stop_mcp_server)
        self.mcp_service.apply(settings)

        action = QAction(QIcon(str(icon_path("geogpt.svg"))), tr("GeoGPT chat"), main_window)
        action.setObjectName("GeoGptChatAction")
        action.setToolTip(tr("Show or hide the GeoGPT chat"))
        dock.setToggleVisibilityAction(action)
        self.action = action
        self.iface.addToolBarIcon(action)
        self.iface.addPluginToMenu(MENU, action)
        self._teardown.callback(self._remove_action)
        self._add_help_action()
        dock.setVisible(settings.dock_visible)
        self._preload_agent_stack()

    def _preload_agent_stack(self) -> None:
        """The agent stack imported off the main thread once QGIS has started and sat idle (the first answer's wait)."""
        from geogpt_qgis.gui.agent_preload import AgentPreload

        self.agent_preload = AgentPreload(self.iface)
        self._teardown.callback(self.agent_preload.stop)

    def _add_help_action(self) -> None:
        """Help > Plugins > GeoGPT user guide: the guide shipped in the plugin, opened from disk."""
        from geogpt_qgis.toolbelt.help import open_guide

        action = QAction(QIcon(str(icon_path("geogpt.svg"))), tr("GeoGPT user guide"), self.iface.mainWindow())
        action.setObjectName("GeoGptHelpAction")
        action.setToolTip(tr("Open GeoGPT's user guide in your browser"))
        action.triggered.connect(lambda: open_guide())
        self.iface.pluginHelpMenu().addAction(action)
        self.help_action = action
        self._teardown.callback(self._remove_help_action)

    def _remove_help_action(self) -> None:
        if self.help_action is not None:
            self.iface.pluginHelpMenu().removeAction(self.help_action)
            self.help_action.deleteLater()
            self.help_action = None

    def _keep_results(self) -> None:
        """Result layers go to files of the project's results folder and follow the project when it is saved."""
        from qgis.core import QgsProject

        from geogpt_qgis.core.result_files import prune_scratch
        from geogpt_qgis.tools.result_store import ResultStore, SaveHooks, default_scratch_dir, set_result_store

        project = QgsProject.instance()
        store = ResultStore(default_scratch_dir())
        prune_scratch(store.scratch_dir, keep=store.scratch_folder)  # sessions that never saved, a week ago
        set_result_store(project, store)
        hooks = SaveHooks(project, store, self._tell_results_file)

        def undo() -> None:
            hooks.disconnect()
            set_result_store(project, None)

        self._teardown.callback(undo)

    def _tell_results_file(self, path: Path) -> None:
        self.iface.messageBar().pushInfo(
            TITLE, tr("GeoGPT's result layers are saved with the project in {path}").format(path=path)
        )

    def _remove_action(self) -> None:
        if self.action is not None:
            self.iface.removePluginMenu(MENU, self.action)
            self.iface.removeToolBarIcon(self.action)
            self.action.deleteLater()
            self.action = None
        # QGIS detaches an emptied plugin submenu but keeps the QMenu object; drop ours.
        for menu in self.iface.mainWindow().findChildren(QMenu):
            if menu.title() == MENU and not menu.actions():
                menu.deleteLater()

    def _remove_options_page(self) -> None:
        if self.options_factory is not None:
            self.iface.unregisterOptionsWidgetFactory(self.options_factory)
            self.options_factory = None

    def _dock_approvals(self, policy: str) -> DockApprovals:
        """The MCP server's approver: the settings' ``policy``, cards in the dock's chat (imported at its start)."""
        from geogpt_qgis.gui.mcp_approvals import DockApprovals

        return DockApprovals(self._dock_chat, policy)

    def _dock_chat(self) -> ChatView | None:
        """The dock's chat, shown and raised, for an MCP client's approval card (main thread)."""
        if self.dock is None:
            return None
        self.dock.setVisible(True)
        self.dock.raise_()
        return self.dock.panel.chat

    def _stop_mcp_server(self) -> None:
        if self.mcp_service is not None:
            self.mcp_service.shutdown()
            self.mcp_service = None

    def _remove_dock(self) -> None:
        if self.dock is not None:
            self.dock.shutdown()
            self.iface.removeDockWidget(self.dock)
            self.dock.setParent(None)
            self.dock.deleteLater()
            self.dock = None

    def unload(self) -> None:
        """Undo everything ``initGui`` did, newest first."""
        self._teardown.close()

    @property
    def title(self) -> str:
        return TITLE
