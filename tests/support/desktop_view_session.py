"""Run inside the real QGIS desktop (``qgis --code``): report the map canvas's extent once the project is open.

Configured through ``GEOGPT_DESKTOP_OUT`` (the JSON report path).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from qgis.core import QgsApplication, QgsProject
from qgis.PyQt.QtCore import QTimer
from qgis.utils import iface

OUT = Path(os.environ["GEOGPT_DESKTOP_OUT"])
report: dict[str, object] = {"errors": []}
tries = {"left": 480}  # polled every 250 ms: up to 120 s for QGIS to open the project


def report_extent() -> None:
    project = QgsProject.instance()
    if not project.mapLayers() and tries["left"] > 0:  # QGIS opens the project given on its command line later
        tries["left"] -= 1
        QTimer.singleShot(250, report_extent)
        return
    canvas = iface.mapCanvas()
    extent = canvas.extent()
    report["layers"] = len(project.mapLayers())
    report["canvas"] = [extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum()]
    report["canvas_crs"] = canvas.mapSettings().destinationCrs().authid()
    OUT.write_text(json.dumps(report, indent=2))
    project.clear()  # as File > Exit does: the project closes before the application
    QgsApplication.exit(0)


QTimer.singleShot(500, report_extent)
