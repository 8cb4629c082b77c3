"""Human approval before anything risky: what a request says, what a decision is, and the gate's rules.

A tool that can change data or run code is *gated*: it names its preview (the
function itself, not its name) that describes exactly what a call would do
(the code or SQL, the layers, tables or files affected) without doing it.  The agent pauses the run on such
a call until the user decides.  Decisions only ever come from the user (they
are resumed into the graph by the dock), never from the model, and the tool
checks again, when it runs, that it was approved.  Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar, cast

from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.targets import Target, within

POLICY_ASK = "ask"
POLICY_TRUST = "trust"  # approve everything in this conversation without asking
POLICY_NEVER = "never"
POLICIES = (POLICY_ASK, POLICY_TRUST, POLICY_NEVER)
# Marks a decision made by an "always for this tool" answer (``StandingApprovals``), not by a policy.
ALWAYS = "always"
# The effect kind of a request whose tool lists none: what that tool itself does when approved.
UNLISTED = "unlisted"
# Effects no "always" can cover: any later code could do anything, so each snippet is read and approved.
NEVER_STANDING = frozenset({Effect.RUN_CODE})

APPROVE, REJECT = "approve", "reject"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class ApprovalRequest:
    """What a gated call would do, shown on the approval card.

    ``editable`` names the argument whose text (``details``) the user may edit
    before approving: the code or the SQL.  ``targets`` are the layers, tables
    and files the call resolves to (``core.targets``): the call that runs must
    resolve to exactly these, or it does not run.  ``notes`` are what the card
    says beside them that the targets do not hold (a table's estimated rows, an
    expression's effects, files a snippet names); never a target again in words.
    """

    action: str
    details: str
    language: str = "text"  # "python", "sql" or "text"
    notes: list[str] = field(default_factory=list)
    editable: str | None = None
    tool: str = ""
    call_id: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    effects: list[Effect] = field(default_factory=list)  # for the policy, "always" and the card
    targets: list[Target] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.effects = effects_of(self.effects)

    def to_dict(self) -> dict[str, Any]:
        """Plain values only: effects as their strings (a checkpoint keeps an enum's class and warns loading it)."""
        data = asdict(self)
        data["effects"] = [effect.value for effect in self.effects]
        data["targets"] = [target.to_dict() for target in self.targets]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ApprovalRequest:
        """Also a request stored by an earlier version (effects as strings, targets as dicts or missing)."""
        data = dict(data)
        if "affected" in data and "notes" not in data:  # stored before targets were typed: its lines are notes
            data["notes"] = data.pop("affected")
        request = cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
        request.targets = [Target.from_value(t) for t in (request.targets or [])]
        return request


def effects_of(values: Any) -> list[Effect]:
    """Effects from what a preview or a stored request gives: members or their strings, each once, in order.

    A string this version does not know (a request stored by a later one)
    counts as ``RUN_CODE``, an effect that cannot be checked first: the card
    asks, and no "always" covers it.  Never dropped: fewer effects would let
    a standing answer cover more.
    """
    if isinstance(values, str) or not isinstance(values, Iterable):
        values = [values] if values else []
    found: list[Effect] = []
    for value in values:
        try:
            effect = Effect(value)
        except ValueError:
            effect = Effect.RUN_CODE
        if effect not in found:
            found.append(effect)
    return found


@dataclass(frozen=True)
class Decision:
    """The user's answer to one request."""

    action: str  # APPROVE or REJECT
    reason: str = ""
    edited: str | None = None  # new text for the request's editable argument
    trust: bool = False  # approve the rest of this conversation without asking
    automatic: str = ""  # set when a policy decided, not the user
    call_id: str = ""  # the tool call the user answered (from the card), checked against the one waiting
    always: bool = False  # approve this tool's calls with the same effects for the rest of the conversation

    @property
    def approved(self) -> bool:
        return self.action == APPROVE

    @classmethod
    def from_value(cls, value: Any) -> Decision:
        """Accept what the dock resumes with; anything malformed counts as a rejection."""
        if isinstance(value, Decision):
            return value
        if not isinstance(value, dict) or value.get("action") not in (APPROVE, REJECT):
            return cls(REJECT, reason="no valid decision was given")
        edited = value.get("edited")
        return cls(
            value["action"],
            str(value.get("reason") or ""),
            edited if isinstance(edited, str) else None,
            bool(value.get("trust")),
            str(value.get("automatic") or ""),
            str(value.get("call_id") or ""),
            always=bool(value.get("always")),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def gated(preview: Callable[..., ApprovalRequest | None]) -> Callable[[F], F]:
    """Mark a tool method as needing approval; ``preview`` is the method describing a call.

    Written ``@gated(preview_x)`` in the class body under ``def preview_x``:
    the function itself, so a renamed or missing preview fails at import, not
    at the first call.  The preview takes the tool's arguments (and ``self``)
    and returns an ``ApprovalRequest``, or ``None`` when this particular call
    is harmless (a read-only query, say).
    """
    if not callable(preview):
        raise TypeError(f"gated takes the preview function, not {type(preview).__name__} {preview!r}")

    def mark(function: F) -> F:
        function.approval_preview = preview  # type: ignore[attr-defined]
        return function

    return mark


def approval_preview(tool: Callable[..., Any]) -> Callable[..., ApprovalRequest | None] | None:
    """The preview of a gated tool, bound to the tool's object when the tool is a method (``None``: not gated)."""
    function = getattr(tool, "__wrapped__", tool)
    preview = getattr(function, "approval_preview", None)
    if preview is None:
        return None
    owner = getattr(function, "__self__", None)
    if owner is not None and hasattr(preview, "__get__"):
        preview = preview.__get__(owner, type(owner))
    return cast(Callable[..., ApprovalRequest | None], preview)


# The decision for the tool call running now (set by the agent around a gated call).
current_decision: ContextVar[Decision | None] = ContextVar("geogpt_decision", default=None)
# The request the user approved for the call running now: a tool binds to its targets (layer ids...), not to names.
current_approval: ContextVar[ApprovalRequest | None] = ContextVar("geogpt_approval", default=None)


def approved_targets(kind: str) -> list[Target]:
    """The approved targets of ``kind`` for the running call (empty when it was approved without targets)."""
    request = current_approval.get()
    return [t for t in request.targets if t.kind == kind] if request is not None and approval_granted() else []


def approval_granted() -> bool:
    """Whether the running tool call was approved by the user (or by their trust policy)."""
    decision = current_decision.get()
    return bool(decision and decision.approved)


class StandingApprovals:
    """The "always for this tool" answers of one conversation, and which requests they cover.

    An answer covers later calls of the same tool on the same targets
    (``core.targets.within``: the same layers, tables and files, with the same
    or fewer operations on each: "always" for updating 'schools' never covers
    deleting from it, nor updating 'parks'), whose effects (``core.effects``
    kinds) are the same or fewer: "always" for a ``run_sql`` that writes to a
    database never covers one that also talks to the network.  A request whose
    tool lists no effects counts as one kind (``UNLISTED``: what the tool itself
    does), so it is covered only by an answer given for such a request.  Kept in
    memory by the run engine, per conversation: a conversation reopened from the
    store, or after QGIS restarts, asks again (the user sees every standing
    answer being given; none outlives the session it was given in).
    """

    def __init__(self) -> None:
        self._grants: dict[str, list[tuple[frozenset[str], tuple[Target, ...]]]] = {}

    @staticmethod
    def _kinds(request: ApprovalRequest) -> frozenset[str]:
        return frozenset(effect.value for effect in request.effects) or frozenset({UNLISTED})

    @classmethod
    def can_stand(cls, request: ApprovalRequest) -> bool:
        """Whether "always" may be offered for ``request``: a tool, and no effect that must be read every time."""
        return bool(request.tool) and not cls._kinds(request) & NEVER_STANDING

    def grant(self, request: ApprovalRequest) -> None:
        """Remember the user's "always" for ``request``'s tool and effects (ignored where it may not stand)."""
        if not self.can_stand(request):
            return
        grant = (self._kinds(request), tuple(request.targets))
        held = self._grants.setdefault(request.tool, [])
        if request.tool and grant not in held:
            held.append(grant)

    def covers(self, request: ApprovalRequest) -> bool:
        """Whether an earlier "always" approves ``request``: same tool and targets, same or fewer effects."""
        kinds = self._kinds(request)
        return bool(request.tool) and any(
            kinds <= held and within(targets, request.targets) for held, targets in self._grants.get(request.tool, [])
        )

    @property
    def tools(self) -> list[str]:
        """The tools with a standing "always", in the order given."""
        return [tool for tool, held in self._grants.items() if held]

    def forget(self) -> list[str]:
        """Drop every standing answer (the user revoked them); returns the tools they were for."""
        tools = self.tools
        self._grants.clear()
        return tools


# The standing answers of the conversation being run (set by the run engine around a run).
current_standing: ContextVar[StandingApprovals | None] = ContextVar("geogpt_standing", default=None)


def automatic_notice(decision: Decision, request: ApprovalRequest) -> str:
    """What the chat says when the policy, not the user, decided a step."""
    if decision.approved and decision.automatic == ALWAYS:
        return f"Approved automatically (you chose always for {request.tool} in this conversation): {request.action}."
    if decision.approved:
        return f"Approved automatically (you trust this conversation): {request.action}."
    return f"Not allowed by your approval policy: {request.action}."


def rejection_message(decision: Decision, request: ApprovalRequest) -> str:
    """What the model reads when a gated call did not run."""
    if decision.automatic == POLICY_NEVER:
        return (
            f"Not done: {request.action.lower()} is not allowed by the user's approval policy (never allow). "
            "Tell the user what you would do, so they can do it themselves."
        )
    reason = f" Their reason: {decision.reason}" if decision.reason else ""
    return f"Not done: the user rejected this ({request.action.lower()}).{reason} Do not retry it unchanged."
