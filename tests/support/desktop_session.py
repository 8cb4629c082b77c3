"""Run inside the real QGIS desktop (``qgis --code``): drive the GeoGPT dock, report, quit.

Configured through environment variables:

- ``GEOGPT_REPO``: the repository (required; QGIS gives ``--code`` files no ``__file__``).
- ``GEOGPT_DESKTOP_OUT``: JSON report path (required).
- ``GEOGPT_DESKTOP_QUESTION``: the message to type into the dock.
- ``GEOGPT_DESKTOP_SCRIPT``: a JSON list of scripted turns; when set, a scripted
  model server is started inside QGIS on ``GEOGPT_DESKTOP_PORT`` (the port the
  plugin settings already point at; used by the screenshot job; the tests run
  their own server).
- ``GEOGPT_DESKTOP_SCREENSHOT``: save a PNG of the main window after the answer.
- ``GEOGPT_DESKTOP_UNLOAD``: "1" to unload the plugin and report what is left.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

from qgis.core import Qgis, QgsApplication, QgsProject
from qgis.PyQt.QtCore import QEvent, Qt, QTimer
from qgis.PyQt.QtWidgets import QApplication, QDockWidget, QMenu
from qgis.utils import active_plugins, iface, plugins, unloadPlugin

# QGIS runs ``--code`` files through exec(), without ``__file__``.
REPO = Path(os.environ["GEOGPT_REPO"])
OUT = Path(os.environ["GEOGPT_DESKTOP_OUT"])
report: dict[str, object] = {"errors": []}
state: dict[str, object] = {}
UNLOAD_SETTLE_S = 60.0  # how long deletions after unloading may take to settle on a loaded machine


def finish(code: int = 0) -> None:
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    # As QGIS's own File > Exit does: the project closes before the application (3.40+ aborts otherwise).
    QgsProject.instance().clear()
    QgsApplication.exit(code)


def fail(message: str) -> None:
    report["errors"].append(message)  # type: ignore[union-attr]
    finish(1)


def ours() -> dict[str, int]:
    from geogpt_qgis.toolbelt.qt_actions import QAction  # the plugin's own package, loaded by QGIS by now

    window = iface.mainWindow()
    return {
        "docks": sum(1 for d in window.findChildren(QDockWidget) if d.objectName() == "GeoGptChatDock"),
        "actions": sum(1 for a in window.findChildren(QAction) if a.objectName() == "GeoGptChatAction"),
        "menus": sum(1 for m in window.findChildren(QMenu) if m.title() == "&GeoGPT"),
    }


def start() -> None:
    try:
        report["qgis_version"] = Qgis.version()
        report["plugin_loaded"] = "geogpt_qgis" in plugins
        report["plugin_active"] = "geogpt_qgis" in active_plugins
        report["project_layers"] = sorted(layer.name() for layer in QgsProject.instance().mapLayers().values())
        report["loaded"] = ours()
        dock = iface.mainWindow().findChild(QDockWidget, "GeoGptChatDock")
        if dock is None:
            fail("no GeoGPT dock in the main window")
            return
        report["dock_visible"] = dock.isVisible()
        panel = dock.panel
        state["panel"] = panel
        if os.environ.get("GEOGPT_DESKTOP_SCREENSHOT"):
            panel.model_bar.refresh_models()
            width = int(os.environ.get("GEOGPT_DESKTOP_DOCK_WIDTH", "560"))
            iface.mainWindow().resizeDocks([dock], [width], Qt.Orientation.Horizontal)
        panel.run_finished.connect(report_answer)
        panel.input.setPlainText(os.environ.get("GEOGPT_DESKTOP_QUESTION", "What layers are in the project?"))
        panel.composer.send_current()
    except Exception:  # noqa: BLE001 - reported to the test
        fail(traceback.format_exc())


def report_answer(status: str) -> None:
    """At ``run_finished`` the turn is complete: the dock painted the last text and closed the stream first."""
    try:
        from geogpt_qgis.gui.markdown_view import MarkdownView
        from geogpt_qgis.gui.tool_step import ToolStepWidget

        items = state["panel"].chat.items()
        report["status"] = status
        report["answer"] = "\n".join(w.source_text for w in items if isinstance(w, MarkdownView))
        report["answer_rendered"] = "\n".join(w.toPlainText() for w in items if isinstance(w, MarkdownView))
        report["tool_steps"] = [[w.name, w.ok] for w in items if isinstance(w, ToolStepWidget)]
        report["selected_schools"] = sum(
            layer.selectedFeatureCount() for layer in QgsProject.instance().mapLayersByName("schools")
        )
        shot = os.environ.get("GEOGPT_DESKTOP_SCREENSHOT")
        if shot:
            for step in (w for w in items if isinstance(w, ToolStepWidget)):
                if step.name == "select_features":
                    step.set_expanded(True)
            QApplication.processEvents()
            iface.mainWindow().grab().save(shot)
            report["screenshot"] = shot
        if os.environ.get("GEOGPT_DESKTOP_UNLOAD") == "1":
            report["unloaded"] = bool(unloadPlugin("geogpt_qgis"))
            QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
            state["unloaded_at"] = time.monotonic()
            after_unload()
        else:
            finish(0)
    except Exception:  # noqa: BLE001 - reported to the test
        fail(traceback.format_exc())


def after_unload() -> None:
    """What is left of the plugin once deletions settle: polled while some remain, up to a bound (a leak stays)."""
    left = ours()
    if any(left.values()) and time.monotonic() - state["unloaded_at"] < UNLOAD_SETTLE_S:
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QTimer.singleShot(50, after_unload)
        return
    report["after_unload"] = left
    report["plugin_loaded_after_unload"] = "geogpt_qgis" in plugins
    finish(0)


def start_scripted_server() -> None:
    """Serve the scripted turns on the port the plugin settings point at, before the dock asks."""
    script = os.environ.get("GEOGPT_DESKTOP_SCRIPT")
    if not script:
        return
    sys.path.insert(0, str(REPO))
    from tests.support.model_server import ScriptedModelServer, ToolCall, Turn

    turns = [
        Turn(
            text=t.get("text", ""),
            chunk_delay=t.get("chunk_delay", 0.0),
            tool_calls=[ToolCall(c["name"], c.get("arguments", {})) for c in t.get("tool_calls", [])],
        )
        for t in json.loads(script)
    ]
    state["server"] = ScriptedModelServer(turns, port=int(os.environ["GEOGPT_DESKTOP_PORT"])).start()


start_scripted_server()
QTimer.singleShot(int(os.environ.get("GEOGPT_DESKTOP_DELAY_MS", "1500")), start)
QTimer.singleShot(int(os.environ.get("GEOGPT_DESKTOP_TIMEOUT_MS", "240000")), lambda: fail("timed out"))
