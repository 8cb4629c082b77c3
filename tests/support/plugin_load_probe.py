"""Load the plugin from a QGIS profile the way QGIS does, headless, and print one JSON report.

    /usr/bin/python3 -I tests/support/plugin_load_probe.py <profile folder>

Run with ``-I``: QGIS's own Python without the development environment, so the
plugin meets a QGIS that lacks LangGraph and friends, as a first-time user's does.
The plugin comes from ``<profile>/python/plugins`` through ``qgis.utils.loadPlugin``
and ``startPlugin``, as the plugin manager loads it; the dock is then shown.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path


def main() -> None:
    profile = Path(sys.argv[1])
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from qgis.core import QgsApplication

    app = QgsApplication([], True, str(profile), "desktop")  # 3.40+ honours the profile only for "desktop"
    app.initQgis()
    import qgis.utils
    from qgis.PyQt.QtWidgets import QApplication, QDockWidget

    # harness/iface.py loaded by its path alone: putting the repository on sys.path would also expose its
    # geogpt_qgis, which this probe must load from the installed zip only.
    source = Path(__file__).resolve().parents[2] / "harness" / "iface.py"
    spec = importlib.util.spec_from_file_location("probe_iface", source)
    assert spec is not None and spec.loader is not None
    iface_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(iface_module)
    FaithfulIface = iface_module.FaithfulIface  # noqa: N806 - a class

    plugins = profile / "python" / "plugins"
    sys.path.insert(0, str(plugins))  # what QGIS does for the profile's plugin folder
    qgis.utils.plugin_paths = [str(plugins)]
    qgis.utils.iface = FaithfulIface()
    qgis.utils.updateAvailablePlugins()
    report: dict[str, object] = {"available": qgis.utils.available_plugins}
    report["loaded"] = qgis.utils.loadPlugin("geogpt_qgis")
    report["started"] = qgis.utils.startPlugin("geogpt_qgis")
    module = sys.modules.get("geogpt_qgis")
    report["module_file"] = getattr(module, "__file__", None)
    window = qgis.utils.iface.mainWindow()
    window.show()
    QApplication.processEvents()
    dock = window.findChild(QDockWidget, "GeoGptChatDock")
    report["dock"] = dock is not None
    if dock is not None:
        banner = dock.panel.install_banner
        report["banner"] = banner.message.text() if banner is not None else None
        report["banner_visible"] = banner is not None and banner.isVisible()
    from geogpt_qgis.toolbelt.python_env import profile_packages_dir

    report["private_folder"] = str(profile_packages_dir())
    report["sys_path"] = list(sys.path)
    report["heavy_imported"] = sorted(m for m in ("langgraph", "langchain_core") if m in sys.modules)
    report["unloaded"] = qgis.utils.unloadPlugin("geogpt_qgis")
    print("GEOGPT-PROBE " + json.dumps(report), flush=True)
    # The window goes before the application: left to Python's exit it was destroyed after QApplication,
    # and QWidget's destructor then crashed (a core at every probe on 3.40 and 3.44).
    from qgis.PyQt import sip

    qgis.utils.iface = None
    sip.delete(window)
    app.exitQgis()


if __name__ == "__main__":
    main()
