"""A QgisInterface stand-in whose menus, toolbars and docks are real widgets on a real main window.

pytest-qgis's stub ignores ``addPluginToMenu`` and friends; this one does what
QGIS does with them, so a test can check that unloading really removes them.
It needs nothing but a QgsApplication, so benchmarks and subprocesses use it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgis.gui import QgsMapCanvas, QgsMessageBar
from qgis.PyQt.QtCore import QObject, Qt
from qgis.PyQt.QtWidgets import QDockWidget, QMainWindow, QMenu, QToolBar

if TYPE_CHECKING:  # only a type here: subprocesses load this file before the plugin package is importable
    from geogpt_qgis.toolbelt.qt_actions import QAction


class FaithfulIface(QObject):
    """Plugin menu, plugin toolbar, dock area and map canvas, implemented like QGIS does."""

    def __init__(self, main_window: QMainWindow | None = None) -> None:
        super().__init__()
        self._window = main_window or QMainWindow()
        self._canvas = QgsMapCanvas(self._window)
        self._window.setCentralWidget(self._canvas)
        self.plugin_menu = self._window.menuBar().addMenu("&Plugins")
        self.help_menu = self._window.menuBar().addMenu("&Help")
        self._plugin_help_menu = self.help_menu.addMenu("Plugins")  # QGIS's Help > Plugins
        self.plugin_toolbar = QToolBar("Plugins", self._window)
        self.plugin_toolbar.setObjectName("mPluginToolBar")
        self._window.addToolBar(self.plugin_toolbar)
        self.options_factories: list = []  # what QGIS's options dialog would offer as pages
        self._message_bar = QgsMessageBar(self._window)

    def mainWindow(self) -> QMainWindow:
        return self._window

    def messageBar(self) -> QgsMessageBar:  # noqa: N802 - QGIS API name
        return self._message_bar

    def mapCanvas(self) -> QgsMapCanvas:
        return self._canvas

    def layerTreeView(self) -> None:
        return None

    def pluginHelpMenu(self) -> QMenu:  # noqa: N802 - QGIS API name
        return self._plugin_help_menu

    def _submenu(self, name: str, create: bool) -> QMenu | None:
        for action in self.plugin_menu.actions():
            if action.menu() is not None and action.text() == name:
                return action.menu()
        return self.plugin_menu.addMenu(name) if create else None

    def addPluginToMenu(self, name: str, action: QAction) -> None:
        self._submenu(name, True).addAction(action)

    def removePluginMenu(self, name: str, action: QAction) -> None:
        menu = self._submenu(name, False)
        if menu is None:
            return
        menu.removeAction(action)
        if not menu.actions():
            self.plugin_menu.removeAction(menu.menuAction())
            menu.deleteLater()

    def addToolBarIcon(self, action: QAction) -> None:
        self.plugin_toolbar.addAction(action)

    def removeToolBarIcon(self, action: QAction) -> None:
        self.plugin_toolbar.removeAction(action)

    def addDockWidget(self, area: Qt.DockWidgetArea, dock: QDockWidget) -> None:
        self._window.addDockWidget(area, dock)

    def removeDockWidget(self, dock: QDockWidget) -> None:
        self._window.removeDockWidget(dock)

    def registerOptionsWidgetFactory(self, factory: object) -> None:  # noqa: N802 - QGIS API name
        self.options_factories.append(factory)

    def unregisterOptionsWidgetFactory(self, factory: object) -> None:  # noqa: N802 - QGIS API name
        self.options_factories.remove(factory)
