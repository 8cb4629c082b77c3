"""One process-wide signal: "the settings were saved elsewhere, re-read them".

The options page emits it after it saved; the dock's model picker listens,
so a provider, URL or model chosen in Settings > Options shows in the dock
at once.  A receiver that is deleted is disconnected by Qt.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import QObject, pyqtSignal


class SettingsEvents(QObject):
    changed = pyqtSignal()


_events: SettingsEvents | None = None


def settings_events() -> SettingsEvents:
    """The shared notifier (created on first use, on the main thread)."""
    global _events  # one notifier per process
    if _events is None:
        _events = SettingsEvents()
    return _events
