"""A read-only text view as tall as its text (up to a cap), for items in a scrolling column."""

from __future__ import annotations

from qgis.PyQt.QtCore import QSize, Qt
from qgis.PyQt.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget


class AutoHeightTextBrowser(QTextBrowser):
    """Grows with its document; past ``max_height`` it scrolls instead."""

    def __init__(self, parent: QWidget | None = None, max_height: int | None = None) -> None:
        super().__init__(parent)
        self.max_height = max_height
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setOpenExternalLinks(True)
        # Text wraps to the width; only what cannot wrap (a wide table, a long word) scrolls, inside this box.
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAsNeeded if max_height else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )
        # Ignored width: the column decides the width and the text wraps to it.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._fit_height()

    def _fit_height(self, *_args: object) -> None:
        height = int(self.document().size().height()) + 2 * self.frameWidth() + 4
        if self.document().size().width() > self.viewport().width() + 1:  # the box's own scroll bar shows
            height += self.horizontalScrollBar().sizeHint().height()
        if self.max_height:
            height = min(height, self.max_height)
        height = max(height, 18)
        if height != self.height():
            self.setFixedHeight(height)

    def resizeEvent(self, event) -> None:  # noqa: ANN001 - Qt event
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self._fit_height()

    def sizeHint(self) -> QSize:
        return QSize(200, self.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(40, self.height())
