"""The chat panel: type a question, watch the agent work, stop it at any moment.

The panel owns the agent worker (created on the first message, so QGIS
start-up never pays for it) and renders the worker's events.  Streamed tokens
are buffered and painted on a short timer, so a fast model cannot flood the
main thread.  It lives inside ``ChatDock``, which builds it on first show.

Conversations are kept in the store: the panel lists, resumes, renames,
deletes and exports them, reopens the last one when QGIS starts again, and
tells the model what the user changed in the project between turns.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qgis.core import QgsProject
from qgis.PyQt.QtCore import QEvent, QObject, Qt, QTimer, pyqtSignal
from qgis.PyQt.QtGui import QKeyEvent
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.agent.store import title_from
from geogpt_qgis.core.approval import APPROVE, POLICY_ASK, POLICY_NEVER, POLICY_TRUST
from geogpt_qgis.core.events import (
    AnswerCut,
    ApprovalRequested,
    ContextUsage,
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
from geogpt_qgis.gui.background import FutureRelay
from geogpt_qgis.gui.chat_view import ChatView
from geogpt_qgis.gui.context_meter import ContextMeter
from geogpt_qgis.gui.conversation_bar import ConversationBar
from geogpt_qgis.gui.conversations_page import ConversationsPage
from geogpt_qgis.gui.markdown_dialog import MarkdownDialog
from geogpt_qgis.gui.server_picker import ServerPicker
from geogpt_qgis.gui.sources_view import TurnSources
from geogpt_qgis.toolbelt.dependencies import missing_packages
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.project_watch import ProjectWatcher

if TYPE_CHECKING:
    from qgis.gui import QgisInterface

    from geogpt_qgis.agent.session import OpenedConversation
    from geogpt_qgis.agent.worker import AgentWorker
    from geogpt_qgis.gui.install_banner import InstallBanner

FLUSH_INTERVAL_MS = 40


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
    conversation_opened = pyqtSignal(str)  # thread id, once its history is shown
    conversations_listed = pyqtSignal()  # the list page was (re)filled

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
        self.relay = FutureRelay(self)
        self.watcher = ProjectWatcher(self.project, self.bridge, self)
        self.dialogs: list[MarkdownDialog] = []
        self.turn_sources = TurnSources()  # the tool calls behind the answer being written
        self._build_ui()
        self.chat.layer_clicked.connect(self.select_layer)
        self.project.cleared.connect(self._project_cleared)
        last = PlgOptionsManager.get_plg_settings().last_thread_id
        if last and not missing_packages():
            # Come back to the last conversation (read from the store off this thread).
            QTimer.singleShot(0, lambda: self.open_conversation(last, restoring=True))

    # -- layout --------------------------------------------------------------
    def _build_ui(self) -> None:
        self.model_bar = ServerPicker(self, live=True)
        self.conversation_bar = ConversationBar(self)
        self.new_button = self.conversation_bar.new_button
        self.chat = ChatView(self)
        self.conversations = ConversationsPage(self)
        self.pages = QStackedWidget(self)
        self.pages.addWidget(self.chat)
        self.pages.addWidget(self.conversations)
        self.input = QPlainTextEdit(self)
        self.input.setPlaceholderText(tr("Ask about your map… (Enter sends, Shift+Enter for a new line)"))
        self.input.setMaximumHeight(90)
        self.input.installEventFilter(_EnterSends(self.send_current, self.input))
        self.send_button = QPushButton(tr("Send"), self)
        self.send_button.setObjectName("geogptSend")
        self.send_button.clicked.connect(self._send_or_stop)
        self.status = QLabel(self)
        self.status.setObjectName("geogptStatus")
        self.meter = ContextMeter(self)
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

        bar = self.conversation_bar
        bar.new_requested.connect(self.new_conversation)
        bar.list_toggled.connect(lambda shown: self.show_conversations() if shown else self.show_chat())
        bar.rename_requested.connect(lambda: self.ask_rename(self._current_thread()))
        bar.export_requested.connect(lambda: self.ask_export(self._current_thread()))
        bar.delete_requested.connect(lambda: self.ask_delete(self._current_thread()))
        bar.run_log_requested.connect(self.show_run_log)
        page = self.conversations
        page.open_requested.connect(self.open_conversation)
        page.rename_requested.connect(self.ask_rename)
        page.export_requested.connect(self.ask_export)
        page.delete_requested.connect(self.ask_delete)
        page.refresh_requested.connect(self.show_conversations)
        page.closed.connect(self.show_chat)

        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.meter)
        buttons.addWidget(self.policy)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.model_bar)
        layout.addWidget(self.conversation_bar)
        layout.addWidget(self.pages, 1)
        layout.addWidget(self.input)
        layout.addLayout(buttons)
        self.install_banner: InstallBanner | None = None
        missing = missing_packages()
        if missing:  # names them and offers to install them into the profile
            from geogpt_qgis.gui.install_banner import InstallBanner

            self.install_banner = InstallBanner(missing, self)
            self.install_banner.installed.connect(
                lambda: self.chat.add_notice(tr("The Python packages are installed: ask away."), "info")
            )
            layout.insertWidget(0, self.install_banner)

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
        self.show_chat()
        # What the user changed in the project since the last answer; a new conversation starts from the brief.
        note = self.watcher.drain()
        if not self._has_turns():
            note = ""
        if note:
            self.chat.add_notice(note, "info")
        self.chat.add_user_message(text)
        missing = missing_packages()
        if missing:
            self.chat.add_notice(tr("Cannot run: missing Python packages: {p}.").format(p=", ".join(missing)), "error")
            return None
        if not self._has_turns(before_last=True):
            self.conversation_bar.set_title(title_from(text))
        config = self.model_bar.current_config()
        worker = self._ensure_worker()
        self.turn_sources.reset()
        self.run_id = worker.submit(text, config, self.policy.currentData(), note)
        PlgOptionsManager.set_value("last_thread_id", worker.thread_id)
        self._set_busy(True, tr("Thinking… ({m})").format(m=config.model or tr("no model")))
        return self.run_id

    def _has_turns(self, before_last: bool = False) -> bool:
        """Whether the conversation on screen has user messages (``before_last``: besides the newest)."""
        users = [w for w in self.chat.items() if w.objectName() == "geogptUserMessage"]
        return len(users) > (1 if before_last else 0)

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

    # -- conversations -----------------------------------------------------------
    def _current_thread(self) -> str | None:
        return self.worker.thread_id if self.worker is not None else None

    def show_chat(self) -> None:
        self.pages.setCurrentWidget(self.chat)
        self.conversation_bar.list_button.setChecked(False)

    def show_conversations(self) -> None:
        """Switch to the conversation list and fill it from the store."""
        self.pages.setCurrentWidget(self.conversations)
        self.conversation_bar.list_button.setChecked(True)
        if missing_packages():
            return
        worker = self._ensure_worker()
        project = self.project.fileName() if self.conversations.only_project.isChecked() else None
        self.relay.when_done(worker.conversations(project), self._listed, self._store_failed)

    def _listed(self, conversations: list) -> None:
        self.conversations.show_conversations(conversations, self._current_thread())
        self.conversations_listed.emit()

    def open_conversation(self, thread_id: str, restoring: bool = False) -> None:
        """Continue a stored conversation: its whole history in the chat, any waiting approval on top.

        ``restoring``: QGIS just started; reopen the last conversation unless the user already typed.
        """
        if self.busy or (restoring and self.chat.items()):
            return
        if self.awaiting is not None and self.awaiting.pending:
            self.awaiting.close_with(tr("Left for later"))
        self.awaiting = None
        worker = self._ensure_worker()
        self.relay.when_done(
            worker.open_conversation(thread_id), lambda opened: self._opened(opened, restoring), self._store_failed
        )

    def _opened(self, opened: OpenedConversation, restoring: bool) -> None:
        if self.busy or (restoring and self.chat.items()):
            return
        self.chat.clear()
        self._pending_text.clear()
        self.chat.show_transcript(opened.entries, lambda: self.conversation_opened.emit(opened.thread_id))
        self.meter.reset_usage()
        self.watcher.drain()  # changes made before the conversation was opened are not news to it
        PlgOptionsManager.set_value("last_thread_id", opened.thread_id)
        first = next((e.text for e in opened.entries if e.kind == "user"), "")
        self.conversation_bar.set_title(title_from(first))  # at once; a renamed title follows from the store
        self.relay.when_done(
            self._ensure_worker().conversations(), lambda found: self._set_title_from(found, opened.thread_id)
        )
        self.show_chat()
        self.status.setText(tr("Conversation restored.") if opened.entries else "")
        if opened.pending is not None:
            self.chat.add_notice(tr("This step is waiting for your approval."), "warning")
            self._show_approval(opened.pending.to_dict())
            self.status.setText(tr("Waiting for your approval."))

    def _set_title_from(self, conversations: list, thread_id: str) -> None:
        """The stored title (it may have been renamed); without one, the title from the first message stays."""
        info = next((c for c in conversations if c.thread_id == thread_id), None)
        if info is not None:
            self.conversation_bar.set_title(info.title)

    def rename_conversation(self, thread_id: str, title: str) -> None:
        worker = self._ensure_worker()

        def renamed(_result: object) -> None:
            if thread_id == self._current_thread():
                self.conversation_bar.set_title(" ".join(title.split()))
            if self.pages.currentWidget() is self.conversations:
                self.show_conversations()

        self.relay.when_done(worker.rename_conversation(thread_id, title), renamed, self._store_failed)

    def delete_conversation(self, thread_id: str) -> None:
        worker = self._ensure_worker()
        current = thread_id == worker.thread_id
        if current:
            self.stop()
            self.awaiting = None

        def deleted(_result: object) -> None:
            if current:
                self.chat.clear()
                self.conversation_bar.set_title("")
                self.meter.reset_usage()
            self.status.setText(tr("Conversation deleted."))
            if self.pages.currentWidget() is self.conversations:
                self.show_conversations()

        self.relay.when_done(worker.delete_conversation(thread_id), deleted, self._store_failed)

    def export_conversation(self, thread_id: str, path: str) -> None:
        """Write the conversation, tool steps and results included, to ``path`` as Markdown."""

        def write(markdown: str) -> None:
            try:
                Path(path).write_text(markdown, encoding="utf-8")
            except OSError as exc:
                self.status.setText(tr("Could not export: {e}").format(e=exc))
                return
            self.status.setText(tr("Exported to {p}").format(p=path))

        self.relay.when_done(self._ensure_worker().export_conversation(thread_id), write, self._store_failed)

    def show_run_log(self) -> None:
        """Open the run log of the conversation on screen in a window."""
        if missing_packages():
            return

        def show(markdown: str) -> None:
            dialog = MarkdownDialog(tr("GeoGPT run log"), markdown, self)
            self.dialogs = [d for d in self.dialogs if d.isVisible()] + [dialog]
            dialog.show()

        self.relay.when_done(self._ensure_worker().run_log(), show, self._store_failed)

    # Dialog front-ends of the actions above (tests call the actions directly).
    def ask_rename(self, thread_id: str | None) -> None:
        if not thread_id:
            return
        title, ok = QInputDialog.getText(self, tr("Rename conversation"), tr("Title:"))
        if ok and title.strip():
            self.rename_conversation(thread_id, title)

    def ask_export(self, thread_id: str | None) -> None:
        if not thread_id:
            return
        path, _ = QFileDialog.getSaveFileName(self, tr("Export conversation"), "conversation.md", tr("Markdown (*.md)"))
        if path:
            self.export_conversation(thread_id, path)

    def ask_delete(self, thread_id: str | None) -> None:
        if not thread_id:
            return
        answer = QMessageBox.question(
            self, tr("Delete conversation"), tr("Delete this conversation and its run log? This cannot be undone.")
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_conversation(thread_id)

    def _store_failed(self, error: BaseException) -> None:
        self.status.setText(tr("The conversation store failed: {e}").format(e=error))

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
        self.show_chat()
        self.conversation_bar.set_title("")
        self.meter.reset_usage()
        self.watcher.drain()
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
        self.turn_sources.record(event)
        if isinstance(event, ReasoningDelta):
            self.chat.append_reasoning(event.text)
        elif isinstance(event, ToolStarted):
            self.chat.tool_started(event.call_id, event.name, event.args)
            self.status.setText(tr("Running {tool}…").format(tool=event.name))
        elif isinstance(event, ToolProgress):
            self.chat.tool_progress(event.call_id, event.percent)
            self.status.setText(tr("Running {tool}… {percent:.0f}%").format(tool=event.name, percent=event.percent))
        elif isinstance(event, ToolFinished):
            self.chat.tool_finished(event.call_id, event.ok, event.result, event.seconds, event.artifact)
            self.status.setText(tr("Thinking…"))
        elif isinstance(event, AnswerCut):
            self.chat.add_notice(answer_cut_text(event), event.level)
        elif isinstance(event, Notice):
            self.chat.add_notice(event.text, event.level)
        elif isinstance(event, ContextUsage):
            self.meter.show_usage(event.used, event.limit, event.reserved, event.omitted)
        elif isinstance(event, ModelCallFinished):
            pass
        elif isinstance(event, ApprovalRequested):
            self._show_approval(event.request)
        elif isinstance(event, RunFinished):
            self.chat.end_turn(event.status, event.error)
            if event.status == "finished":
                self._show_sources()
            self.run_id = None
            labels = {
                "finished": tr("Done."),
                "cancelled": tr("Stopped."),
                "failed": tr("Failed."),
                "paused": tr("Waiting for your approval."),
            }
            self._set_busy(False, labels[event.status])
            self.run_finished.emit(event.status)

    def _show_sources(self) -> None:
        """Under the final answer: what it rests on, from the artifacts of the calls that ran."""
        sources = self.turn_sources.sources()
        self.turn_sources.reset()
        if not sources.empty:
            self.chat.add_sources(sources)

    def select_layer(self, name: str) -> None:
        """A layer name was clicked in Sources: make it the current layer of the layer tree."""
        layer = next(iter(self.project.mapLayersByName(name)), None) or self.project.mapLayer(name)
        if layer is None:
            self.status.setText(tr("The layer {name} is no longer in the project.").format(name=name))
            return
        if self.iface is not None:
            self.iface.setActiveLayer(layer)
        self.status.setText(tr("Selected layer {name}.").format(name=layer.name()))

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
        self.watcher.close()
        self.bridge.close()
        if self.install_banner is not None:
            self.install_banner.cancel()  # stops pip
        if self.worker is not None:
            self.worker.shutdown()
            self.worker.event.disconnect(self._on_event)
            self.worker = None
        self._flush_timer.stop()


def answer_cut_text(event: AnswerCut) -> str:
    """Why the model's reply was ended early, in the user's language."""
    if event.reason == "loop":
        return tr(
            "The model is repeating itself, so its answer was stopped here. "
            "A larger model is likely to do better; or ask again in other words."
        )
    return tr(
        "The answer reached the length limit of {n} tokens and was cut off. "
        "Ask for a shorter answer, or raise the limit in the settings."
    ).format(n=event.limit)
