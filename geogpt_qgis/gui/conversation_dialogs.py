"""The small questions about a conversation: its new title, and where its export goes (under what name).

``RenameDialog`` shows the current title selected (typing replaces it), trims
what is typed and allows OK only for a title that is not empty.
``export_file_name`` makes a file name from the date and the title with
characters every file system takes; the folder is the one the user last
exported to.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from pathlib import Path

from qgis.PyQt.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLineEdit, QVBoxLayout, QWidget

from geogpt_qgis.toolbelt.i18n import tr

MAX_TITLE_CHARS = 120  # longer titles are elided in the bar and the list anyway
MAX_FILE_STEM_CHARS = 80
# Characters Windows, macOS or Linux refuse in a file name, and control characters.
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]+')


def clean_title(text: str) -> str:
    """``text`` on one line, spaces collapsed, cut to ``MAX_TITLE_CHARS``: what is stored as the title."""
    return " ".join(text.split())[:MAX_TITLE_CHARS].strip()


class RenameDialog(QDialog):
    """The "Rename conversation" dialog: the current title selected, OK only for a title that is not empty."""

    def __init__(self, current: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Rename conversation"))
        self.setObjectName("geogptRenameDialog")
        self.label = QLabel(tr("New title for this conversation:"))
        self.edit = QLineEdit(clean_title(current))
        self.edit.setMaxLength(MAX_TITLE_CHARS)
        self.edit.setPlaceholderText(tr("e.g. Schools near rivers"))
        self.edit.selectAll()  # typing replaces the old title; an arrow key keeps it for editing
        self.label.setBuddy(self.edit)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (self.label, self.edit, self.hint, self.buttons):
            layout.addWidget(widget)
        self.edit.textChanged.connect(self._check)
        self._check()
        self.setMinimumWidth(360)

    def title(self) -> str:
        return clean_title(self.edit.text())

    def _check(self, *_args: object) -> None:
        empty = not self.title()
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not empty)
        self.hint.setText(tr("A title cannot be empty.") if empty else "")
        self.hint.setVisible(empty)


def export_file_name(title: str, when: dt.date | None = None) -> str:
    """``2026-11-25 schools near rivers.md``: the date and the title in characters any file system takes."""
    day = (when or dt.date.today()).isoformat()
    text = unicodedata.normalize("NFC", clean_title(title))
    stem = " ".join(_UNSAFE.sub(" ", text).split()).strip(" .")[:MAX_FILE_STEM_CHARS].rstrip(" .")
    return f"{day} {stem or tr('conversation')}.md"


def export_path(title: str, folder: str, when: dt.date | None = None) -> str:
    """The proposed export file: in ``folder`` (the last one exported to) if it still exists, else the home folder."""
    place = Path(folder) if folder and Path(folder).is_dir() else Path.home()
    return str(place / export_file_name(title, when))
