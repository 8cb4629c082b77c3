"""What a run was doing when the user pressed Stop, so that what it did is kept and counted.

A stopped run ends in the middle of something: a model call streaming its
answer, tool calls under way.  ``RunTracker`` follows the run's events as they
pass; on Stop it says which calls had finished (their results are kept in the
conversation, for the model), which were under way (answered "stopped"), what
answer text the user had seen, and the events that close the run log honestly
(the cut model call and the stopped steps count as calls).  Qt-free.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from geogpt_qgis.core.events import (
    ContextUsage,
    Event,
    ModelCallFinished,
    ReasoningDelta,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from geogpt_qgis.core.tokens import estimate_tokens

# The answer given, in the conversation, to a tool call of the reply under way that had not reported back at Stop
# (under way, or maybe not started: what its task did after the last event read is not known).
STOPPED_STEP = "Stopped by the user before this step finished; it may have done part of its work."
# Ends a stopped answer in the conversation, so the model knows it was cut (the dock shows it as a mark).
STOPPED_ANSWER = "[Stopped here by the user.]"


@dataclass
class RunTracker:
    """Follows one run's events (``see``); after a Stop, tells what it left unfinished."""

    started: dict[str, tuple[str, float]] = field(default_factory=dict)  # call id -> tool, start time
    finished: dict[str, ToolFinished] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)  # the answer text streamed by the model call under way
    model_started: float | None = None
    model_input: int = 0
    stopped: bool = False  # set when the user stopped the run

    def see(self, event: Event) -> None:
        now = time.perf_counter()
        if isinstance(event, ContextUsage):  # a model call starts (its prompt is measured first)
            self.model_started, self.model_input = now, event.used
            self.text.clear()
            self.finished.clear()  # call ids may repeat from reply to reply (made up when a server sends none)
        elif isinstance(event, TextDelta):
            self.text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            return
        elif isinstance(event, ModelCallFinished):
            self.model_started = None
        elif isinstance(event, ToolStarted):
            self.started[event.call_id] = (event.name, now)
        elif isinstance(event, ToolFinished):
            self.started.pop(event.call_id, None)
            self.finished[event.call_id] = event
        if not isinstance(event, TextDelta | ContextUsage):
            self.text.clear()  # a call ended or a tool ran: the text so far is in the conversation already

    @property
    def shown(self) -> str:
        """The answer text the user saw from the model call under way."""
        return "".join(self.text)

    def closing_events(self) -> list[Event]:
        """For the run log at Stop: the cut model call and the steps under way, each counted as a call."""
        now = time.perf_counter()
        events: list[Event] = []
        if self.model_started is not None:
            events.append(ModelCallFinished(self.model_input, estimate_tokens(self.shown), now - self.model_started))
        for call_id, (name, started) in self.started.items():
            events.append(ToolFinished(call_id, name, False, STOPPED_STEP, now - started))
        return events
