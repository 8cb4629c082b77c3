"""The runs of the conversation on screen: send a message, answer an approval, drop a step, stop; paint the events.

The controller drives the agent's conversation service (whose agent stack
loads on the first message, on the agent's thread) and renders the events of
its runs into the chat view and the input row.  Streamed tokens are buffered and
painted on a short timer, so a fast model cannot flood the main thread.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from qgis.PyQt.QtCore import QObject, QTimer, pyqtSignal

from geogpt_qgis.core.approval import APPROVE, POLICY_TRUST
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
from geogpt_qgis.gui.answer_actions import AnswerActions
from geogpt_qgis.gui.recipe_feedback import LikeButton, TurnCalls
from geogpt_qgis.gui.sources_view import TurnSources
from geogpt_qgis.gui.undo_run_action import UndoRunAction
from geogpt_qgis.toolbelt.dependencies import missing_packages
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.log import logger
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

if TYPE_CHECKING:
    from geogpt_qgis.agent.conversation import Conversation
    from geogpt_qgis.gui.approval_card import ApprovalCard
    from geogpt_qgis.gui.chat_input import ChatInput
    from geogpt_qgis.gui.chat_view import ChatView
    from geogpt_qgis.gui.server_picker import ServerPicker
    from geogpt_qgis.tools.project.run_undo import RunUndo
    from geogpt_qgis.tools.project_watch import ProjectWatcher

FLUSH_INTERVAL_MS = 40


class RunController(QObject):
    """One run at a time: from the input row to the agent, and the agent's events back into the chat view."""

    run_finished = pyqtSignal(str)  # status
    approval_shown = pyqtSignal(object)  # the ApprovalCard
    message_sent = pyqtSignal(str)  # a message went to the agent (the chat should be on screen)
    titled = pyqtSignal(str)  # the first message of a conversation names it

    def __init__(
        self,
        conversation: Conversation,
        watcher: ProjectWatcher,
        chat: ChatView,
        composer: ChatInput,
        picker: ServerPicker,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.conversation = conversation
        self.watcher = watcher
        self.chat = chat
        self.composer = composer
        self.picker = picker
        self.run_id: int | None = None
        self.awaiting: ApprovalCard | None = None  # the approval the conversation waits for
        self.render_seconds = 0.0  # main-thread time spent on run events (benchmarked)
        self.turn_sources = TurnSources()  # the tool calls behind the answer being written
        self.turn_calls = TurnCalls()  # the question and its successful calls, for a thumbs-up
        self.run_undo: RunUndo | None = None  # the project before the question under way (Undo run)
        self._pending_text: list[str] = []
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(FLUSH_INTERVAL_MS)
        self._flush_timer.timeout.connect(self._flush_text)
        composer.send_requested.connect(self.send_typed)
        composer.stop_requested.connect(self.stop)
        conversation.event.connect(self._on_event)

    @property
    def busy(self) -> bool:
        return self.run_id is not None

    def thread_id(self) -> str:
        """The conversation on screen."""
        return self.conversation.thread_id

    # -- sending -----------------------------------------------------------------
    def send_typed(self, text: str) -> None:
        """The input row asked to send: take the text out of the box, unless a run or an approval is under way."""
        if not self.busy and self.awaiting is None:
            self.composer.edit.clear()
            self.send(text)

    def send(self, text: str) -> int | None:
        """Send ``text`` to the agent; returns the run id (``None`` if it could not start)."""
        if self.busy or self.awaiting is not None:
            return None
        self.message_sent.emit(text)
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
            self.titled.emit(text)
        config = self.picker.current_config()
        self.turn_sources.reset()
        self.turn_calls.start(text)
        self._take_state_before()
        self.run_id = self.conversation.submit(text, config, self.composer.approval_policy(), note)
        PlgOptionsManager.set_value("last_thread_id", self.conversation.thread_id)
        self.composer.set_busy(True, tr("Thinking… ({m})").format(m=config.model or tr("no model")))
        return self.run_id

    def _has_turns(self, before_last: bool = False) -> bool:
        """Whether the conversation on screen has user messages (``before_last``: besides the newest)."""
        users = [w for w in self.chat.items() if w.objectName() == "geogptUserMessage"]
        return len(users) > (1 if before_last else 0)

    def stop(self) -> None:
        """Stop the current run now."""
        if self.run_id is not None:
            self.conversation.cancel(self.run_id)

    def new_conversation(self) -> None:
        """Stop, give up a waiting step, and let the next message start a new conversation."""
        self.stop()
        if self.awaiting is not None:
            self.drop_pending()
        self.conversation.new_conversation()
        self._pending_text.clear()

    # -- approvals -----------------------------------------------------------
    def show_approval(self, request: dict) -> ApprovalCard:
        """The card for a step waiting on the user; it warns if a layer of the step leaves the project meanwhile."""
        card = self.chat.add_approval_card(request)
        card.watch_project(self.conversation.ctx.project)
        card.decided.connect(self._decide)
        card.dropped.connect(self.drop_pending)
        self.awaiting = card
        self.approval_shown.emit(card)
        return card

    def _decide(self, decision: dict) -> None:
        """The user answered the card: the paused run goes on with the decision."""
        if self.busy:
            return
        self.awaiting = None
        if decision.get("trust"):
            self.composer.choose_policy(POLICY_TRUST)
        config = self.picker.current_config()
        self.run_id = self.conversation.resume(decision, config)
        approved = decision.get("action") == APPROVE
        self.composer.set_busy(
            True, tr("Approved; continuing…") if approved else tr("Rejected; telling the assistant…")
        )

    def drop_pending(self) -> None:
        """Give up the step waiting for approval; the conversation can go on with a new message."""
        self.conversation.drop_pending()
        if self.awaiting is not None and self.awaiting.pending:
            self.awaiting.close_with(tr("Dropped"))
        self.awaiting = None
        self._offer_undo()  # the question ends here: what it changed before the step can be undone
        self.composer.set_busy(False, tr("Dropped the step."))

    def leave_pending(self) -> None:
        """Another conversation goes on screen: a waiting step stays waiting, in the store."""
        if self.awaiting is not None and self.awaiting.pending:
            self.awaiting.close_with(tr("Left for later"))
        self.awaiting = None
        if self.run_undo is not None:  # a question resumed later has no state of before: no Undo run for it
            self.run_undo.finish()
            self.run_undo = None

    # -- events from the agent -------------------------------------------------------
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
        self.turn_calls.record(event)
        status = self.composer.status
        if isinstance(event, ReasoningDelta):
            self.chat.append_reasoning(event.text)
        elif isinstance(event, ToolStarted):
            self.chat.tool_started(event.call_id, event.name, event.args)
            status.setText(tr("Running {tool}…").format(tool=event.name))
        elif isinstance(event, ToolProgress):
            self.chat.tool_progress(event.call_id, event.percent)
            status.setText(tr("Running {tool}… {percent:.0f}%").format(tool=event.name, percent=event.percent))
        elif isinstance(event, ToolFinished):
            self.chat.tool_finished(event.call_id, event.ok, event.result, event.seconds, event.artifact)
            status.setText(tr("Thinking…"))
        elif isinstance(event, AnswerCut):
            self.chat.add_notice(answer_cut_text(event), event.level)
        elif isinstance(event, Notice):
            self.chat.add_notice(event.text, event.level)
        elif isinstance(event, ContextUsage):
            self.composer.meter.show_usage(event.used, event.limit, event.reserved, event.omitted)
        elif isinstance(event, ModelCallFinished):
            pass
        elif isinstance(event, ApprovalRequested):
            self.show_approval(event.request)
        elif isinstance(event, RunFinished):
            self._finished(event)

    def _finished(self, event: RunFinished) -> None:
        self.chat.end_turn(event.status, event.error)
        if event.status == "finished":
            self._show_sources()
            self._offer_copy_and_retry()
            if self.turn_calls.calls:
                project = self.conversation.ctx.project
                calls = self.turn_calls
                self.chat.add_item(LikeButton(calls.question, calls.calls, project, calls.added))
        if event.status != "paused":  # a paused run goes on after the approval: the question is not over
            self._offer_undo()
        self.run_id = None
        labels = {
            "finished": tr("Done."),
            "cancelled": tr("Stopped."),
            "failed": tr("Failed."),
            "paused": tr("Waiting for your approval."),
        }
        self.composer.set_busy(False, labels[event.status])
        self.run_finished.emit(event.status)

    def _offer_copy_and_retry(self) -> None:
        question, answer = self.chat.last_turn()
        if answer:
            actions = AnswerActions(answer, question)
            actions.retry_requested.connect(self.send)
            self.chat.add_item(actions)

    def _take_state_before(self) -> None:
        """The project as the question finds it, for Undo run (main thread, a few ms per layer)."""
        from geogpt_qgis.tools.project.run_undo import RunUndo

        if self.run_undo is not None:
            self.run_undo.finish()  # a question left waiting for approval: its listening ends here
        iface = self.conversation.ctx.iface
        try:
            self.run_undo = RunUndo.start(
                self.conversation.ctx.project, iface.mapCanvas() if iface is not None else None
            )
        except Exception:  # noqa: BLE001 - the question goes ahead; only its Undo run is not offered
            logger.exception("could not take the project's state before the run (Undo run)")
            self.run_undo = None

    def _offer_undo(self) -> None:
        """Under a question that changed the project (finished, stopped or failed): Undo run."""
        undo, self.run_undo = self.run_undo, None
        if undo is None:
            return
        changes = undo.finish()
        if changes:
            self.chat.add_item(UndoRunAction(undo, changes))

    def _show_sources(self) -> None:
        """Under the final answer: what it rests on, from the artifacts of the calls that ran."""
        sources = self.turn_sources.sources()
        self.turn_sources.reset()
        if not sources.empty:
            self.chat.add_sources(sources)

    def _flush_text(self) -> None:
        started = time.perf_counter()
        self._paint_pending()
        self.render_seconds += time.perf_counter() - started

    def _paint_pending(self) -> None:
        if self._pending_text:
            text = "".join(self._pending_text)
            self._pending_text.clear()
            self.chat.append_text(text)

    def discard_pending_text(self) -> None:
        """Another conversation goes on screen: tokens not painted yet belong to none."""
        self._pending_text.clear()

    def shutdown(self) -> None:
        """Stop the agent thread (plugin unload, QGIS exit)."""
        self.conversation.shutdown()
        with contextlib.suppress(TypeError):  # already disconnected
            self.conversation.event.disconnect(self._on_event)
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
