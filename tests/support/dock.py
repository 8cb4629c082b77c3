"""Drive the chat dock in tests: point it at the scripted server, open it, type, find what it shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtTest import QTest

from geogpt_qgis.gui.chat_panel import ChatPanel
from geogpt_qgis.gui.dock import ChatDock
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager


def configure(server: Any, provider: str = "ollama") -> None:
    """Save settings that point the dock at the scripted model server."""
    PlgOptionsManager.set_value("provider", provider)
    if provider == "ollama":
        PlgOptionsManager.set_value("ollama_url", server.url)
        PlgOptionsManager.set_value("ollama_model", "qwen3:8b")
    else:
        PlgOptionsManager.set_value("openai_base_url", server.url + "/v1")
        PlgOptionsManager.set_value("openai_model", "qwen3:8b")
    PlgOptionsManager.set_value("request_timeout", 60.0)  # a loaded machine can stall a local reply for seconds


def open_dock(iface: Any, project: Any, store: Path) -> ChatDock:
    """A shown dock whose panel records how runs ended in ``panel.statuses``."""
    dock = ChatDock(iface, project, store_path=store)
    dock.resize(420, 700)
    dock.show()
    statuses: list[str] = []
    dock.panel.run_finished.connect(statuses.append)
    dock.panel.statuses = statuses  # type: ignore[attr-defined]
    return dock


def close_dock(dock: ChatDock) -> None:
    dock.shutdown()
    dock.deleteLater()


def type_and_send(panel: ChatPanel, text: str) -> None:
    panel.input.setFocus()
    QTest.keyClicks(panel.input, text)
    QTest.keyClick(panel.input, Qt.Key.Key_Return)


def items_of(panel: ChatPanel, kind: type) -> list:
    return [w for w in panel.chat.items() if isinstance(w, kind)]
