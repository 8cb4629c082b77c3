"""What a run reports while it goes: the protocol between the agent and its front-ends.

The agent emits these plain objects; the dock and the headless command render
them.  Nothing here depends on Qt, QGIS or LangChain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from geogpt_qgis.core.artifacts import EMPTY, ToolArtifact

RunStatus = Literal["finished", "failed", "cancelled", "paused"]


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer, as the model streams it."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's visible reasoning ("thinking")."""

    text: str


@dataclass(frozen=True)
class ToolStarted:
    """The agent is about to run a tool."""

    call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolProgress:
    """A long tool reports how far it got (0-100) and what it is doing."""

    call_id: str
    name: str
    percent: float
    message: str = ""


@dataclass(frozen=True)
class ToolFinished:
    """A tool returned; ``result`` is what the model sees (already bounded), ``artifact`` what it used and made."""

    call_id: str
    name: str
    ok: bool
    result: str
    seconds: float
    artifact: ToolArtifact = EMPTY


@dataclass(frozen=True)
class ModelCallFinished:
    """One model call ended; token counts are what the server reported (0 when unknown)."""

    input_tokens: int
    output_tokens: int
    seconds: float


@dataclass(frozen=True)
class ContextUsage:
    """How full the model's context window is for the call about to be made.

    ``used`` is the estimated prompt (system prompt, tool schemas, memory, the
    new message); ``reserved`` is kept free for the answer; ``omitted`` counts
    history messages summarised or left out to make it fit.
    """

    used: int
    limit: int
    reserved: int = 0
    omitted: int = 0


@dataclass(frozen=True)
class Notice:
    """Something the user should know that is neither answer nor tool (e.g. the step cap)."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class AnswerCut(Notice):
    """The model's reply was ended early: it kept repeating itself (``reason="loop"``), or it reached
    the bound on its length (``"length"``, ``limit`` tokens).  A ``Notice``, so everything that shows
    notices shows it; the dock words it in the user's language."""

    reason: Literal["loop", "length"] = "loop"
    limit: int = 0


@dataclass(frozen=True)
class ApprovalRequested:
    """The run paused: a step needs the user's approval (an ``ApprovalRequest`` as a dict)."""

    request: dict[str, Any]


@dataclass(frozen=True)
class RunFinished:
    """The run is over (or ``paused`` until the user approves a step); ``error`` says why when it failed."""

    status: RunStatus
    error: str | None = None


Event = (
    TextDelta
    | ReasoningDelta
    | ToolStarted
    | ToolProgress
    | ToolFinished
    | ModelCallFinished
    | ContextUsage
    | Notice
    | ApprovalRequested
    | RunFinished
)
