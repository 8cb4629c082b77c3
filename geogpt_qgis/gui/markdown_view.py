"""A text view that renders a streamed Markdown answer as it arrives, in linear time.

Finished blocks (paragraphs, lists, tables, code) are rendered once with Qt's
Markdown reader and appended; the unfinished tail is shown as plain text and
replaced by its rendering when its block completes.  So a 2,000-token answer
costs about four times a 500-token one, not sixteen.  The view grows to fit
its text (the chat's scroll area scrolls, not each message).
"""

from __future__ import annotations

from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtGui import (
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextOption,
)
from qgis.PyQt.QtWidgets import QWidget

from geogpt_qgis.core.markdown_stream import MarkdownBlockSplitter
from geogpt_qgis.gui.auto_height import AutoHeightTextBrowser


def render_markdown_fragment(markdown: str) -> QTextDocumentFragment:
    """Markdown rendered by Qt (CommonMark + GitHub tables), as an insertable fragment."""
    document = QTextDocument()
    document.setMarkdown(markdown)
    return QTextDocumentFragment(document)


class MarkdownView(AutoHeightTextBrowser):
    """A read-only, self-sizing Markdown view that accepts streamed text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.setObjectName("geogptMarkdown")  # styled by the chat column's one style sheet
        self.viewport().setAutoFillBackground(False)
        # Words are never cut: a table whose words do not fit the width scrolls sideways in this box instead.
        self.setWordWrapMode(QTextOption.WrapMode.WordWrap)
        self._splitter = MarkdownBlockSplitter()
        self._tail_start = 0  # document position where the plain-text tail begins
        self._tail_open = False
        self._blocks_rendered = 0
        self._source = ""
        self.continues_previous = False  # this view continues the answer of the view above

    # -- streaming ---------------------------------------------------------
    def append_stream(self, text: str) -> None:
        """Add streamed text: completed blocks are rendered, the tail is shown plain."""
        if not text:
            return
        self._source += text
        blocks = self._splitter.feed(text)
        if blocks:
            self._render_blocks(blocks)
            self._append_tail(self._splitter.pending)
        else:
            self._append_tail(text)

    def finish_stream(self) -> None:
        """The stream ended: render the last block."""
        last = self._splitter.finish()
        self._render_blocks([last] if last.strip() else [])

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _append_tail(self, text: str) -> None:
        if not text:
            return
        cursor = self._end_cursor()
        if not self._tail_open:
            if self._blocks_rendered:
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            self._tail_open = True
        cursor.insertText(text)

    def _render_blocks(self, blocks: list[str]) -> None:
        """Replace the plain tail by the rendering of ``blocks``."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._tail_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        for block in blocks:
            if self._blocks_rendered:
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            cursor.insertFragment(render_markdown_fragment(block))
            self._blocks_rendered += 1
        self._tail_start = self._end_cursor().position()
        self._tail_open = False

    @property
    def rendered_chars(self) -> int:
        """How much of the stream is already rendered (not in the plain tail)."""
        return len(self._source) - len(self._splitter.pending)

    def detach_tail(self) -> str:
        """Remove the unrendered tail and return it, closing this view at a block boundary.

        Long answers continue in a fresh view, so no single view (whose relayout
        cost grows with its length) becomes large.
        """
        tail = self._splitter.pending
        self._render_blocks([])  # removes the plain tail from the document
        self._splitter = MarkdownBlockSplitter()
        if tail:
            self._source = self._source[: len(self._source) - len(tail)]
        return tail

    def set_markdown(self, text: str) -> None:
        """Replace everything with ``text`` rendered at once (history, notices)."""
        self._splitter = MarkdownBlockSplitter()
        self._source = text
        self.setMarkdown(text)
        self._blocks_rendered = 1 if text else 0
        self._tail_start = self._end_cursor().position()
        self._tail_open = False

    @property
    def source_text(self) -> str:
        """The Markdown received so far."""
        return self._source
