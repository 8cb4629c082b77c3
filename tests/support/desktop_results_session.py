"""Run inside the real QGIS desktop (``qgis --code``): the agent buffers, the user saves as, QGIS quits.

The dock asks the question (a scripted model server answers with a buffer);
the result layer is given a colour, then the project is saved under a new name
through QGIS's own Save action.  The report holds the result's features, its
source before and after, and the message bar's texts.

- ``GEOGPT_REPO``, ``GEOGPT_DESKTOP_OUT``: as for ``desktop_session.py``.
- ``GEOGPT_DESKTOP_QUESTION``: the message to type into the dock.
- ``GEOGPT_DESKTOP_SAVE_AS``: where to save the project.
- ``GEOGPT_DESKTOP_COLOUR``: the fill colour given to the result.
"""

from __future__ import annotations

import json
import os
import traceback
from pathlib import Path

from qgis.core import QgsApplication, QgsFillSymbol, QgsProject, QgsSingleSymbolRenderer
from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtWidgets import QDockWidget
from qgis.utils import iface

OUT = Path(os.environ["GEOGPT_DESKTOP_OUT"])
report: dict[str, object] = {"errors": []}
state: dict[str, object] = {}


def finish(code: int = 0) -> None:
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    QgsApplication.exit(code)


def fail(message: str) -> None:
    report["errors"].append(message)  # type: ignore[union-attr]
    finish(1)


def start() -> None:
    try:
        dock = iface.mainWindow().findChild(QDockWidget, "GeoGptChatDock")
        if dock is None:
            fail("no GeoGPT dock in the main window")
            return
        panel = dock.panel
        state["panel"] = panel
        panel.run_finished.connect(save)  # the turn is complete then: its result layer is in the project
        panel.input.setPlainText(os.environ["GEOGPT_DESKTOP_QUESTION"])
        panel.composer.send_current()
    except Exception:  # noqa: BLE001 - reported to the test
        fail(traceback.format_exc())


def save(status: str) -> None:
    try:
        report["status"] = status
        project = QgsProject.instance()
        (layer,) = project.mapLayersByName("rivers_buffer_100m")
        symbol = QgsFillSymbol.createSimple({"color": os.environ["GEOGPT_DESKTOP_COLOUR"]})
        layer.setRenderer(QgsSingleSymbolRenderer(symbol))
        report["source_before"] = layer.source()
        report["wkt"] = sorted(f.geometry().asWkt(3) for f in layer.getFeatures())
        project.setFileName(os.environ["GEOGPT_DESKTOP_SAVE_AS"])  # what Save As does once the file is chosen
        iface.actionSaveProject().trigger()
        report["dirty_after_save"] = project.isDirty()
        report["source_after"] = layer.source()
        report["messages"] = [item.text() for item in iface.messageBar().items()]
        finish(0)
    except Exception:  # noqa: BLE001 - reported to the test
        fail(traceback.format_exc())


QTimer.singleShot(int(os.environ.get("GEOGPT_DESKTOP_DELAY_MS", "1500")), start)
QTimer.singleShot(int(os.environ.get("GEOGPT_DESKTOP_TIMEOUT_MS", "240000")), lambda: fail("timed out"))
