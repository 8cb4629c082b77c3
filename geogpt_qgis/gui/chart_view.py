"""A chart in the chat: the PNG make_chart saved, scaled to the column, with Open and Save as….

The image was drawn on the worker thread; here it is only loaded (a small PNG)
and scaled, on the main thread.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from qgis.PyQt.QtCore import QSize, Qt, QUrl
from qgis.PyQt.QtGui import QDesktopServices, QPixmap
from qgis.PyQt.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.toolbelt.i18n import tr


class _ScaledImage(QLabel):
    """A pixmap that keeps its aspect ratio at the column's width (never wider than the image itself)."""

    def __init__(self, pixmap: QPixmap, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._original = pixmap
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self._fit(max(pixmap.width(), 1))

    def _fit(self, width: int) -> None:
        width = max(40, min(width, self._original.width()))
        scaled = self._original.scaledToWidth(width, Qt.TransformationMode.SmoothTransformation)
        self.setPixmap(scaled)
        self.setFixedHeight(scaled.height())

    def resizeEvent(self, event) -> None:  # noqa: ANN001 - Qt event
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self._fit(event.size().width())

    def sizeHint(self) -> QSize:
        return QSize(min(self._original.width(), 360), self.height())


class ChartView(QFrame):
    """The chart image and its buttons; ``path`` is the PNG in the profile."""

    def __init__(self, path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("geogptChart")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.path = path
        pixmap = QPixmap(path)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        if pixmap.isNull():
            self.image: QLabel = QLabel(tr("The chart image is missing: {p}").format(p=path), self)
            self.image.setWordWrap(True)
        else:
            self.image = _ScaledImage(pixmap, self)
            self.image.setToolTip(path)
        layout.addWidget(self.image)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.open_button = QToolButton(self)
        self.open_button.setText(tr("Open"))
        self.open_button.clicked.connect(self.open_image)
        self.save_button = QToolButton(self)
        self.save_button.setText(tr("Save as…"))
        self.save_button.clicked.connect(self.ask_save)
        for button in (self.open_button, self.save_button):
            button.setEnabled(not pixmap.isNull())
            buttons.addWidget(button)
        layout.addLayout(buttons)

    @property
    def loaded(self) -> bool:
        return isinstance(self.image, _ScaledImage)

    def open_image(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(self.path))

    def ask_save(self) -> None:
        target, _ = QFileDialog.getSaveFileName(self, tr("Save chart"), Path(self.path).name, "PNG (*.png)")
        if target:
            self.save_to(target)

    def save_to(self, target: str) -> Path:
        """Copy the PNG to ``target`` (a ``.png`` suffix added if missing)."""
        destination = Path(target)
        if destination.suffix.lower() != ".png":
            destination = destination.with_suffix(".png")
        shutil.copyfile(self.path, destination)
        return destination
