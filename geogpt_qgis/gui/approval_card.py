"""The approval card: exactly what a risky step would do, and the user's answer.

Shows the action, what it affects, and the code or SQL (highlighted, and
editable when the step allows it).  Approve, approve everything in this
conversation, reject with a reason for the assistant, or drop the step.
"""

from __future__ import annotations

from typing import Any

from qgis.PyQt.QtCore import pyqtSignal
from qgis.PyQt.QtGui import QFontDatabase
from qgis.PyQt.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.core.approval import APPROVE, REJECT, ApprovalRequest
from geogpt_qgis.gui.highlighter import CodeHighlighter
from geogpt_qgis.gui.responsive import ResponsiveRow
from geogpt_qgis.toolbelt.i18n import tr

EDITOR_MAX_HEIGHT = 260


class ApprovalCard(QFrame):
    """One pending approval in the chat."""

    decided = pyqtSignal(dict)  # a Decision as a dict
    dropped = pyqtSignal()

    def __init__(self, request: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = ApprovalRequest.from_dict(request)
        self.setObjectName("geogptApprovalCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            "QFrame#geogptApprovalCard { border: 2px solid #e0a800; border-radius: 6px; background: palette(base); }"
        )
        self.title = QLabel(tr("Approval needed: {action}").format(action=self.request.action))
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-weight: bold;")
        affected = "".join(f"<li>{_escape(item)}</li>" for item in self.request.affected)
        self.affected = QLabel(f"{tr('Affects:')}<ul style='margin: 0'>{affected}</ul>" if affected else "")
        self.affected.setWordWrap(True)
        self.editor = QPlainTextEdit(self.request.details)
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setReadOnly(not self.request.editable)
        self.editor.setToolTip(tr("You may edit this before approving") if self.request.editable else "")
        if self.request.language in ("python", "sql"):
            self.highlighter = CodeHighlighter(self.editor.document(), self.request.language)
        # Code keeps its lines: a long one scrolls sideways in the box (room kept for the scroll bar).
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        lines = self.request.details.count("\n") + 1
        bar = self.editor.horizontalScrollBar().sizeHint().height()
        self.editor.setFixedHeight(min(EDITOR_MAX_HEIGHT, self.editor.fontMetrics().lineSpacing() * lines + 16 + bar))
        self.reason = QLineEdit()
        self.reason.setPlaceholderText(tr("Reason, if you reject (the assistant reads it)"))
        self.approve_button = QPushButton(tr("Approve"))
        self.trust_button = QPushButton(tr("Approve all in this conversation"))
        self.reject_button = QPushButton(tr("Reject"))
        self.drop_button = QPushButton(tr("Drop"))
        self.drop_button.setToolTip(tr("Give up this step without continuing the conversation"))
        self.outcome = QLabel()
        self.outcome.setVisible(False)
        # Two short rows rather than one long one: the card fits a 300 px dock.
        self.approve_button.setDefault(True)
        buttons = QHBoxLayout()
        for button in (self.approve_button, self.reject_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        more = ResponsiveRow()
        more.add(self.trust_button, short=tr("Approve all"))
        more.add(self.drop_button)
        more.row.addStretch(1)
        for label in (self.title, self.affected, self.outcome):
            label.setWordWrap(True)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.affected)
        layout.addWidget(self.editor)
        layout.addWidget(self.reason)
        layout.addLayout(buttons)
        layout.addWidget(more)
        layout.addWidget(self.outcome)
        self.approve_button.clicked.connect(lambda: self._approve(trust=False))
        self.trust_button.clicked.connect(lambda: self._approve(trust=True))
        self.reject_button.clicked.connect(self._reject)
        self.drop_button.clicked.connect(self._drop)

    @property
    def pending(self) -> bool:
        return self.approve_button.isEnabled()

    def _approve(self, trust: bool) -> None:
        edited = self.editor.toPlainText()
        decision = {"action": APPROVE, "trust": trust, "call_id": self.request.call_id}
        if self.request.editable and edited != self.request.details:
            decision["edited"] = edited
        self.close_with(tr("Approved (edited)") if "edited" in decision else tr("Approved"))
        self.decided.emit(decision)

    def _reject(self) -> None:
        reason = self.reason.text().strip()
        self.close_with(tr("Rejected") + (f": {reason}" if reason else ""))
        self.decided.emit({"action": REJECT, "reason": reason, "call_id": self.request.call_id})

    def _drop(self) -> None:
        self.close_with(tr("Dropped"))
        self.dropped.emit()

    def close_with(self, outcome: str) -> None:
        """Disable the answers and say what became of the step (also used when the panel drops it)."""
        for widget in (self.approve_button, self.trust_button, self.reject_button, self.drop_button, self.reason):
            widget.setEnabled(False)
        self.editor.setReadOnly(True)
        self.outcome.setText(outcome)
        self.outcome.setVisible(True)


def _escape(text: str) -> str:
    """HTML-escaped, with a break allowed after each slash (a long path wraps instead of widening the card)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("/", "/\u200b")
