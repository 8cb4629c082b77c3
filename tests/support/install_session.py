"""Run inside the real QGIS desktop (``qgis --code``): first-run install from the dock, then one question.

QGIS starts from a fresh profile and a Python without LangGraph and friends.
With ``GEOGPT_INSTALL_ZIP`` the profile has no plugin yet: this script installs
the zip with the Plugin Manager's own code (Install from ZIP:
``pyplugin_installer``'s ``installFromZipFile``, which unpacks it into the
profile's ``python/plugins``, loads and starts it and enables it in the
profile's settings); without it the plugin was unpacked and enabled before
QGIS started.  Then it clicks Install in the dock's banner, waits for pip, and
asks the agent a question; it records where numpy, GDAL, pyproj and PyQt come
from before and after, what the banner said, and the answer.  It imports
nothing from the repository: the plugin is the copy in the profile.

Configured through environment variables: ``GEOGPT_INSTALL_OUT`` (JSON report
path, required), ``GEOGPT_INSTALL_ZIP``, ``GEOGPT_INSTALL_QUESTION``,
``GEOGPT_INSTALL_TIMEOUT_MS``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

from qgis.core import QgsApplication, QgsSettings
from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtWidgets import QDockWidget
from qgis.utils import active_plugins, iface

OUT = Path(os.environ["GEOGPT_INSTALL_OUT"])
report: dict[str, object] = {"errors": [], "statuses": []}
state: dict[str, object] = {}
# What QGIS's Python ships and the plugin's packages must never shadow (the modules of numpy, GDAL, pyproj, PyQt).
PROTECTED_MODULES = ("numpy", "osgeo", "pyproj", "PyQt5")


def numpy_now() -> dict[str, object]:
    """Where ``import numpy`` resolves on sys.path now (not only the module already loaded)."""
    spec = importlib.machinery.PathFinder.find_spec("numpy", sys.path)
    loaded = sys.modules.get("numpy")
    return {
        "version": metadata.version("numpy"),
        "origin": spec.origin if spec else None,
        "loaded_file": getattr(loaded, "__file__", None),
    }


def protected_now() -> dict[str, dict[str, object]]:
    """Where each protected module resolves on sys.path now, and the file of the one already loaded."""
    found = {}
    for name in PROTECTED_MODULES:
        spec = importlib.machinery.PathFinder.find_spec(name, sys.path)
        loaded = sys.modules.get(name)
        found[name] = {
            "origin": spec.origin if spec else None,
            "loaded_file": getattr(loaded, "__file__", None),
        }
    return found


def install_from_zip(archive: str) -> None:
    """Plugins > Manage and Install Plugins > Install from ZIP, as QGIS's own installer code does it."""
    import pyplugin_installer

    # The profile's python/plugins, where Install from ZIP unpacks (qgis.utils.home_plugin_path is gone in 3.40).
    folder = Path(QgsApplication.qgisSettingsDirPath()) / "python" / "plugins" / "geogpt_qgis"
    report["zip_plugin_before"] = {"folder": folder.exists(), "active": "geogpt_qgis" in active_plugins}
    pyplugin_installer.instance().installFromZipFile(archive)
    report["zip_plugin_after"] = {
        "folder": str(folder) if (folder / "metadata.txt").is_file() else None,
        "active": "geogpt_qgis" in active_plugins,
        "enabled_setting": QgsSettings().value("PythonPlugins/geogpt_qgis", False, bool),
    }


def finish(code: int = 0) -> None:
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    QgsApplication.exit(code)


def fail(message: str) -> None:
    report["errors"].append(message)  # type: ignore[union-attr]
    finish(1)


def guarded(step):
    """Report an exception in a timer or signal callback to the test instead of losing it."""

    def run(*args):
        try:
            step(*args)
        except Exception:  # noqa: BLE001 - reported to the test
            fail(traceback.format_exc())

    return run


@guarded
def start() -> None:
    archive = os.environ.get("GEOGPT_INSTALL_ZIP")
    if archive:
        install_from_zip(archive)
    from geogpt_qgis.toolbelt.dependencies import missing_packages

    report["plugin_active"] = "geogpt_qgis" in active_plugins
    report["python_executable"] = sys.executable
    report["numpy_before"] = numpy_now()
    report["protected_before"] = protected_now()
    report["missing_before"] = missing_packages()
    report["langgraph_before"] = importlib.util.find_spec("langgraph") is not None
    dock = iface.mainWindow().findChild(QDockWidget, "GeoGptChatDock")
    if dock is None:
        fail("no GeoGPT dock in the main window")
        return
    panel = dock.panel
    banner = panel.install_banner
    state["panel"] = panel
    report["banner"] = banner.message.text() if banner is not None else None
    if banner is None:
        fail("the dock shows no install banner")
        return
    state["banner"] = banner
    banner.finished.connect(installed)
    state["started"] = time.monotonic()
    banner.install_button.click()
    poll_status()


def poll_status() -> None:
    """Keep every distinct status line the banner shows while pip runs."""
    banner = state["banner"]
    text = banner.status.text()
    statuses = report["statuses"]
    if text and (not statuses or statuses[-1] != text):
        statuses.append(text)
    if banner.running:
        QTimer.singleShot(100, poll_status)


@guarded
def installed(ok: bool, message: str) -> None:
    from geogpt_qgis.toolbelt.dependencies import missing_packages
    from geogpt_qgis.toolbelt.python_env import profile_packages_dir

    report["install_seconds"] = time.monotonic() - state["started"]
    report["install_ok"] = ok
    report["install_message"] = message
    report["banner_visible_after"] = state["banner"].isVisible()
    report["missing_after"] = missing_packages()
    report["private_folder"] = str(profile_packages_dir())
    report["sys_path"] = list(sys.path)
    if not ok:
        finish(0)
        return
    panel = state["panel"]
    panel.run_finished.connect(report_answer)
    panel.input.setPlainText(os.environ.get("GEOGPT_INSTALL_QUESTION", "What layers are there?"))
    panel.composer.send_current()


@guarded
def report_answer(status: str) -> None:
    """At ``run_finished`` the turn is complete: the dock painted the last text and closed the stream first."""
    from geogpt_qgis.gui.markdown_view import MarkdownView
    from geogpt_qgis.gui.tool_step import ToolStepWidget

    items = state["panel"].chat.items()
    report["status"] = status
    report["answer"] = "\n".join(w.source_text for w in items if isinstance(w, MarkdownView))
    report["tool_steps"] = [[w.name, w.ok] for w in items if isinstance(w, ToolStepWidget)]
    report["numpy_after"] = numpy_now()
    import langgraph.graph  # langgraph itself is a namespace package, without a __file__
    import shapely
    from shapely.geometry import Point

    report["langgraph_file"] = langgraph.graph.__file__
    report["shapely_file"] = shapely.__file__
    report["shapely_buffer_area"] = Point(0, 0).buffer(1.0, 64).area  # shapely from the profile, numpy from QGIS
    report["protected_after"] = protected_now()  # after the agent and shapely ran: what they loaded
    finish(0)


QTimer.singleShot(int(os.environ.get("GEOGPT_INSTALL_DELAY_MS", "1500")), start)
QTimer.singleShot(int(os.environ.get("GEOGPT_INSTALL_TIMEOUT_MS", "600000")), lambda: fail("timed out"))
