"""A "Copy" link above each code block of an answer puts exactly that block's code on the clipboard.

Clicked with the mouse in the real dock, on an answer streamed from the
scripted model server and on the same answer reopened from the store (one
Markdown path: both carry the links).  The parsing of fences is checked on
its own too (Qt-free).
"""

from __future__ import annotations

import contextlib

from qgis.PyQt import sip
from qgis.PyQt.QtCore import QEvent, QPoint, Qt
from qgis.PyQt.QtGui import QTextCursor
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QApplication, QLabel

from geogpt_qgis.core.code_blocks import COPY_SCHEME, code_blocks, with_copy_links
from geogpt_qgis.gui.markdown_view import MarkdownView
from tests.support.dock import items_of, type_and_send
from tests.support.model_server import Turn
from tests.support.runs import wait_until

SQL = "SELECT type, count(*) AS n\nFROM schools\nWHERE pupils > 500 -- 100% sure\nGROUP BY type;"
PYTHON = 'layer = iface.activeLayer()\n\n    print(f"{layer.name()} & <{layer.featureCount()}>")'
ANSWER = f"Run this in the DB Manager:\n\n```sql\n{SQL}\n```\n\nOr in the console:\n\n~~~python\n{PYTHON}\n~~~\n\nDone."


def copy_points(view: MarkdownView) -> list[QPoint]:
    """Where each copy link sits in the view's viewport, in order."""
    points = []
    block = view.document().begin()
    while block.isValid():
        if not block.begin().atEnd() and block.begin().fragment().charFormat().anchorHref().startswith(COPY_SCHEME):
            cursor = QTextCursor(block)
            cursor.setPosition(block.position() + 1)
            points.append(view.cursorRect(cursor).center())
        block = block.next()
    return points


def settle(view: MarkdownView) -> None:
    """Wait until ``view`` is shown and holds still: a widget put into a shown layout is shown by a queued call,
    and a reopened transcript slips older items in above it by timers, so its place and width settle later."""
    last: list[object] = [None]

    def still() -> bool:
        now = (view.isVisible(), view.geometry(), view.viewport().width(), view.document().size())
        same, last[0] = now == last[0], now
        return view.isVisible() and same

    wait_until(still, 120)


def click_copies(view: MarkdownView) -> list[str]:
    """Click every copy link of ``view`` once it is settled; what the clipboard held after each click."""
    settle(view)
    copied = []
    for index in range(len(copy_points(view))):
        QApplication.clipboard().setText("before")
        point = copy_points(view)[index]  # where the link is now
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
        # The clipboard changes on the click (a platform may tell its owner later): wait for that, briefly; a click
        # that copied nothing leaves "before", which the caller's assertion shows.
        with contextlib.suppress(AssertionError):
            wait_until(lambda: QApplication.clipboard().text() != "before", 120)
        copied.append(QApplication.clipboard().text())
    return copied


def answer_views(panel) -> list[MarkdownView]:
    return [v for v in items_of(panel, MarkdownView) if not sip.isdeleted(v) and "DB Manager" in v.source_text]


def test_copy_puts_each_blocks_code_on_the_clipboard_streamed_and_reopened(panel, model_server):
    model_server.script([Turn(text=ANSWER, chunk_delay=0.002)])
    type_and_send(panel, "how do I count the big schools?")
    # A bound for failure, not a pace: the first run in a process loads LangChain, slow on a loaded machine.
    wait_until(lambda: panel.statuses, 120)
    assert panel.statuses == ["finished"], [w.text() for w in items_of(panel, QLabel)]
    [streamed] = answer_views(panel)
    html = streamed.toHtml()
    assert streamed.source_text == ANSWER  # the links are in the rendering only
    assert click_copies(streamed) == [SQL, PYTHON]
    assert streamed.source_text == ANSWER and "DB Manager" in streamed.toPlainText()  # the view was not navigated

    opened: list[str] = []
    panel.conversation_opened.connect(opened.append)
    panel.view.open_conversation(panel.runs.thread_id())

    def reopened_alone() -> bool:
        # The cleared items go by deleteLater: outside a running event loop only an explicit flush deletes them.
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        # The whole transcript is shown (conversation_opened), not only its newest items.
        return bool(opened) and sip.isdeleted(streamed) and len(answer_views(panel)) == 1

    wait_until(reopened_alone, 60)
    [reopened] = answer_views(panel)
    assert click_copies(reopened) == [SQL, PYTHON]
    assert reopened.toHtml() == html


def test_fences_are_read_as_commonmark_reads_them():
    indented = "1. step\n\n   ```\n   x = 1\n     y = 2\n   ```\n"
    assert [block.code for block in code_blocks(indented)] == ["x = 1\n  y = 2"]
    assert [block.code for block in code_blocks("````\n```\ninner\n```\n````")] == ["```\ninner\n```"]
    assert [block.code for block in code_blocks("```\nleft open\n")] == ["left open\n"]
    assert code_blocks("``` not `a fence`\ntext") == [] and code_blocks("    ```\nindented code") == []
    linked = with_copy_links("Text\n```\na\n```", "Copy")
    assert linked.split("\n")[:4] == ["Text", "", "[Copy](geogpt-copy:a)", ""]
