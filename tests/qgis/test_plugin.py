"""Loading and unloading the plugin, and what it costs QGIS at start-up."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from qgis.core import QgsApplication, QgsMessageLog, QgsProject
from qgis.PyQt.QtCore import QCoreApplication, QEvent, QObject, Qt
from qgis.PyQt.QtWidgets import QDockWidget, QMainWindow, QMenu

from geogpt_qgis import classFactory
from geogpt_qgis.toolbelt.log import logger
from geogpt_qgis.toolbelt.qt_actions import QAction
from tests.support.iface import FaithfulIface
from tests.support.runs import wait_until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def real_iface(qgis_app):
    iface = FaithfulIface()
    yield iface
    iface.mainWindow().deleteLater()


def _ours(window: QMainWindow) -> dict[str, list]:
    return {
        "docks": [d for d in window.findChildren(QDockWidget) if d.objectName() == "GeoGptChatDock"],
        "actions": [a for a in window.findChildren(QAction) if a.objectName() == "GeoGptChatAction"],
        "menus": [m for m in window.findChildren(QMenu) if m.title() == "&GeoGPT"],
    }


def _receivers(obj: QObject, signal: str) -> int:
    return obj.receivers(getattr(obj, signal))


def test_load_then_unload_leaves_nothing_behind(real_iface, tmp_path, monkeypatch):
    monkeypatch.setattr(QgsApplication, "qgisSettingsDirPath", staticmethod(lambda: str(tmp_path) + "/"))
    window = real_iface.mainWindow()
    project = QgsProject.instance()
    watched = ("cleared", "layersAdded", "layersWillBeRemoved", "crsChanged")
    baseline = {
        **{name: _receivers(project, name) for name in watched},
        "handlers": len(logger.handlers),
        "plugin_menu": len(real_iface.plugin_menu.actions()),
        "toolbar": len(real_iface.plugin_toolbar.actions()),
    }
    plugin = classFactory(real_iface)
    plugin.initGui()
    try:  # unloaded whatever fails here: a plugin left loaded would outlive this test and disturb others
        window.show()  # shows the dock, which builds its chat panel
        assert plugin.dock.widget() is plugin.dock.panel
        loaded = _ours(window)
        assert len(loaded["docks"]) == 1 and len(loaded["actions"]) == 1 and len(loaded["menus"]) == 1
        dock = loaded["docks"][0]
        assert window.dockWidgetArea(dock) == Qt.DockWidgetArea.RightDockWidgetArea
        assert plugin.action in real_iface.plugin_toolbar.actions()
        assert real_iface.options_factories == [plugin.options_factory]  # Settings > Options > GeoGPT
        assert real_iface.options_factories[0].title() == "GeoGPT"
        # The panel stops runs when the project closes; its watcher follows layers and the CRS for change notes;
        # the first-run card's example questions follow the layers added and the project closed.
        assert _receivers(project, "cleared") == baseline["cleared"] + 3
        assert _receivers(project, "layersAdded") == baseline["layersAdded"] + 2
        assert all(_receivers(project, name) == baseline[name] + 1 for name in watched[2:])
        assert len(logger.handlers) == baseline["handlers"] + 1
        # The action toggles the dock.
        plugin.action.trigger()
        plugin.action.trigger()
    finally:
        plugin.unload()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # run deleteLater()
        gc.collect()
    assert _ours(window) == {"docks": [], "actions": [], "menus": []}
    assert len(real_iface.plugin_menu.actions()) == baseline["plugin_menu"]
    assert len(real_iface.plugin_toolbar.actions()) == baseline["toolbar"]
    assert all(_receivers(project, name) == baseline[name] for name in watched)
    assert len(logger.handlers) == baseline["handlers"]
    assert plugin.dock is None and plugin.action is None
    assert real_iface.options_factories == [] and plugin.options_factory is None


def test_unload_during_a_run_stops_it_cleanly(real_iface, tmp_path, monkeypatch, model_server, demo_project):
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from tests.support.model_server import Turn

    monkeypatch.setattr(QgsApplication, "qgisSettingsDirPath", staticmethod(lambda: str(tmp_path) + "/"))
    PlgOptionsManager.set_value("ollama_url", model_server.url)
    PlgOptionsManager.set_value("ollama_model", "qwen3:8b")
    model_server.script([Turn(text="slow " * 300, chunk_delay=0.02)])
    plugin = classFactory(real_iface)
    plugin.initGui()
    panel = plugin.dock.panel
    statuses: list[str] = []
    panel.run_finished.connect(statuses.append)
    panel.runs.send("write slowly")
    wait_until(lambda: len(model_server.chat_requests()) == 1, 120)
    worker = panel.conversation.worker
    plugin.unload()
    assert not worker.isRunning()
    assert statuses == ["cancelled"]


def test_plugin_start_up_imports_nothing_heavy():
    """classFactory + initGui in a fresh QGIS process must not import LangChain, LangGraph, keyring or HTTP clients."""
    done = subprocess.run(
        [sys.executable, "-m", "harness.startup_probe"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["heavy"] == []
    assert "geogpt_qgis.gui.dock" in report["ours"]
    assert not any(m.startswith(("geogpt_qgis.agent.session", "geogpt_qgis.agent.graph")) for m in report["ours"])


def test_log_messages_reach_the_qgis_log(qgis_app):
    from geogpt_qgis.toolbelt.log import install_qgis_log_handler, remove_handler

    seen: list[tuple[str, str]] = []
    log = QgsApplication.messageLog()

    def record(message: str, tag: str, _level) -> None:
        seen.append((message, tag))

    log.messageReceived.connect(record)
    handler = install_qgis_log_handler(debug=False)
    try:
        logger.warning("model server slow")
        assert ("geogpt_qgis: model server slow", "GeoGPT") in seen
    finally:
        remove_handler(handler)
        log.messageReceived.disconnect(record)
    assert isinstance(QgsMessageLog, type)
