"""Run inside the real QGIS desktop (``qgis --code``): take the dock through the layout tour at each width.

The plugin settings point at a server that is not there (first run); the
session then starts a scripted model server (tests/support/layout_tour.py) and
points the dock's picker at it.  At each stage (first run, answer, approval,
stopped run) the dock is docked at 300, 450 and 800 px with
``QMainWindow.resizeDocks`` and measured (tests/support/layout_check.py); with
``GEOGPT_DESKTOP_SHOTS`` set, pictures of the dock (and one of the whole
window, ``screenshot.png``) are saved there.

Environment: ``GEOGPT_REPO``, ``GEOGPT_DESKTOP_OUT`` (JSON report), ``GEOGPT_DESKTOP_SHOTS`` (folder, optional).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from qgis.core import QgsApplication
from qgis.PyQt.QtCore import Qt, QTimer
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QDockWidget
from qgis.utils import iface

REPO = Path(os.environ["GEOGPT_REPO"])
OUT = Path(os.environ["GEOGPT_DESKTOP_OUT"])
SHOTS = Path(os.environ["GEOGPT_DESKTOP_SHOTS"]) if os.environ.get("GEOGPT_DESKTOP_SHOTS") else None
sys.path.insert(0, str(REPO))
report: dict = {"errors": [], "measures": [], "shots": [], "held": []}
POLL_MS = 50
SETTLE_S = 0.4  # after a resize: QGIS lays the dock area out over a few turns of the event loop
STEADY_POLLS = 4  # ... and the layout counts as settled once it stays the same this many polls in a row

Wait = Callable[[], bool]


def finish(code: int = 0) -> None:
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    QgsApplication.exit(code)


def pause(seconds: float) -> Wait:
    until = time.monotonic() + seconds
    return lambda: time.monotonic() >= until


def settled(dock: QDockWidget) -> Wait:
    """True once SETTLE_S has passed and the dock's layout has stayed the same for STEADY_POLLS polls.

    Each poll is a turn of the event loop, so on a loaded machine (fewer turns per second) it waits longer,
    rather than measuring a layout QGIS has not finished.
    """
    until = time.monotonic() + SETTLE_S
    seen: list[tuple[int, ...]] = []

    def shape() -> tuple[int, ...]:
        panel = dock.panel
        return (dock.width(), panel.width(), panel.chat.viewport().width(), iface.mainWindow().width())

    def done() -> bool:
        seen.append(shape())
        steady = len(seen) >= STEADY_POLLS and len(set(seen[-STEADY_POLLS:])) == 1
        return steady and time.monotonic() >= until

    return done


def measure(dock: QDockWidget, stage: str, shot_width: int | None = None) -> Iterator[Wait]:
    """Dock at each width, let it settle, record what sticks out; save pictures when asked."""
    from tests.support.layout_check import chat_overflow, sticking_out
    from tests.support.layout_tour import WIDTHS

    panel = dock.panel
    for width in WIDTHS:
        iface.mainWindow().resizeDocks([dock], [width], Qt.Orientation.Horizontal)
        yield settled(dock)
        report["measures"].append(
            {
                "stage": stage,
                "width": width,
                "dock_width": dock.width(),
                "sticking_out": sticking_out(panel),
                "chat_overflow": chat_overflow(panel.chat),
                "chat_hbar": panel.chat.horizontalScrollBar().isVisible(),
            }
        )
        report["measures"][-1]["window_width"] = iface.mainWindow().width()
        if SHOTS is not None and (width == WIDTHS[0] or shot_width is not None):
            path = SHOTS / f"dock-{stage}-{width}.png"
            dock.grab().save(str(path))
            report["shots"].append(str(path))
            if width == shot_width:
                whole = SHOTS / "screenshot.png"
                iface.mainWindow().grab().save(str(whole))
                report["shots"].append(str(whole))


def ask(dock: QDockWidget, question: str) -> Iterator[Wait]:
    """Dock at the narrowest width, then send: the dock must keep that width while the answer arrives."""
    from tests.support.layout_tour import WIDTHS

    iface.mainWindow().resizeDocks([dock], [WIDTHS[0]], Qt.Orientation.Horizontal)
    yield settled(dock)
    report["held"].append([question, WIDTHS[0], dock.width()])
    dock.panel.input.setPlainText(question)
    dock.panel.composer.send_current()


def tour() -> Iterator[Wait]:
    from geogpt_qgis.gui.markdown_view import MarkdownView
    from geogpt_qgis.gui.server_state import ServerStatus
    from tests.support.layout_tour import APPROVAL_QUESTION, QUESTION, STOP_QUESTION, turns
    from tests.support.model_server import ScriptedModelServer, ToolCall, Turn

    dock = iface.mainWindow().findChild(QDockWidget, "GeoGptChatDock")
    assert dock is not None, "no GeoGPT dock in the main window"
    dock.show()
    panel = dock.panel
    picker = panel.model_bar
    yield lambda: picker.state.status == ServerStatus.UNREACHABLE
    report["first_run_state"] = panel.first_run.state_label.text()
    report["send_enabled_first_run"] = panel.send_button.isEnabled()
    yield from measure(dock, "first-run")

    server = ScriptedModelServer(
        [
            Turn(
                text=t.get("text", ""),
                chunk_delay=t.get("chunk_delay", 0.0),
                tool_calls=[ToolCall(c["name"], c.get("arguments", {})) for c in t.get("tool_calls", [])],
            )
            for t in turns()
        ]
    ).start()
    report["server"] = server.url
    picker.url_edit.setText(server.url)
    picker.url_edit.editingFinished.emit()
    yield lambda: picker.state.status == ServerStatus.READY
    statuses: list[str] = []
    panel.run_finished.connect(statuses.append)
    report["statuses"] = statuses

    yield from ask(dock, QUESTION)
    yield lambda: statuses == ["finished"]
    report["held"][-1].append(dock.width())
    yield from measure(dock, "answer", shot_width=450)

    yield from ask(dock, APPROVAL_QUESTION)
    yield lambda: statuses[-1:] == ["paused"]
    panel.chat.ensureWidgetVisible(panel.runs.awaiting)
    report["held"][-1].append(dock.width())
    yield from measure(dock, "approval")
    QTest.mouseClick(panel.runs.awaiting.reject_button, Qt.MouseButton.LeftButton)
    yield lambda: statuses[-1:] == ["finished"]

    yield from ask(dock, STOP_QUESTION)
    yield lambda: any(
        "School 3 " in view.toPlainText() for view in panel.chat.items() if isinstance(view, MarkdownView)
    )
    yield pause(1.0)
    QTest.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
    yield lambda: statuses[-1:] == ["cancelled"]
    report["held"][-1].append(dock.width())
    yield from measure(dock, "stopped")
    report["statuses"] = list(statuses)
    server.stop()


def drive(steps: Iterator[Wait], waiting: Wait | None = None) -> None:
    """Advance the tour whenever what it waits for is true (polled on the main thread)."""
    try:
        while waiting is None or waiting():
            waiting = next(steps)
            report["waiting_at_line"] = waiting.__code__.co_firstlineno  # where a time-out stopped
    except StopIteration:
        finish(0)
        return
    except Exception:  # noqa: BLE001 - reported to the test
        report["errors"].append(traceback.format_exc())
        finish(1)
        return
    QTimer.singleShot(POLL_MS, lambda: drive(steps, waiting))


def time_out() -> None:
    report["errors"].append("timed out")
    finish(1)


QTimer.singleShot(1500, lambda: drive(tour()))
QTimer.singleShot(int(os.environ.get("GEOGPT_DESKTOP_TIMEOUT_MS", "240000")), time_out)
