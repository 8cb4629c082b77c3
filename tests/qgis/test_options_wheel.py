"""Scrolling the options page with the mouse wheel scrolls the page, not the value under the pointer."""

from __future__ import annotations

from qgis.PyQt.QtCore import QPoint, QPointF, Qt
from qgis.PyQt.QtGui import QWheelEvent
from qgis.PyQt.QtWidgets import QApplication, QScrollArea


def _wheel(widget, steps: int = -3) -> None:
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_the_page_until_a_spin_box_is_clicked_into(make_page):
    page = make_page()
    page.resize(500, 300)  # short: the page scrolls
    page.show()
    QApplication.processEvents()
    scroll = page.findChild(QScrollArea)
    spin = page.context_spin
    before, scrolled = spin.value(), scroll.verticalScrollBar().value()
    _wheel(spin)
    assert spin.value() == before  # not changed by scrolling past it
    assert scroll.verticalScrollBar().value() > scrolled  # the page scrolled instead
    spin.setFocus()
    QApplication.setActiveWindow(page)
    _wheel(spin, steps=1)
    assert spin.value() != before  # focused: the wheel changes it as usual
    page.close()
