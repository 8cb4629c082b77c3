"""The list of stored conversations: resume, rename, delete, export, filter to this project.

The page shows what the store holds (``ConversationInfo`` rows, loaded on
the agent's thread by the panel) and asks the panel to act on a choice; it
keeps no state of its own beyond the list it was given.
"""

from __future__ import annotations

import time
from pathlib import Path

from qgis.PyQt.QtCore import Qt, pyqtSignal
from qgis.PyQt.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.gui.responsive import ResponsiveRow
from geogpt_qgis.toolbelt.i18n import tr

THREAD_ROLE = Qt.ItemDataRole.UserRole


class ConversationsPage(QWidget):
    """Conversations, newest first, with the actions on the selected one."""

    open_requested = pyqtSignal(str)
    rename_requested = pyqtSignal(str)
    delete_requested = pyqtSignal(str)
    export_requested = pyqtSignal(str)
    refresh_requested = pyqtSignal()
    closed = pyqtSignal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("geogptConversations")
        self.heading = QLabel(tr("<b>Conversations</b>"))
        self.heading.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.only_project = QCheckBox(tr("Only this project"))
        self.only_project.setToolTip(tr("Show only the conversations started in the project that is open now"))
        self.only_project.toggled.connect(self.refresh_requested)
        self.titles: dict[str, str] = {}
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setAlternatingRowColors(True)
        self.list.itemDoubleClicked.connect(lambda item: self.open_requested.emit(item.data(THREAD_ROLE)))
        self.list.currentItemChanged.connect(self._update_buttons)
        self.empty = QLabel(tr("No conversations yet."))
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.open_button = QPushButton(tr("Open"))
        self.rename_button = QPushButton(tr("Rename…"))
        self.export_button = QPushButton(tr("Export…"))
        self.delete_button = QPushButton(tr("Delete"))
        self.back_button = QPushButton(tr("Back to chat"))
        for button, signal in (
            (self.open_button, self.open_requested),
            (self.rename_button, self.rename_requested),
            (self.export_button, self.export_requested),
            (self.delete_button, self.delete_requested),
        ):
            button.clicked.connect(lambda _=False, s=signal: self._emit_for_selected(s))
        self.back_button.clicked.connect(self.closed)
        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.only_project)
        # A narrow dock shows short labels (the full ones in the tooltips).
        actions = ResponsiveRow()
        for button, short in (
            (self.open_button, None),
            (self.rename_button, "✎"),
            (self.export_button, "⇩"),
            (self.delete_button, "✕"),
        ):
            actions.add(button, short=short)
        actions.row.addStretch(1)
        actions.add(self.back_button, short="←")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty)
        layout.addWidget(actions)
        self._update_buttons()

    def show_conversations(self, conversations: list, current: str | None = None) -> None:
        """Fill the list with ``ConversationInfo`` rows; ``current`` is marked and selected."""
        self.list.clear()
        self.titles = {}  # the stored titles alone (the items add the date and project)
        for info in conversations:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
            project = Path(info.project).name if info.project else tr("no saved project")
            turns = tr("{n} turns").format(n=info.turns) if info.turns != 1 else tr("1 turn")
            marker = tr(" (current)") if info.thread_id == current else ""
            item = QListWidgetItem(f"{info.title}{marker}\n{when} · {project} · {turns}")
            item.setData(THREAD_ROLE, info.thread_id)
            self.titles[info.thread_id] = info.title
            item.setToolTip(info.project or tr("made before the project was saved"))
            self.list.addItem(item)
            if info.thread_id == current:
                self.list.setCurrentItem(item)
        self.empty.setVisible(not conversations)
        self.list.setVisible(bool(conversations))
        self._update_buttons()

    def thread_ids(self) -> list[str]:
        return [self.list.item(i).data(THREAD_ROLE) for i in range(self.list.count())]

    def select(self, thread_id: str) -> None:
        for i in range(self.list.count()):
            if self.list.item(i).data(THREAD_ROLE) == thread_id:
                self.list.setCurrentRow(i)

    def title_of(self, thread_id: str) -> str:
        """The stored title of a listed conversation ("" if it is not listed)."""
        return self.titles.get(thread_id, "")

    def selected(self) -> str | None:
        item = self.list.currentItem()
        return item.data(THREAD_ROLE) if item is not None else None

    def _emit_for_selected(self, signal: pyqtSignal) -> None:
        thread_id = self.selected()
        if thread_id:
            signal.emit(thread_id)

    def _update_buttons(self, *_args: object) -> None:
        chosen = self.selected() is not None
        for button in (self.open_button, self.rename_button, self.export_button, self.delete_button):
            button.setEnabled(chosen)
