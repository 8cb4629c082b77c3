"""The conversation on screen and the stored ones: the conversation bar, the chat, the list of conversations.

It opens, renames, deletes and exports stored conversations, shows a
conversation's run log, and starts a new conversation; everything the store
answers comes back from the agent's thread through a ``FutureRelay``.  Runs
themselves are the run controller's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from qgis.PyQt.QtCore import pyqtSignal
from qgis.PyQt.QtWidgets import QDialog, QFileDialog, QMessageBox, QStackedWidget, QVBoxLayout, QWidget

from geogpt_qgis.agent.store import title_from
from geogpt_qgis.gui.background import FutureRelay
from geogpt_qgis.gui.conversation_bar import ConversationBar
from geogpt_qgis.gui.conversation_dialogs import RenameDialog, export_path
from geogpt_qgis.gui.conversations_page import ConversationsPage
from geogpt_qgis.gui.markdown_dialog import MarkdownDialog
from geogpt_qgis.toolbelt.dependencies import missing_packages
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

if TYPE_CHECKING:
    from qgis.core import QgsProject
    from qgis.gui import QgisInterface

    from geogpt_qgis.agent.conversation import OpenedConversation
    from geogpt_qgis.gui.chat_input import ChatInput
    from geogpt_qgis.gui.run_controller import RunController
    from geogpt_qgis.tools.project_watch import ProjectWatcher


class ConversationView(QWidget):
    """The conversation bar over two pages: the chat (the run controller's view) and the list of conversations."""

    conversation_opened = pyqtSignal(str)  # thread id, once its history is shown
    conversations_listed = pyqtSignal()  # the list page was (re)filled

    def __init__(
        self,
        project: QgsProject,
        iface: QgisInterface | None,
        runs: RunController,
        composer: ChatInput,
        watcher: ProjectWatcher,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.project = project
        self.iface = iface
        self.runs = runs
        self.composer = composer
        self.watcher = watcher
        self.relay = FutureRelay(self)
        self.dialogs: list[MarkdownDialog] = []
        self.conversation_bar = ConversationBar(self)
        self.chat = runs.chat
        self.conversations = ConversationsPage(self)
        self.pages = QStackedWidget(self)
        self.pages.addWidget(self.chat)
        self.pages.addWidget(self.conversations)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.conversation_bar)
        layout.addWidget(self.pages, 1)

        bar = self.conversation_bar
        bar.new_requested.connect(self.new_conversation)
        bar.list_toggled.connect(lambda shown: self.show_conversations() if shown else self.show_chat())
        bar.rename_requested.connect(lambda: self.ask_rename(self.runs.thread_id()))
        bar.export_requested.connect(lambda: self.ask_export(self.runs.thread_id()))
        bar.delete_requested.connect(lambda: self.ask_delete(self.runs.thread_id()))
        bar.run_log_requested.connect(self.show_run_log)
        bar.forget_always_requested.connect(self.forget_always)
        page = self.conversations
        page.open_requested.connect(self.open_conversation)
        page.rename_requested.connect(self.ask_rename)
        page.export_requested.connect(self.ask_export)
        page.delete_requested.connect(self.ask_delete)
        page.refresh_requested.connect(self.show_conversations)
        page.closed.connect(self.show_chat)
        self.chat.layer_clicked.connect(self.select_layer)
        runs.message_sent.connect(self.show_chat)
        runs.titled.connect(lambda text: bar.set_title(title_from(text)))

    def _say(self, text: str) -> None:
        self.composer.status.setText(text)

    def show_chat(self) -> None:
        self.pages.setCurrentWidget(self.chat)
        self.conversation_bar.list_button.setChecked(False)

    def show_conversations(self) -> None:
        """Switch to the conversation list and fill it from the store."""
        self.pages.setCurrentWidget(self.conversations)
        self.conversation_bar.list_button.setChecked(True)
        if missing_packages():
            return
        project = self.project.fileName() if self.conversations.only_project.isChecked() else None
        self.relay.when_done(self.runs.conversation.conversations(project), self._listed, self._store_failed)

    def _listed(self, conversations: list) -> None:
        self.conversations.show_conversations(conversations, self.runs.thread_id())
        self.conversations_listed.emit()

    def new_conversation(self) -> None:
        """A clean slate: the run stops, a waiting step is given up, trust ends, the next message starts afresh."""
        self.runs.new_conversation()
        self.composer.forget_trust()
        self.chat.clear()
        self.show_chat()
        self.conversation_bar.set_title("")
        self.composer.meter.reset_usage()
        self.watcher.drain()
        self._say(tr("Started a new conversation."))

    def open_conversation(self, thread_id: str, restoring: bool = False) -> None:
        """Continue a stored conversation: its whole history in the chat, any waiting approval on top.

        ``restoring``: QGIS just started; reopen the last conversation unless the user already typed.
        """
        if self.runs.busy or (restoring and self.chat.items()):
            return
        self.runs.leave_pending()
        self.relay.when_done(
            self.runs.conversation.open_conversation(thread_id),
            lambda opened: self._opened(opened, restoring),
            self._store_failed,
        )

    def _opened(self, opened: OpenedConversation, restoring: bool) -> None:
        if self.runs.busy or (restoring and self.chat.items()):
            return
        self.chat.clear()
        self.runs.discard_pending_text()
        self.chat.show_transcript(opened.entries, lambda: self.conversation_opened.emit(opened.thread_id))
        self.composer.meter.reset_usage()
        self.watcher.drain()  # changes made before the conversation was opened are not news to it
        PlgOptionsManager.set_value("last_thread_id", opened.thread_id)
        first = next((e.text for e in opened.entries if e.kind == "user"), "")
        self.conversation_bar.set_title(title_from(first))  # at once; a renamed title follows from the store
        self.relay.when_done(
            self.runs.conversation.conversations(), lambda found: self._set_title_from(found, opened.thread_id)
        )
        self.show_chat()
        self._say(tr("Conversation restored.") if opened.entries else "")
        if opened.pending is not None:
            self.chat.add_notice(tr("This step is waiting for your approval."), "warning")
            # The card warns if a layer of the step is gone: a temporary layer does not outlive QGIS, say.
            self.runs.show_approval(opened.pending.to_dict())
            self._say(tr("Waiting for your approval."))

    def _set_title_from(self, conversations: list, thread_id: str) -> None:
        """The stored title (it may have been renamed); without one, the title from the first message stays."""
        info = next((c for c in conversations if c.thread_id == thread_id), None)
        if info is not None:
            self.conversation_bar.set_title(info.title)

    def rename_conversation(self, thread_id: str, title: str) -> None:
        def renamed(_result: object) -> None:
            if thread_id == self.runs.thread_id():
                self.conversation_bar.set_title(" ".join(title.split()))
            if self.pages.currentWidget() is self.conversations:
                self.show_conversations()

        future = self.runs.conversation.rename_conversation(thread_id, title)
        self.relay.when_done(future, renamed, self._store_failed)

    def delete_conversation(self, thread_id: str) -> None:
        conversation = self.runs.conversation
        current = thread_id == conversation.thread_id
        if current:
            self.runs.stop()
            self.runs.awaiting = None

        def deleted(_result: object) -> None:
            if current:
                self.chat.clear()
                self.conversation_bar.set_title("")
                self.composer.meter.reset_usage()
            self._say(tr("Conversation deleted."))
            if self.pages.currentWidget() is self.conversations:
                self.show_conversations()

        self.relay.when_done(conversation.delete_conversation(thread_id), deleted, self._store_failed)

    def export_conversation(self, thread_id: str, path: str) -> None:
        """Write the conversation, tool steps and results included, to ``path`` as Markdown."""

        def write(markdown: str) -> None:
            try:
                Path(path).write_text(markdown, encoding="utf-8")
            except OSError as exc:
                self._say(tr("Could not export: {e}").format(e=exc))
                return
            self._say(tr("Exported to {p}").format(p=path))

        self.relay.when_done(self.runs.conversation.export_conversation(thread_id), write, self._store_failed)

    def show_run_log(self) -> None:
        """Open the run log of the conversation on screen in a window."""
        if missing_packages():
            return

        def show(markdown: str) -> None:
            dialog = MarkdownDialog(tr("GeoGPT run log"), markdown, self)
            self.dialogs = [d for d in self.dialogs if d.isVisible()] + [dialog]
            dialog.show()

        self.relay.when_done(self.runs.conversation.run_log(), show, self._store_failed)

    def forget_always(self) -> None:
        """Revoke the "always for this tool" answers of the conversation on screen: its steps ask again."""
        if missing_packages():
            return

        def forgotten(tools: list[str]) -> None:
            if tools:
                self._say(tr("Steps of {tools} will ask for approval again.").format(tools=", ".join(tools)))
            else:
                self._say(tr("No step of this conversation was approved 'always'."))

        self.relay.when_done(self.runs.conversation.forget_always(), forgotten, self._store_failed)

    # Dialog front-ends of the actions above (tests call the actions directly).
    def ask_rename(self, thread_id: str | None) -> None:
        if not thread_id:
            return
        dialog = RenameDialog(self._title_of(thread_id), self)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.title():
            self.rename_conversation(thread_id, dialog.title())

    def ask_export(self, thread_id: str | None) -> None:
        if not thread_id:
            return
        proposed = export_path(self._title_of(thread_id), PlgOptionsManager.get_plg_settings().last_export_folder)
        path, _ = QFileDialog.getSaveFileName(self, tr("Export conversation"), proposed, tr("Markdown (*.md)"))
        if path:
            PlgOptionsManager.set_value("last_export_folder", str(Path(path).parent))
            self.export_conversation(thread_id, path)

    def _title_of(self, thread_id: str) -> str:
        """The title shown for a conversation: the bar's for the one on screen, else the list's."""
        if thread_id == self.runs.thread_id():
            return self.conversation_bar.current_title
        return self.conversations.title_of(thread_id)

    def ask_delete(self, thread_id: str | None) -> None:
        if not thread_id:
            return
        answer = QMessageBox.question(
            self, tr("Delete conversation"), tr("Delete this conversation and its run log? This cannot be undone.")
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_conversation(thread_id)

    def _store_failed(self, error: BaseException) -> None:
        self._say(tr("The conversation store failed: {e}").format(e=error))

    def select_layer(self, layer_id: str, name: str = "") -> None:
        """A layer was clicked in Sources: make it the current layer of the layer tree.

        By its id; by its name only for a layer stored before ids were kept (the first of that name).
        """
        by_name = next(iter(self.project.mapLayersByName(name)), None) if not layer_id else None
        layer = self.project.mapLayer(layer_id) if layer_id else by_name
        name = name or layer_id
        if layer is None:
            self._say(tr("The layer {name} is no longer in the project.").format(name=name))
            return
        if self.iface is not None:
            self.iface.setActiveLayer(layer)
        self._say(tr("Selected layer {name}.").format(name=layer.name()))
