"""The dock's input row: the question box, the run's status, the context meter, the approval choice, Send/Stop.

It knows nothing of the agent: it asks for a message to be sent or the run
to be stopped (signals), and shows what the run controller tells it.
"""

from __future__ import annotations

from collections.abc import Callable

from qgis.PyQt.QtCore import QEvent, QObject, Qt, pyqtSignal
from qgis.PyQt.QtGui import QKeyEvent
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.core.approval import POLICY_ASK, POLICY_NEVER, POLICY_TRUST
from geogpt_qgis.gui.context_meter import ContextMeter
from geogpt_qgis.gui.responsive import narrow_combo
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager


class _EnterSends(QObject):
    """Enter sends; Shift+Enter inserts a new line."""

    def __init__(self, send: Callable[[], None], parent: QObject) -> None:
        super().__init__(parent)
        self._send = send

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        is_enter = (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        )
        if is_enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self._send()
            return True
        return False


class ChatInput(QWidget):
    """The question box and the row under it; ``busy`` turns Send into Stop."""

    send_requested = pyqtSignal(str)  # the text typed, stripped and taken out of the box
    stop_requested = pyqtSignal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.busy = False
        self.blocked = ""  # why Send is off (the server is known not to be usable), or ""
        self.edit = QPlainTextEdit(self)
        self.edit.setPlaceholderText(tr("Ask about your map… (Enter sends, Shift+Enter for a new line)"))
        self.edit.setMaximumHeight(90)
        self.edit.installEventFilter(_EnterSends(self.send_current, self.edit))
        self.send_button = QPushButton(tr("Send"), self)
        self.send_button.setObjectName("geogptSend")
        self.send_button.clicked.connect(self._send_or_stop)
        self.status = QLabel(self)
        self.status.setObjectName("geogptStatus")
        self.status.setWordWrap(True)  # its own line, wrapped: a long status never widens the dock
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.meter = ContextMeter(self)
        self.policy = narrow_combo(QComboBox(self), 5)
        self.policy.setObjectName("geogptPolicy")
        self.policy.setToolTip(tr("Before running code, changing data or writing files"))
        for key, label in (
            (POLICY_ASK, tr("Ask before changes")),
            (POLICY_TRUST, tr("Trust this conversation")),
            (POLICY_NEVER, tr("Never allow changes")),
        ):
            self.policy.addItem(label, key)
        self.choose_policy(PlgOptionsManager.get_plg_settings().approval_policy)
        self.policy.currentIndexChanged.connect(
            lambda: PlgOptionsManager.set_value("approval_policy", self.policy.currentData())
        )
        # The meter shares the status's line, so the approval choice keeps room for its whole label at 300 px.
        status_row = QHBoxLayout()
        status_row.addWidget(self.status, 1)
        status_row.addWidget(self.meter, 0, Qt.AlignmentFlag.AlignTop)
        buttons = QHBoxLayout()
        buttons.addWidget(self.policy, 1)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit)
        layout.addLayout(status_row)
        layout.addLayout(buttons)

    def send_current(self) -> None:
        """Ask to send what is typed (Enter, or Send); nothing while a run is under way."""
        text = self.edit.toPlainText().strip()
        if self.blocked and not self.busy:
            self.status.setText(self.blocked)
            return
        if text and not self.busy:
            self.send_requested.emit(text)

    def _send_or_stop(self) -> None:
        if self.busy:
            self.stop_requested.emit()
        else:
            self.send_current()

    def set_busy(self, busy: bool, status: str = "") -> None:
        self.busy = busy
        self.send_button.setText(tr("Stop") if busy else tr("Send"))
        self.send_button.setObjectName("geogptStop" if busy else "geogptSend")
        self.status.setText(status)
        self._show_blocked()

    def set_blocked(self, reason: str) -> None:
        """Turn Send off with ``reason`` as its tooltip (the model server cannot answer yet); "" turns it on."""
        self.blocked = reason
        self._show_blocked()

    def _show_blocked(self) -> None:
        off = bool(self.blocked) and not self.busy  # Stop always works
        self.send_button.setEnabled(not off)
        self.send_button.setToolTip(self.blocked if off else "")

    def approval_policy(self) -> str:
        policy: str = self.policy.currentData()
        return policy

    def choose_policy(self, key: str) -> None:
        self.policy.setCurrentIndex(max(0, self.policy.findData(key)))

    def forget_trust(self) -> None:
        """Trust was for one conversation only: a new one asks again."""
        if self.approval_policy() == POLICY_TRUST:
            self.choose_policy(POLICY_ASK)
