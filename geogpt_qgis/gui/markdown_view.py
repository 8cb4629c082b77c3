"""A text view that renders a streamed Markdown answer as it arrives, in linear time.

Finished blocks (paragraphs, lists, tables, code) are rendered once with Qt's
Markdown reader and appended; the unfinished tail is shown as plain text with
its marks taken out (never a raw ``**``) and replaced by its rendering when its
block completes.  A stored answer is shown through the same block path, so it
looks the same live and reopened.  Each fenced code block has a "Copy" link
above it that puts exactly its code on the clipboard (``core.code_blocks``).  So a 2,000-token answer
costs about four times a 500-token one, not sixteen.  The view grows to fit
its text (the chat's scroll area scrolls, not each message).
"""

from __future__ import annotations

import re

from qgis.PyQt.QtCore import Qt, QUrl
from qgis.PyQt.QtGui import (
    QColor,
    QDesktopServices,
    QGuiApplication,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
    QTextOption,
)
from qgis.PyQt.QtWidgets import QWidget

from geogpt_qgis.core.code_blocks import COPY_SCHEME, code_of, with_copy_links
from geogpt_qgis.core.markdown_stream import MarkdownBlockSplitter
from geogpt_qgis.gui.auto_height import AutoHeightTextBrowser
from geogpt_qgis.toolbelt.i18n import tr

CODE_BACKGROUND = QColor(0, 0, 0, 18)  # a tint that reads on light and dark themes
CODE_FENCE = QTextFormat.Property.BlockCodeFence
_MARKERS = re.compile(r"\*\*|__|`+|~~|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


def render_markdown_fragment(markdown: str) -> QTextDocumentFragment:
    """Markdown rendered by Qt (CommonMark + GitHub tables), as an insertable fragment; code on a tinted ground.

    Each fenced code block has a small "Copy" link at the right above it.
    """
    document = QTextDocument()
    document.setMarkdown(with_copy_links(markdown, tr("Copy")))
    block = document.begin()
    while block.isValid():
        # A fenced code block's lines; not the empty line Qt ends it with (a separator then takes its format).
        if block.blockFormat().hasProperty(CODE_FENCE) and (
            block.text() or block.next().blockFormat().hasProperty(CODE_FENCE)
        ):
            fmt = block.blockFormat()
            fmt.setBackground(CODE_BACKGROUND)
            QTextCursor(block).setBlockFormat(fmt)
        block = block.next()
    return QTextDocumentFragment(document)


def align_copy_links(block: QTextBlock) -> None:
    """Put the copy links from ``block`` on: small, at the right (after insertion: a fragment's first block
    takes the format of the block it is inserted into)."""
    while block.isValid():
        fragment = block.begin().fragment() if not block.begin().atEnd() else None
        if fragment is not None and fragment.charFormat().anchorHref().startswith(f"{COPY_SCHEME}:"):
            fmt = block.blockFormat()
            fmt.setAlignment(Qt.AlignmentFlag.AlignRight)
            fmt.setBottomMargin(0)
            QTextCursor(block).setBlockFormat(fmt)
        block = block.next()


def follow_link(url: QUrl) -> None:
    """A copy link puts its code block's code on the clipboard; any other link opens in the browser."""
    code = code_of(bytes(url.toEncoded()).decode("ascii"))
    if code is not None:
        QGuiApplication.clipboard().setText(code)
    elif url.scheme() in ("http", "https", "mailto"):  # the model wrote the link: nothing that runs or reads files
        QDesktopServices.openUrl(url)


def plain_preview(pending: str) -> str:
    """The unfinished block as it will read, without its Markdown marks (no raw ``**`` while streaming)."""
    lines = []
    for line in pending.split("\n"):
        if line.lstrip().startswith("```") or _TABLE_RULE.match(line):
            continue
        line = re.sub(r"^\s{0,3}(#{1,6}\s+|>\s?)", "", line)
        line = re.sub(r"^(\s*)[-*+]\s+", r"\1• ", line)
        if line.lstrip().startswith("|"):
            line = "   ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
        lines.append(_MARKERS.sub("", line))
    return "\n".join(lines)


class MarkdownView(AutoHeightTextBrowser):
    """A read-only, self-sizing Markdown view that accepts streamed text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.setObjectName("geogptMarkdown")  # styled by the chat column's one style sheet
        self.setOpenLinks(False)  # a link never replaces the answer: copy links copy, others open outside
        self.anchorClicked.connect(follow_link)
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
        self._show_tail()

    def finish_stream(self) -> None:
        """The stream ended: render the last block."""
        last = self._splitter.finish()
        self._render_blocks([last] if last.strip() else [])

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _show_tail(self) -> None:
        """Show the unfinished block, its marks taken out (it is rendered for real once complete)."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._tail_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        shown = plain_preview(self._splitter.pending)
        self._tail_open = bool(shown)
        if shown:
            if self._blocks_rendered:
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            cursor.insertText(shown)

    def _render_blocks(self, blocks: list[str]) -> None:
        """Replace the plain tail by the rendering of ``blocks``."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._tail_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        first = cursor.block().blockNumber()
        for block in blocks:
            if self._blocks_rendered:
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            cursor.insertFragment(render_markdown_fragment(block))
            self._blocks_rendered += 1
        if blocks:
            align_copy_links(self.document().findBlockByNumber(first))
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
        """Replace everything with ``text`` (history, notices), block by block as a stream is: one look for both."""
        self.clear()
        self._splitter = MarkdownBlockSplitter()
        self._source = text
        self._blocks_rendered = 0
        self._tail_start = 0
        self._tail_open = False
        blocks = self._splitter.feed(text)
        last = self._splitter.finish()
        self._render_blocks(blocks + ([last] if last.strip() else []))

    @property
    def source_text(self) -> str:
        """The Markdown received so far."""
        return self._source
