"""The approval card: exactly what a risky step would do, and the user's answer.

One line says what will change; a short list gives the facts (what it
affects, the layer, the file, the filter: the call's own arguments); the code
or SQL sits in a highlighted box that scrolls (and may be edited when the step
allows it).  Approve is the primary answer (Ctrl+Enter); Reject takes an
optional reason for the assistant (Ctrl+Backspace); "Always for this tool"
approves it and, for the rest of the conversation, this tool's calls on the
same layers, tables and files with the same or fewer effects (Ctrl+Shift+Enter;
``core.approval.StandingApprovals``);
approve everything in this conversation, or drop the step.  Once decided the
card folds to one line.

The card reads the request's typed targets, never its prose: once it
watches the project (``watch_project``), a layer the step was asked for
(any change: edit, remove, style, run an algorithm on it...) that leaves the
project, by id, before or while the card waits, puts a warning on it and
makes discarding the step the first choice.
"""

from __future__ import annotations

import contextlib
from typing import Any

from qgis.PyQt.QtCore import Qt, pyqtSignal
from qgis.PyQt.QtGui import QFontDatabase, QKeySequence
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

from geogpt_qgis.core.approval import APPROVE, REJECT, ApprovalRequest, StandingApprovals
from geogpt_qgis.core.targets import LAYER
from geogpt_qgis.gui.highlighter import CodeHighlighter
from geogpt_qgis.gui.responsive import ElidedLabel, ResponsiveRow
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.qt_actions import QAction

EDITOR_MAX_HEIGHT = 260


CARD_STYLE = """
QFrame#geogptApprovalCard { border: 2px solid #e0a800; border-radius: 6px; background: palette(base); }
QFrame#geogptApprovalCard[decided="true"] { border: 1px solid palette(mid); }
QPushButton#geogptApprove { font-weight: bold; background: #2b7a0b; color: white; border-radius: 4px; padding: 4px 12px;
}
QPushButton#geogptApprove:disabled { background: palette(mid); }
"""
# Facts taken from the call's arguments: at most this many, each at most this long.
MAX_FACTS = 6
MAX_FACT_CHARS = 120


