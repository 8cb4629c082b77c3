"""What a narrow dock gets wrong, found by geometry: widgets that stick out, a chat wider than its view.

Used by the in-process narrow-dock test and by the desktop session under Xvfb,
so both check the same things.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import QPoint
from qgis.PyQt.QtWidgets import QScrollArea, QWidget

SLACK = 1  # px: rounding


def _describe(widget: QWidget) -> str:
    text = getattr(widget, "text", None)
    label = text()[:40] if callable(text) else ""
    return f"{type(widget).__name__}#{widget.objectName()} {label!r}"


def sticking_out(root: QWidget) -> list[str]:
    """Visible widgets under ``root`` whose right edge lies past the visible area they are shown in.

    Inside a scroll area the limit is the area's viewport (content beyond it is
    clipped, since the chat never scrolls sideways); elsewhere it is ``root``.
    A scroll area's own content (a text box's document) is the area's business.
    """
    found = []
    for widget in root.findChildren(QWidget):
        if not widget.isVisibleTo(root) or widget.width() <= 0:
            continue
        limit_widget = root
        parent = widget.parentWidget()
        while parent is not None and parent is not root:
            area = parent.parentWidget()
            if isinstance(area, QScrollArea) and parent is area.viewport():
                limit_widget = parent
                break
            parent = parent.parentWidget()
        right = widget.mapTo(limit_widget, QPoint(widget.width(), 0)).x()
        if right > limit_widget.width() + SLACK:
            found.append(f"{_describe(widget)} ends at {right} > {limit_widget.width()}")
    return found


def chat_overflow(chat: QScrollArea) -> int:
    """How many pixels the chat column is wider than its view (0: no sideways scrolling needed)."""
    return max(0, chat.widget().width() - chat.viewport().width(), chat.horizontalScrollBar().maximum())
