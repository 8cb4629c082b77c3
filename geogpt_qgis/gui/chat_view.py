"""The transcript: user messages, streamed answers, reasoning, tool steps and notices.

Each item is its own widget in a scrolling column, so a new token only
touches the last answer view and the column never re-renders what came
before.  The view follows the stream while the user is at the bottom and
stays put when they scroll up to read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from qgis.PyQt.QtCore import Qt, QTimer, pyqtSignal
from qgis.PyQt.QtGui import QTextCursor
from qgis.PyQt.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from geogpt_qgis.core.artifacts import EMPTY, ToolArtifact
from geogpt_qgis.core.events import RunStatus
from geogpt_qgis.core.sources import Sources
from geogpt_qgis.gui.approval_card import ApprovalCard
from geogpt_qgis.gui.auto_height import AutoHeightTextBrowser
from geogpt_qgis.gui.chart_view import ChartView
from geogpt_qgis.gui.collapsible import CollapsibleSection
from geogpt_qgis.gui.markdown_view import MarkdownView
from geogpt_qgis.gui.sources_view import SourcesView
from geogpt_qgis.gui.tool_step import ToolStepWidget
from geogpt_qgis.toolbelt.i18n import tr

if TYPE_CHECKING:
    from geogpt_qgis.agent.transcript import Entry

W = TypeVar("W", bound=QWidget)

# One style sheet for the whole column: a sheet per item would be parsed and applied item by item,
# which makes showing a long conversation slow.
COLUMN_STYLE = """
QLabel#geogptUserMessage { background: palette(alternate-base); border-radius: 6px; padding: 6px; }
QLabel#geogptNotice { font-style: italic; color: #333333; }
QLabel#geogptNotice[level="info"] { color: #31708f; }
QLabel#geogptNotice[level="warning"] { color: #8a6d3b; }
QLabel#geogptNotice[level="error"] { color: #a94442; }
QToolButton#geogptSectionHeader { text-align: left; border: none; padding: 2px; }
QTextBrowser#geogptMarkdown { background: transparent; }
"""
VIEW_CHARS = 2500
# Showing a stored conversation: items made per turn of the event loop.  Laying out and polishing an item
# after it is made costs about as much again (word-wrapped labels more), hence a count as well as a time.
SLICE_ITEMS = 8
SLICE_SECONDS = 0.010


class ChatView(QScrollArea):
    """A scrolling column of chat items."""

    layer_clicked = pyqtSignal(str, str)  # a layer clicked in a Sources section: its id ("": stored without), name
    placeholder_shown = pyqtSignal(bool)  # the first-run card came or went (the panel de-duplicates its status)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        container = QWidget()
        container.setObjectName("geogptChatColumn")
        container.setStyleSheet(COLUMN_STYLE)
        self._layout = QVBoxLayout(container)
        self._layout.setContentsMargins(6, 6, 6, 6)
        self._layout.setSpacing(6)
        self._layout.addStretch(1)
        self.setWidget(container)
        self._current: QWidget | None = None
        self._placeholder: QWidget | None = None  # shown above the items while there are none
        self._steps: dict[str, ToolStepWidget] = {}
        self._restoring = 0  # generation of the history being shown (see show_transcript)
        self._follow = True
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._remember_follow)
        bar.rangeChanged.connect(self._keep_following)

    # -- items -------------------------------------------------------------
    def _add(self, widget: W) -> W:
        self._layout.insertWidget(self._layout.count() - 1, widget)
        self._current = widget
        self._show_placeholder(False)
        return widget

    def items(self) -> list[QWidget]:
        """The item widgets, oldest first (for tests and export)."""
        first = 0 if self._placeholder is None else 1
        return [self._layout.itemAt(i).widget() for i in range(first, self._layout.count() - 1)]

    def set_placeholder(self, widget: QWidget) -> None:
        """Show ``widget`` (the first-run card) at the top of the column while the conversation is empty."""
        self._placeholder = widget
        self._layout.insertWidget(0, widget)
        self._show_placeholder(not self.items())

    def _show_placeholder(self, shown: bool) -> None:
        if self._placeholder is not None:
            changed = self._placeholder.isVisibleTo(self) != shown
            self._placeholder.setVisible(shown)  # a no-op when it already is
            if changed:
                self.placeholder_shown.emit(shown)
            if shown:  # read from its top, not followed to its bottom like a stream
                self._follow = False
                self.verticalScrollBar().setValue(0)

    def add_user_message(self, text: str) -> QLabel:
        self._follow = True
        return self._add(_user_label(text))

    def append_text(self, text: str) -> None:
        """Stream answer text into the current answer view (created after a tool step).

        A long answer continues in a new view once the current one holds
        ``VIEW_CHARS`` rendered characters: relaying out a text view costs time
        in proportion to its length, so bounded views keep streaming linear.
        """
        current = self._current
        if isinstance(current, MarkdownView) and current.rendered_chars < VIEW_CHARS:
            current.append_stream(text)
            return
        view = MarkdownView()
        if isinstance(current, MarkdownView):
            text = current.detach_tail() + text
            view.continues_previous = True
        else:
            self._end_stream()
        self._add(view)
        view.append_stream(text)

    def append_reasoning(self, text: str) -> None:
        """Stream reasoning into a collapsed "Thinking" section."""
        if not isinstance(self._current, CollapsibleSection) or isinstance(self._current, ToolStepWidget):
            self._end_stream()
            self._add(CollapsibleSection(tr("Thinking"), AutoHeightTextBrowser(max_height=160)))
        body = self._current.body  # type: ignore[union-attr]
        cursor = QTextCursor(body.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)

    def tool_started(self, call_id: str, name: str, args: dict[str, Any]) -> ToolStepWidget:
        self._end_stream()
        step = ToolStepWidget(call_id, name, args)
        self._steps[call_id] = step
        self._add(step)
        return step

    def tool_progress(self, call_id: str, percent: float) -> None:
        step = self._steps.get(call_id)
        if step is not None:
            step.show_progress(percent)

    def tool_finished(
        self, call_id: str, ok: bool, result: str, seconds: float, artifact: ToolArtifact = EMPTY
    ) -> None:
        """Close a tool step; a chart the call drew (its artifact says) is shown below it."""
        step = self._steps.get(call_id)
        if step is not None:
            step.finish(ok, result, seconds)
            if ok and artifact.chart:
                self.add_chart(artifact.chart)

    def add_chart(self, path: str) -> ChartView:
        """Show a chart the agent drew (the PNG it saved)."""
        self._end_stream()
        return self._add(ChartView(path))

    def add_sources(self, sources: Sources) -> SourcesView:
        """The collapsible list of what the answer above rests on."""
        self._end_stream()
        view = SourcesView(sources)
        view.layer_clicked.connect(self.layer_clicked)
        return self._add(view)

    def add_item(self, widget: QWidget) -> QWidget:
        """Any other widget under the last item (a thumbs-up under an answer, say)."""
        self._end_stream()
        return self._add(widget)

    def add_approval_card(self, request: dict[str, Any]) -> ApprovalCard:
        self._end_stream()
        card = ApprovalCard(request)
        self._add(card)
        return card

    def add_notice(self, text: str, level: str = "info") -> QLabel:
        self._end_stream()
        return self._add(_notice_label(text, level))

    def show_transcript(self, entries: Sequence[Entry], done: Callable[[], None] | None = None) -> None:
        """Rebuild a stored conversation, newest first, a slice per turn of the event loop.

        A long history would otherwise freeze QGIS while hundreds of widgets
        are made: the newest items appear at once (the view sits at the
        bottom), older ones are slipped in above a few at a time
        (``SLICE_ITEMS``, ``SLICE_SECONDS``).  ``done`` is called once everything is shown.
        """
        self._restoring += 1
        generation = self._restoring
        remaining = list(entries)
        self._follow = True
        anchor = self._layout.count() - 1  # older items go in above whatever is already shown

        def slice_() -> None:
            if generation != self._restoring:
                return  # cleared, or another conversation is being shown
            started = time.perf_counter()
            made = 0
            while remaining and made < SLICE_ITEMS and time.perf_counter() - started < SLICE_SECONDS:
                widget = _entry_widget(remaining.pop())
                if isinstance(widget, SourcesView):
                    widget.layer_clicked.connect(self.layer_clicked)
                self._layout.insertWidget(min(anchor, self._layout.count() - 1), widget)
                made += 1
            self._show_placeholder(not self.items())
            if remaining:
                QTimer.singleShot(0, slice_)
            elif done is not None:
                done()

        self._current = None
        slice_()

    def end_turn(self, status: RunStatus, error: str | None = None) -> None:
        """Close the turn: render the last block, mark unfinished steps, say why it ended."""
        self._end_stream()
        for step in self._steps.values():
            step.mark_stopped()
        self._steps.clear()
        if status == "paused":
            self._current = None
            return
        if status == "cancelled":
            self.add_notice(tr("Stopped."), "warning")
        elif status == "failed":
            self.add_notice(error or tr("The run failed."), "error")
        self._current = None

    def clear(self) -> None:
        """Remove every item (new conversation)."""
        self._restoring += 1  # any history still being shown stops
        for widget in self.items():
            self._layout.removeWidget(widget)
            widget.deleteLater()
        self._steps.clear()
        self._current = None
        self._show_placeholder(True)

    def _end_stream(self) -> None:
        if isinstance(self._current, MarkdownView):
            self._current.finish_stream()

    # -- follow the stream -------------------------------------------------
    def _remember_follow(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._follow = value >= bar.maximum() - 4

    def _keep_following(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(maximum)

    def last_turn(self) -> tuple[str, str]:
        """The newest user message and the answer written after it (Markdown), for Copy and Retry."""
        question, views = "", list[MarkdownView]()
        for widget in self.items():
            if widget.objectName() == "geogptUserMessage":
                question, views = widget.text(), []
            elif isinstance(widget, MarkdownView):
                views.append(widget)
        answer = ""
        for view in views:
            answer += ("" if view.continues_previous or not answer else "\n\n") + view.source_text
        return question, answer

    def answer_text(self) -> str:
        """All answer Markdown of the transcript; continuation views join seamlessly."""
        text = ""
        for widget in self.items():
            if isinstance(widget, MarkdownView):
                separator = "" if widget.continues_previous or not text else "\n\n"
                text += separator + widget.source_text
        return text


def _user_label(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setObjectName("geogptUserMessage")
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


def _notice_label(text: str, level: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setObjectName("geogptNotice")
    label.setProperty("level", level)
    return label


def _entry_widget(entry: Entry) -> QWidget:
    """The finished widget for one item of a stored conversation."""
    if entry.kind == "user":
        return _user_label(entry.text)
    if entry.kind == "note":
        return _notice_label(entry.text, "info")
    if entry.kind == "reasoning":
        body = AutoHeightTextBrowser(max_height=160)
        body.setPlainText(entry.text)
        return CollapsibleSection(tr("Thinking"), body)
    if entry.kind == "answer":
        view = MarkdownView()
        view.set_markdown(entry.text)
        return view
    if entry.kind == "chart":
        return ChartView(entry.text)
    if entry.kind == "sources":
        return SourcesView(Sources.from_dict(entry.args))
    if entry.kind == "stopped":  # as when the answer was stopped live
        return _notice_label(tr("Stopped."), "warning")
    step = ToolStepWidget(entry.call_id, entry.name, entry.args)
    step.finish(entry.ok, entry.text, None)
    return step