class ApprovalCard(QFrame):
    """One pending approval in the chat."""

    decided = pyqtSignal(dict)  # a Decision as a dict
    dropped = pyqtSignal()

    def __init__(self, request: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = ApprovalRequest.from_dict(request)
        self.warning: QLabel | None = None  # set when a layer of the step left the project
        self._project: Any = None  # the project watched for the step's layers (``watch_project``)
        self.setObjectName("geogptApprovalCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(CARD_STYLE)
        self.title = ElidedLabel(tr("Approval needed: {action}").format(action=self.request.action))
        self.title.setStyleSheet("font-weight: bold;")
        self.outcome = ElidedLabel()  # the decision, first on the folded card's one line
        self.outcome.setVisible(False)
        self.affected = QLabel(_facts_html(self.request))
        self.affected.setVisible(bool(self.affected.text()))
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
        self.editor.setVisible(bool(self.request.details.strip()))
        self.reason = QLineEdit()
        self.reason.setPlaceholderText(tr("Reason, if you reject (the assistant reads it)"))
        self.approve_button = QPushButton(tr("Approve"))
        self.approve_button.setObjectName("geogptApprove")
        self.approve_button.setToolTip(tr("Run this step (Ctrl+Enter)"))
        self.always_button = QPushButton(tr("Always for this tool"))
        self.always_button.setObjectName("geogptAlways")
        self.always_button.setToolTip(
            tr(
                "Approve, and run {tool}'s steps that do no more than this one without asking again "
                "in this conversation (Ctrl+Shift+Enter)"
            ).format(tool=self.request.tool or tr("this tool"))
        )
        if not StandingApprovals.can_stand(self.request):
            self.always_button.setEnabled(False)
            self.always_button.setToolTip(tr("Code is approved one snippet at a time: each one can do anything"))
        self.trust_button = QPushButton(tr("Approve all in this conversation"))
        self.reject_button = QPushButton(tr("Reject"))
        self.reject_button.setToolTip(tr("Do not run it; the assistant reads your reason (Ctrl+Backspace)"))
        self.drop_button = QPushButton(tr("Drop"))
        self.drop_button.setToolTip(tr("Give up this step without continuing the conversation"))
        self._lay_out()
        self.approve_button.clicked.connect(lambda: self._approve(trust=False))
        self.always_button.clicked.connect(lambda: self._approve(trust=False, always=True))
        self.trust_button.clicked.connect(lambda: self._approve(trust=True))
        self.reject_button.clicked.connect(self._reject)
        self.drop_button.clicked.connect(self._drop)
        shortcuts = (
            ("Ctrl+Return", self.approve_button),
            ("Ctrl+Enter", self.approve_button),
            ("Ctrl+Shift+Return", self.always_button),
            ("Ctrl+Shift+Enter", self.always_button),
            ("Ctrl+Backspace", self.reject_button),
        )
        for keys, answer in shortcuts:
            action = QAction(self)
            action.setShortcut(QKeySequence(keys))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(answer.click)
            self.addAction(action)

    def _lay_out(self) -> None:
        """Title and outcome on one line over the body; the body folds away once decided."""
        self.affected.setWordWrap(True)
        self.affected.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.top = top = QHBoxLayout()
        top.addWidget(self.outcome, 3)  # once decided the decision gets most of the line, the step the rest
        top.addWidget(self.title, 1)
        # Short rows rather than one long one: the card fits a 300 px dock.
        self.approve_button.setDefault(True)
        buttons = QHBoxLayout()
        for button in (self.approve_button, self.reject_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        more = ResponsiveRow()
        more.add(self.always_button, short=tr("Always"))
        more.add(self.trust_button, short=tr("Approve all"))
        more.row.addStretch(1)
        last = QHBoxLayout()  # giving up the step, apart from the answers
        last.addWidget(self.drop_button)
        last.addStretch(1)
        self.body = QWidget()
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        for widget in (self.affected, self.editor, self.reason):
            body.addWidget(widget)
        body.addLayout(buttons)
        body.addWidget(more)
        body.addLayout(last)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.body)

    def layer_names(self) -> list[str]:
        """The project layers the step affects, by name (from the request's typed targets)."""
        return [target.name for target in self.request.targets if target.kind == LAYER]

    def layer_ids(self) -> dict[str, str]:
        """The project layers the step was approved for: id -> name (the step runs on these ids only)."""
        return {target.ident: target.name for target in self.request.targets if target.kind == LAYER}

    def gone_layers(self, project: Any) -> list[str]:
        """The names of the step's layers whose id is no longer in ``project`` (a name reused by another is gone)."""
        return [name for layer_id, name in self.layer_ids().items() if project.mapLayer(layer_id) is None]

    def watch_project(self, project: Any) -> None:
        """Warn now, and whenever layers leave ``project`` while the card waits, if one of the step's is gone."""
        self._project = project
        project.layersRemoved.connect(self._layers_removed)
        self._layers_removed()

    def _layers_removed(self, *_ids: object) -> None:
        if self.pending and self._project is not None:
            gone = self.gone_layers(self._project)
            if gone:
                self.target_gone(gone)

    def _stop_watching(self) -> None:
        if self._project is not None:
            with contextlib.suppress(TypeError, RuntimeError):  # not connected, or the project is gone
                self._project.layersRemoved.disconnect(self._layers_removed)
            self._project = None

    def target_gone(self, names: list[str]) -> None:
        """Say the step's layers are no longer in the project, and make dropping the step the first choice."""
        listed = ", ".join(f"'{name}'" for name in names)
        text = tr("{names} is no longer in the project: this step can no longer run as asked.").format(names=listed)
        if self.warning is not None:  # another of its layers went: one warning, naming them all
            self.warning.setText(text)
            return
        warning = QLabel(text)
        warning.setObjectName("geogptTargetGone")
        warning.setWordWrap(True)
        warning.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        warning.setStyleSheet("color: #a94442; font-weight: bold;")
        self.body.layout().insertWidget(0, warning)
        self.warning = warning
        self.drop_button.setText(tr("Discard this step"))
        self.approve_button.setDefault(False)
        self.drop_button.setDefault(True)

    @property
    def pending(self) -> bool:
        enabled: bool = self.approve_button.isEnabled()
        return enabled

    def _approve(self, trust: bool, always: bool = False) -> None:
        if not self.pending:
            return
        edited = self.editor.toPlainText()
        decision = {"action": APPROVE, "trust": trust, "always": always, "call_id": self.request.call_id}
        if self.request.editable and edited != self.request.details:
            decision["edited"] = edited
        outcome = tr("Approved (edited)") if "edited" in decision else tr("Approved")
        if always:
            outcome = tr("Approved (always for {tool} in this conversation)").format(tool=self.request.tool)
        self.close_with(outcome)
        self.decided.emit(decision)

    def _reject(self) -> None:
        if not self.pending:
            return
        reason = self.reason.text().strip()
        self.close_with(tr("Rejected") + (f": {reason}" if reason else ""))
        self.decided.emit({"action": REJECT, "reason": reason, "call_id": self.request.call_id})

    def _drop(self) -> None:
        self.close_with(tr("Dropped"))
        self.dropped.emit()

    def close_with(self, outcome: str) -> None:
        """Disable the answers, say what became of the step, fold to one line (also when the panel drops it)."""
        self._stop_watching()
        answers = (self.approve_button, self.always_button, self.trust_button, self.reject_button, self.drop_button)
        for widget in (*answers, self.reason):
            widget.setEnabled(False)
        self.editor.setReadOnly(True)
        self.outcome.set_full_text(outcome)
        self.outcome.setMaximumWidth(self.outcome.fontMetrics().horizontalAdvance(outcome) + 8)
        self.outcome.setVisible(True)
        self.title.set_full_text(self.request.action)
        self.body.setVisible(False)
        self.setProperty("decided", True)
        self.style().unpolish(self)
        self.style().polish(self)


def _facts_html(request: ApprovalRequest) -> str:
    """What it affects, resolved (layer id and source, table and connection, real path), what the targets do not
    say (the request's notes), then the short arguments."""
    items = [_escape(target.line()) for target in request.targets]
    items += [_escape(item) for item in request.notes]
    facts = []
    for key, value in request.args.items():
        if key == request.editable:
            continue
        values = value.items() if isinstance(value, dict) else [(key, value)]  # an algorithm's parameters
        for name, item in values:
            text = str(item)
            if isinstance(item, str | int | float | bool) and text and len(text) <= MAX_FACT_CHARS:
                facts.append(f"{_escape(str(name))}: <b>{_escape(text)}</b>")
    listed = "".join(f"<li>{item}</li>" for item in items + facts[:MAX_FACTS])
    return f"{tr('Affects:')}<ul style='margin: 0'>{listed}</ul>" if listed else ""


def _escape(text: str) -> str:
    """HTML-escaped, with a break allowed after each slash (a long path wraps instead of widening the card)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("/", "/\u200b")
