"""Under a finished answer: copy it (as Markdown) or ask the same question again.

It holds the answer's text and the question; what "again" means (a new run
of the same question) is the run controller's, which it asks through a signal.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import pyqtSignal
from qgis.PyQt.QtGui import QGuiApplication
from qgis.PyQt.QtWidgets import QHBoxLayout, QToolButton, QWidget

from geogpt_qgis.toolbelt.i18n import tr


class AnswerActions(QWidget):
    """Two small buttons: Copy (the answer's Markdown to the clipboard) and Retry (the question again)."""

    retry_requested = pyqtSignal(str)  # the question to send again

    def __init__(self, answer: str, question: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("geogptAnswerActions")
        self.answer, self.question = answer, question
        self.copy_button = QToolButton()
        self.copy_button.setText(tr("Copy"))
        self.copy_button.setToolTip(tr("Copy this answer (Markdown)"))
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy)
        self.retry_button = QToolButton()
        self.retry_button.setText(tr("Retry"))
        self.retry_button.setToolTip(tr("Ask the same question again"))
        self.retry_button.setAutoRaise(True)
        self.retry_button.setEnabled(bool(question))
        self.retry_button.clicked.connect(lambda: self.retry_requested.emit(self.question))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.copy_button)
        row.addWidget(self.retry_button)
        row.addStretch(1)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.answer)
        self.copy_button.setText(tr("Copied"))
