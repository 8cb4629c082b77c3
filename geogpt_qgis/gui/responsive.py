"""A row of buttons that shows short labels when the full ones do not fit: the dock stays usable at 300 px.

A dock beside the Layers panel is about 300 px wide.  A row of buttons with
their full labels would hold the dock wider than that (a layout never gives a
widget less than its minimum), so the row reports the width it needs with the
short labels as its minimum and switches labels as it is resized.  The full
label stays in the tooltip.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import QSize, Qt
from qgis.PyQt.QtGui import QPainter
from qgis.PyQt.QtWidgets import QAbstractButton, QComboBox, QHBoxLayout, QLabel, QSizePolicy, QWidget

# Characters a combo box keeps when narrow (its items are elided beyond that).
COMBO_MIN_CHARS = 8


def narrow_combo(combo: QComboBox, chars: int = COMBO_MIN_CHARS) -> QComboBox:
    """Let ``combo`` be narrower than its longest item (a combo otherwise insists on showing all of it)."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(chars)
    return combo


class ResponsiveRow(QWidget):
    """A horizontal row; buttons added with a ``short`` label use it while the full labels do not fit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.row = QHBoxLayout(self)
        self.row.setContentsMargins(0, 0, 0, 0)
        self._labels: list[tuple[QAbstractButton, str, str]] = []
        self.compact = False

    def add(self, widget: QWidget, stretch: int = 0, short: str | None = None) -> QWidget:
        self.row.addWidget(widget, stretch)
        if short is not None and isinstance(widget, QAbstractButton):
            self._labels.append((widget, widget.text(), short))
            widget.setToolTip(widget.toolTip() or widget.text())
        return widget

    def set_label(self, button: QAbstractButton, full: str, short: str) -> None:
        """Change a button's labels (a translation, a state)."""
        self._labels = [(b, full, short) if b is button else (b, f, s) for b, f, s in self._labels]
        button.setText(short if self.compact else full)

    def _needed(self, compact: bool) -> int:
        """The row's minimum width with the full or the short labels (text widths swapped, not set)."""
        width: int = self.row.spacing() * max(0, self.row.count() - 1)
        labels = {id(button): (full, short) for button, full, short in self._labels}
        for index in range(self.row.count()):
            widget = self.row.itemAt(index).widget()
            if widget is None or widget.isHidden():
                continue
            if widget.sizePolicy().horizontalPolicy() == QSizePolicy.Policy.Ignored:
                width += widget.minimumWidth()  # it takes what is left
                continue
            hint = max(widget.minimumSizeHint().width(), widget.minimumWidth())
            if id(widget) in labels:
                metrics = widget.fontMetrics()
                shown = widget.text()
                wanted = labels[id(widget)][1 if compact else 0]
                hint += metrics.horizontalAdvance(wanted) - metrics.horizontalAdvance(shown)
            width += max(hint, 0)
        return width

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(self._needed(compact=True), hint.height())

    def resizeEvent(self, event) -> None:  # noqa: ANN001 - Qt event
        compact = event.size().width() < self._needed(compact=False)
        if compact != self.compact:
            self.compact = compact
            for button, full, short in self._labels:
                button.setText(short if compact else full)
        super().resizeEvent(event)


class ElidedLabel(QLabel):
    """One line of plain text that ends in "…" when it does not fit; ``text()`` and the tooltip keep all of it."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.set_full_text(text)

    def set_full_text(self, text: str) -> None:
        self.setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("…") * 3, super().minimumSizeHint().height())

    def paintEvent(self, event) -> None:  # noqa: ANN001, N802 - Qt override
        painter = QPainter(self)
        rect = self.contentsRect()
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, rect.width())
        painter.drawText(rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, shown)
        painter.end()
