"""On a QGIS whose Python is too old the plugin says so instead of failing to import."""

from __future__ import annotations

import ast
from pathlib import Path

import geogpt_qgis


class _Bar:
    def __init__(self) -> None:
        self.shown: list[tuple[str, str]] = []

    def pushCritical(self, title: str, text: str) -> None:  # noqa: N802 (QGIS's name)
        self.shown.append((title, text))


class _Iface:
    def __init__(self) -> None:
        self.bar = _Bar()

    def messageBar(self) -> _Bar:  # noqa: N802 (QGIS's name)
        return self.bar


def test_package_entry_parses_as_python_3_9() -> None:
    source = Path(geogpt_qgis.__file__).read_text(encoding="utf-8")
    ast.parse(source, feature_version=(3, 9))


def test_too_old_python_gets_a_message_not_a_traceback(monkeypatch) -> None:
    monkeypatch.setattr(geogpt_qgis, "MINIMUM_PYTHON", (99, 0))
    iface = _Iface()
    plugin = geogpt_qgis.classFactory(iface)
    assert isinstance(plugin, geogpt_qgis.PythonTooOld)
    plugin.initGui()
    plugin.unload()
    [(title, text)] = iface.bar.shown
    assert title == "GeoGPT"
    assert "Python 3.11" in text and "3.34" in text
