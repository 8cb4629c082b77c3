"""Measure what loading the plugin costs a running QGIS: run as a fresh process.

    python -m harness.startup_probe

Prints one JSON line: the seconds spent in ``classFactory`` + ``initGui``, then
in building the chat panel (the dock's first show), the heavy third-party
modules either imported (there should be none), the plugin's own modules, and
the cost of importing the agent stack afterwards.
Modules QGIS itself has loaded by the time plugins start (``qgis.utils`` and
what it pulls in) are imported first, as in a real QGIS.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

HEAVY = (
    "langchain_core",
    "langgraph",
    "langchain_ollama",
    "langchain_openai",
    "openai",
    "ollama",
    "keyring",
    "httpx",
    "pydantic",
    "aiosqlite",
    "shapely",
    "mcp",  # the MCP server's SDK and what it brings: only when a server starts
    "mcp_types",
    "starlette",
    "uvicorn",
    "urllib.request",
    "http.client",
)


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from qgis.core import QgsApplication, QgsSettings

    app = QgsApplication([], True)
    app.initQgis()
    import qgis.utils  # noqa: F401 - loaded by QGIS before any plugin

    from harness.iface import FaithfulIface

    with tempfile.TemporaryDirectory() as profile:
        QgsApplication.qgisSettingsDirPath = staticmethod(
            lambda: profile + "/"
        )  # keep the store out of the user's profile
        QgsSettings().setValue("geogpt_qgis/dock_visible", True)
        iface = FaithfulIface()
        before = set(sys.modules)
        started = time.perf_counter()
        import geogpt_qgis

        plugin = geogpt_qgis.classFactory(iface)
        plugin.initGui()
        load_seconds = time.perf_counter() - started
        started = time.perf_counter()
        plugin.dock.panel  # noqa: B018 - what the first show of the dock builds
        panel_seconds = time.perf_counter() - started
        new = sorted(set(sys.modules) - before)
        started = time.perf_counter()
        import geogpt_qgis.agent.session

        agent_seconds = time.perf_counter() - started
        plugin.unload()
    report = {
        "load_seconds": load_seconds,
        "panel_seconds": panel_seconds,
        "agent_import_seconds": agent_seconds,
        "heavy": [m for m in new if m.split(".")[0] in HEAVY or m in HEAVY],
        "ours": [m for m in new if m.startswith("geogpt_qgis")],
    }
    print(json.dumps(report))
    app.exitQgis()


if __name__ == "__main__":
    main()
