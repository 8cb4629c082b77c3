"""Spin boxes and combo boxes on a scrolling page take the mouse wheel only once clicked into.

Otherwise scrolling the options page down changes whatever value passes under
the pointer.  An unfocused guarded widget hands the wheel to the scroll area it sits in,
so the page scrolls instead.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import QCoreApplication, QEvent, QObject, Qt
from qgis.PyQt.QtWidgets import QAbstractScrollArea, QWidget


class WheelGuard(QObject):
    """The event filter: a wheel over an unfocused widget goes to the scroll area around it."""

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(obj, QWidget) or obj.hasFocus():
            return False
        area = obj.parentWidget()
        while area is not None and not isinstance(area, QAbstractScrollArea):
            area = area.parentWidget()
        if area is not None:  # straight to the page's scroll area (Qt passes no synthetic wheel up the parents)
            QCoreApplication.sendEvent(area.viewport(), event)
        return True


def guard_wheel(owner: QObject, *widgets: QWidget) -> WheelGuard:
    """Guard ``widgets`` (a click or Tab focuses them; then the wheel changes them as usual)."""
    guard = WheelGuard(owner)
    for widget in widgets:
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        widget.installEventFilter(guard)
    return guard
