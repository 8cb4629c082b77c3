"""The chat panel: type a question, watch the agent work, stop it at any moment.

The panel owns the agent worker (created on the first message, so QGIS
start-up never pays for it) and renders the worker's events.  Streamed tokens
are buffered and painted on a short timer, so a fast model cannot flood the
main thread.  It lives inside ``ChatDock``, which builds it on first show.
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from typing import TYPE_CHECKING, Any

from qgis.core import QgsProject
from qgis.PyQt.QtCore import QEvent, QObject, Qt, QTimer, pyqtSignal
from qgis.PyQt.QtGui import QKeyEvent
from qgis.PyQt.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from geogpt_qgis.core.approval import APPROVE, POLICY_ASK, POLICY_NEVER, POLICY_TRUST
from geogpt_qgis.core.events import (
    ApprovalRequested,
    ModelCallFinished,
    Notice,
    ReasoningDelta,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolProgress,
    ToolStarted,
)
from geogpt_qgis.gui.approval_card import ApprovalCard
from geogpt_qgis.gui.chat_view import ChatView
from geogpt_qgis.gui.model_bar import ModelBar
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.bridge import MainThreadBridge

if TYPE_CHECKING:
    from pathlib import Path

    from qgis.gui import QgisInterface

    from geogpt_qgis.agent.worker import AgentWorker

# Top-level modules only: finding a submodule's spec would import its parents.
REQUIRED_MODULES = {
    "langgraph": "langgraph",
    "aiosqlite": "langgraph-checkpoint-sqlite",
    "langchain_core": "langchain-core",
    "langchain_ollama": "langchain-ollama",
    "langchain_openai": "langchain-openai",
}
FLUSH_INTERVAL_MS = 40


def missing_packages() -> list[str]:
    """Python packages the agent needs that this QGIS cannot import."""
    missing = []
    for module, package in REQUIRED_MODULES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(package)
    return missing


class _EnterSends(QObject):
    """Enter sends; Shift+Enter inserts a new line."""

    def __init__(self, send: Any, parent: QObject) -> None:
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


class ChatPanel(QWidget):
    """Model picker, transcript, input and buttons, and the agent worker behind them."""

    run_finished = pyqtSignal(str)  # status, for tests and scripts
    approval_shown = pyqtSignal(object)  # the ApprovalCard, for tests and scripts
    _pending_found = pyqtSignal(object)  # (thread id, ApprovalRequest or None) from the store, from the agent thread

    def __init__(
        self,
        iface: QgisInterface | None,
        project: QgsProject | None = None,
        store_path: Path | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("GeoGptChatPanel")
        self.iface = iface
        self.project = project or QgsProject.instance()
        self.store_path = store_path
        self.bridge = MainThreadBridge(self)
        self.worker: AgentWorker | None = None
        self.run_id: int | None = None
        self._pending_text: list[str] = []
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(FLUSH_INTERVAL_MS)
        self._flush_timer.timeout.connect(self._flush_text)
        self.render_seconds = 0.0  # main-thread time spent on run events (benchmarked)
        self.awaiting: ApprovalCard | None = None  # the approval the conversation waits for
        self._build_ui()
        self.project.cleared.connect(self._project_cleared)
        self._pending_found.connect(self._show_restored_approval)
        last = PlgOptionsManager.get_plg_settings().last_thread_id
        if last and not missing_packages():
            # A step of the last session may still wait for approval (it is in the store): look, off this thread.
            QTimer.singleShot(0, lambda: self._look_for_pending(last))

    # -- layout --------------------------------------------------------------
    def _build_ui(self) -> None:
        self.model_bar = ModelBar(self)
        self.chat = ChatView(self)
        self.input = QPlainTextEdit(self)
        self.input.setPlaceholderText(tr("Ask about your map… (Enter sends, Shift+Enter for a new line)"))
        self.input.setMaximumHeight(90)
        self.input.installEventFilter(_EnterSends(self.send_current, self.input))
        self.send_button = QPushButton(tr("Send"), self)
        self.send_button.setObjectName("geogptSend")
        self.send_button.clicked.connect(self._send_or_stop)
        self.new_button = QPushButton(tr("New conversation"), self)
        self.new_button.setObjectName("geogptNew")
        self.new_button.clicked.connect(self.new_conversation)
        self.status = QLabel(self)
        self.status.setObjectName("geogptStatus")
        self.policy = QComboBox(self)
        self.policy.setObjectName("geogptPolicy")
        self.policy.setToolTip(tr("Before running code, changing data or writing files"))
        for key, label in (
            (POLICY_ASK, tr("Ask before changes")),
            (POLICY_TRUST, tr("Trust this conversation")),
            (POLICY_NEVER, tr("Never allow changes")),
        ):
            self.policy.addItem(label, key)
        saved = PlgOptionsManager.get_plg_settings().approval_policy
        self.policy.setCurrentIndex(max(0, self.policy.findData(saved)))
        self.policy.currentIndexChanged.connect(
            lambda: PlgOptionsManager.set_value("approval_policy", self.policy.currentData())
        )

        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.policy)
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.model_bar)
        layout.addWidget(self.chat, 1)
        layout.addWidget(self.input)
        layout.addLayout(buttons)
        missing = missing_packages()
        if missing:
            self.chat.add_notice(
                tr(
                    "GeoGPT needs these Python packages, which this QGIS cannot import: {p}. "
                    "Install them into QGIS's Python (for example: python3 -m pip install {p})."
                ).format(p=" ".join(missing)),
                "error",
            )

    # -- running -------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.run_id is not None

    def _ensure_worker(self) -> AgentWorker:
        if self.worker is None:
            from geogpt_qgis.agent.worker import AgentWorker

            ctx = ToolContext(project=self.project, bridge=self.bridge, iface=self.iface)
            self.worker = AgentWorker(ctx, self.store_path, self)
            self.worker.event.connect(self._on_event)
        return self.worker

    def _send_or_stop(self) -> None:
        if self.busy:
            self.stop()
        else:
            self.send_current()

    def send_current(self) -> None:
        text = self.input.toPlainText().strip()
        if text and not self.busy and self.awaiting is None:
            self.input.clear()
            self.send(text)

    def send(self, text: str) -> int | None:
        """Send ``text`` to the agent; returns the run id (``None`` if it could not start)."""
        if self.busy or self.awaiting is not None:
            return None
        self.chat.add_user_message(text)
        missing = missing_packages()
        if missing:
            self.chat.add_notice(tr("Cannot run: missing Python packages: {p}.").format(p=", ".join(missing)), "error")
            return None
        config = self.model_bar.current_config()
        worker = self._ensure_worker()
        self.run_id = worker.submit(text, config, self.policy.currentData())
        PlgOptionsManager.set_value("last_thread_id", worker.thread_id)
        self._set_busy(True, tr("Thinking… ({m})").format(m=config.model or tr("no model")))
        return self.run_id

    # -- approvals -----------------------------------------------------------
    def _show_approval(self, request: dict) -> ApprovalCard:
        card = self.chat.add_approval_card(request)
        card.decided.connect(self._decide)
        card.dropped.connect(self.drop_pending)
        self.awaiting = card
        self.approval_shown.emit(card)
        return card

    def _decide(self, decision: dict) -> None:
        """The user answered the card: the paused run goes on with the decision."""
        if self.worker is None or self.busy:
            return
        self.awaiting = None
        if decision.get("trust"):
            self.policy.setCurrentIndex(self.policy.findData(POLICY_TRUST))
        config = self.model_bar.current_config()
        self.run_id = self.worker.resume(decision, config)
        approved = decision.get("action") == APPROVE
        self._set_busy(True, tr("Approved; continuing…") if approved else tr("Rejected; telling the assistant…"))

    def drop_pending(self) -> None:
        """Give up the step waiting for approval; the conversation can go on with a new message."""
        if self.worker is not None:
            self.worker.drop_pending()
        if self.awaiting is not None and self.awaiting.pending:
            self.awaiting.close_with(tr("Dropped"))
        self.awaiting = None
        self._set_busy(False, tr("Dropped the step."))

    def _look_for_pending(self, thread_id: str) -> None:
        """Ask the store (on the agent's thread) whether the last conversation waits for an approval."""
        future = self._ensure_worker().pending_approval(thread_id)
        future.add_done_callback(lambda f: self._pending_found.emit(None if f.exception() else (thread_id, f.result())))

    def _show_restored_approval(self, found: object) -> None:
        """Main thread: continue that conversation and show its card (unless the user has moved on)."""
        if not found or self.worker is None or self.awaiting is not None or self.busy:
            return
        thread_id, request = found  # type: ignore[misc]
        if request is None or self.chat.items():
            return
        self.worker.set_thread(thread_id)
        self.chat.add_notice(tr("A step from your last session is waiting for your approval."), "warning")
        self._show_approval(request.to_dict())
        self.status.setText(tr("Waiting for your approval."))

    def stop(self) -> None:
        """Stop the current run now."""
        if self.worker is not None and self.run_id is not None:
            self.worker.cancel(self.run_id)

    def new_conversation(self) -> None:
        self.stop()
        if self.awaiting is not None:
            self.drop_pending()
        if self.policy.currentData() == POLICY_TRUST:  # trust was for the old conversation only
            self.policy.setCurrentIndex(self.policy.findData(POLICY_ASK))
        if self.worker is not None:
            self.worker.new_conversation()
        self._pending_text.clear()
        self.chat.clear()
        self.status.setText(tr("New conversation."))

    def _set_busy(self, busy: bool, status: str = "") -> None:
        self.send_button.setText(tr("Stop") if busy else tr("Send"))
        self.send_button.setObjectName("geogptStop" if busy else "geogptSend")
        self.status.setText(status)

    # -- events from the worker ------------------------------------------------
    def _on_event(self, run_id: int, event: object) -> None:
        if run_id != self.run_id:
            return  # a stopped run still winding down
        started = time.perf_counter()
        if isinstance(event, TextDelta):
            self._pending_text.append(event.text)
            if not self._flush_timer.isActive():
                self._flush_timer.start()
        else:
            self._paint_pending()
            self._handle(event)
        self.render_seconds += time.perf_counter() - started

    def _handle(self, event: object) -> None:
        if isinstance(event, ReasoningDelta):
            self.chat.append_reasoning(event.text)
        elif isinstance(event, ToolStarted):
            self.chat.tool_started(event.call_id, event.name, event.args)
            self.status.setText(tr("Running {tool}…").format(tool=event.name))
        elif isinstance(event, ToolProgress):
            self.chat.tool_progress(event.call_id, event.percent)
            self.status.setText(tr("Running {tool}… {percent:.0f}%").format(tool=event.name, percent=event.percent))
        elif isinstance(event, ToolFinished):
            self.chat.tool_finished(event.call_id, event.ok, event.result, event.seconds)
            self.status.setText(tr("Thinking…"))
        elif isinstance(event, Notice):
            self.chat.add_notice(event.text, event.level)
        elif isinstance(event, ModelCallFinished):
            pass
        elif isinstance(event, ApprovalRequested):
            self._show_approval(event.request)
        elif isinstance(event, RunFinished):
            self.chat.end_turn(event.status, event.error)
            self.run_id = None
            labels = {
                "finished": tr("Done."),
                "cancelled": tr("Stopped."),
                "failed": tr("Failed."),
                "paused": tr("Waiting for your approval."),
            }
            self._set_busy(False, labels[event.status])
            self.run_finished.emit(event.status)

    def _flush_text(self) -> None:
        started = time.perf_counter()
        self._paint_pending()
        self.render_seconds += time.perf_counter() - started

    def _paint_pending(self) -> None:
        if self._pending_text:
            text = "".join(self._pending_text)
            self._pending_text.clear()
            self.chat.append_text(text)

    # -- lifecycle -------------------------------------------------------------
    def _project_cleared(self) -> None:
        """The project was closed: a running agent must not touch its layers."""
        self.stop()

    def shutdown(self) -> None:
        """Stop the agent thread and release everything (plugin unload, QGIS exit)."""
        with contextlib.suppress(TypeError):
            self.project.cleared.disconnect(self._project_cleared)
        self.bridge.close()
        if self.worker is not None:
            self.worker.shutdown()
            self.worker.event.disconnect(self._on_event)
            self.worker = None
        self._flush_timer.stop()
