"""The agent graph's nodes, one named function each, and the state they read and write.

``agent.graph`` wires them: model -> (review -> approve -> tools, once per
call of the reply, in order) -> model ... until the model answers or the step
cap is reached.  Every node takes the graph's state
and the ``NodeSetup`` the graph was built with (the model, the toolkit, the
fixed system prompt and the limits), bound with ``functools.partial``, so each
node can be read, and tested, on its own.

The safety rules live here: each call of a reply is previewed just before it
runs (after the reply's earlier calls), the approve node asks before every
gated call (or the conversation's policy decides), the tools node never runs a
gated call without a recorded approval nor one that no longer resolves to the
targets approved, at most ``MAX_TOOL_CALLS_PER_REPLY`` calls of one
reply and ``MAX_TOOL_CALLS_PER_RUN`` per user message run, and every tool call
(run or not, valid or not) gets exactly one answer, scrubbed of secrets.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

from geogpt_qgis.agent.call_arguments import unparsed_as_invalid
from geogpt_qgis.agent.guided import GuidedChatModel
from geogpt_qgis.agent.memory import KIND, RETRY_NOTE, build_memory, is_user_turn, kind_of
from geogpt_qgis.agent.providers.retries import with_retries
from geogpt_qgis.agent.reply import Reply, stream_reply
from geogpt_qgis.agent.toolkit import ToolOutcome
from geogpt_qgis.core.approval import (
    ALWAYS,
    APPROVE,
    POLICY_ASK,
    POLICY_NEVER,
    POLICY_TRUST,
    REJECT,
    ApprovalRequest,
    Decision,
    automatic_notice,
    current_standing,
    rejection_message,
)
from geogpt_qgis.core.artifacts import EMPTY, ToolArtifact
from geogpt_qgis.core.bounds import clean_reply
from geogpt_qgis.core.events import ContextUsage, ModelCallFinished, Notice, ToolFinished, ToolProgress, ToolStarted
from geogpt_qgis.core.progress import current_progress
from geogpt_qgis.core.secrets_scrub import scrub, scrub_exception
from geogpt_qgis.core.text import short
from geogpt_qgis.core.tokens import TokenCalibration, estimate_tokens

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel, LanguageModelInput
    from langchain_core.messages.tool import InvalidToolCall, ToolCall
    from langchain_core.runnables import Runnable
    from langgraph.types import StreamWriter

    from geogpt_qgis.agent.toolkit import Toolkit

# Room left in the context window for the model's answer (less in small windows).
ANSWER_RESERVE_TOKENS = 1024
# Tool calls run per model reply, and per user message: a reply asking for 200 buffers runs 16.
MAX_TOOL_CALLS_PER_REPLY = 16
MAX_TOOL_CALLS_PER_RUN = 64
# additional_kwargs value (under memory.KIND) of the answers to calls that were not run because of a cap.
NOT_RUN = "not_run"
# A review holding this key records a call whose approval preview failed, with the error to answer it with.
PREVIEW_ERROR = "preview_error"
# Written by the model node: the decisions and reviews of earlier replies no longer apply.
FORGET: dict[str, Any] = {"__forget__": True}


def answer_reserve(context_tokens: int) -> int:
    return min(ANSWER_RESERVE_TOKENS, max(context_tokens // 8, 256))


def _merge(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer for per-reply bookkeeping: add entries, or start over on ``FORGET``.

    Starting over on each model reply matters for safety: a later call that
    reuses an earlier call's id must be reviewed again, never inherit its approval.
    """
    if new and new.get("__forget__"):
        return {}
    return {**(old or {}), **(new or {})}


class AgentState(TypedDict, total=False):
    """The conversation, the model calls made for the current user message, and the user's decisions."""

    messages: Annotated[list[AnyMessage], add_messages]
    model_calls: int
    approval_policy: str
    # Step.key (position:tool call id) -> Decision as a dict; written only from the user's resume values or the policy
    decisions: Annotated[dict[str, dict[str, Any]], _merge]
    # Step.key -> the ApprovalRequest the review node found for it (None: the call is harmless)
    reviews: Annotated[dict[str, dict[str, Any] | None], _merge]


@dataclass
class NodeSetup:
    """What every node of one compiled graph shares; fixed for the graph's life.

    ``system_prompt`` opens every model call, the same text each time (so the
    server can reuse its cached prefix).  ``calibration`` learns the server's
    token counts as calls report them; ``max_tokens`` bounds each reply.
    """

    model: BaseChatModel | None
    toolkit: Toolkit
    system_prompt: str
    max_steps: int
    context_tokens: int
    max_tokens: int = 1024
    calibration: TokenCalibration = field(default_factory=TokenCalibration)
    # The same model asked for guided calls, used from the first call whose native tool calls the server
    # refuses (auto mode); ``on_fallback`` is told, so the session asks guided from the start next time.
    fallback: BaseChatModel | None = None
    on_fallback: Callable[[], None] | None = None

    def use_fallback(self) -> bool:
        """Switch to the guided model for the rest of this graph's life; whether there was one."""
        if self.fallback is None:
            return False
        self.model, self.fallback = self.fallback, None
        self.__dict__.pop("bound_model", None)  # bound again, to the guided model, on next use
        if self.on_fallback is not None:
            self.on_fallback()
        return True

    @property
    def reserve(self) -> int:
        return answer_reserve(self.context_tokens)

    @functools.cached_property
    def bound_model(self) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with the tools bound, made on first use (a graph built to read state never needs it)."""
        if self.model is None:
            raise RuntimeError("this graph was built without a model")
        if isinstance(self.model, GuidedChatModel):  # it may also admit the tools describe_capabilities lists
            return self.model.bind_tools(self.toolkit.schemas, reachable=self.toolkit.unsent_schemas)
        return self.model.bind_tools(self.toolkit.schemas)


def step_cap_message(max_steps: int) -> str:
    return (
        f"I stopped after {max_steps} steps without reaching an answer. "
        "Ask me to continue, narrow the question, or raise the step limit in the settings."
    )


# --- model ---------------------------------------------------------------------------------------------------------


async def call_model(state: AgentState, setup: NodeSetup) -> dict[str, Any]:
    """Send the system prompt and the history that fits the context; stream the reply back."""
    writer = get_stream_writer()
    calls = state.get("model_calls", 0) + 1
    prompt, estimated = _prompt(state, setup, writer)
    started = time.perf_counter()
    try:
        last = calls >= setup.max_steps  # a guided model's last step before the cap is its answer
        try:
            answer = await _ask(setup, prompt, writer, last)
        except Exception as exc:
            if not (native_calls_refused(exc) and setup.use_fallback()):
                raise
            writer(Notice(GUIDED_FALLBACK_NOTICE, "info"))
            answer = await _ask(setup, prompt, writer, last)
        reply = clean_reply(unparsed_as_invalid(answer.message))  # no lone surrogate reaches the store or model
    except Exception as exc:
        problem = unparsable_tool_call(exc)
        if problem is None:
            scrub_exception(exc)  # LangGraph stores the error, and a server may have quoted the key in it
            raise
        # The model wrote a tool call that Ollama could not parse: tell it, let it retry.
        writer(Notice("The model sent a tool call that could not be parsed; asking it to retry.", "warning"))
        note = f"Your last tool call could not be parsed: {problem} Call the tool again with a valid JSON object."
        retry = [AIMessage(content=""), HumanMessage(content=note, additional_kwargs={KIND: RETRY_NOTE})]
        return {"messages": retry, "model_calls": calls, "decisions": FORGET, "reviews": FORGET}
    _report_reply(answer, reply, estimated, started, setup.calibration, writer)
    return {"messages": [reply], "model_calls": calls, "decisions": FORGET, "reviews": FORGET}


async def _ask(setup: NodeSetup, prompt: list[Any], writer: StreamWriter, last: bool = False) -> Reply:
    """One reply of the model, streamed.

    A busy or failing server is asked again (Retry-After honoured); undecodable
    arguments of an Ollama tool call become invalid tool calls, answered as on
    the OpenAI protocol.  The reply streams through a loop detector: a model
    that repeats itself is stopped (``agent.reply``).  ``last``: the step cap
    is reached with this reply, so a guided model may only answer (from what
    the calls so far read) rather than make a call that would never run.
    """
    bound = setup.bound_model
    if last and isinstance(setup.model, GuidedChatModel):
        bound = bound.bind(answer_only=True)
    return await with_retries(
        lambda: stream_reply(bound, prompt, setup.max_tokens),
        lambda text: writer(Notice(text, "warning")),
        retryable=lambda exc: unparsable_tool_call(exc) is None and not native_calls_refused(exc),
    )


GUIDED_FALLBACK_NOTICE = (
    "The model server refused tool calls for this model, so GeoGPT asks it for guided tool calls instead "
    "(replies constrained to one offered tool call or an answer). Settings > GeoGPT > Tool calls chooses."
)


def native_calls_refused(exc: BaseException) -> bool:
    """Whether the server refused the request because of its tools (not a failure of the call itself).

    Ollama: "... does not support tools" (HTTP 400); llama.cpp's server
    without ``--jinja``: "tools param requires --jinja flag"; vLLM without
    ``--enable-auto-tool-choice``: "auto" tool choice requires ...
    """
    if unparsable_tool_call(exc) is not None:
        return False
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
    text = f"{getattr(exc, 'error', '') or ''} {getattr(exc, 'body', '') or ''} {exc}".lower()
    return isinstance(status, int) and 400 <= status < 600 and "tool" in text


def _prompt(state: AgentState, setup: NodeSetup, writer: StreamWriter) -> tuple[list[Any], int]:
    """The messages of one model call, and their estimated size in raw (uncalibrated) tokens."""
    calibration, reserve = setup.calibration, setup.reserve
    # Everything is estimated in raw units; the calibration shrinks the window they must fit.
    window = int((setup.context_tokens - reserve) / calibration.factor)
    fixed = estimate_tokens(setup.system_prompt) + setup.toolkit.schema_tokens
    memory = build_memory(state["messages"], max(window - fixed, 0))
    estimated = fixed + memory.tokens
    writer(ContextUsage(calibration.scale(estimated), setup.context_tokens, reserve, memory.omitted_messages))
    return [SystemMessage(setup.system_prompt), *memory.messages], estimated


def _report_reply(
    answer: Reply, reply: Any, estimated: int, started: float, calibration: TokenCalibration, writer: StreamWriter
) -> None:
    """Teach the calibration the server's token count; tell the dock the call's cost and why a reply was cut."""
    usage = getattr(reply, "usage_metadata", None) or {}
    calibration.observe(estimated, int(usage.get("input_tokens", 0)))
    writer(
        ModelCallFinished(
            int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), time.perf_counter() - started
        )
    )
    if answer.cut is not None:
        writer(answer.cut)


def after_model(state: AgentState, setup: NodeSetup) -> str:
    """Route after a reply: tools for tool calls, the model again for a retry note, else the end (or the cap)."""
    last = state["messages"][-1]
    wants_tools = isinstance(last, AIMessage) and bool(last.tool_calls or last.invalid_tool_calls)
    retry = isinstance(last, HumanMessage)  # a tool call that could not be parsed
    if not (wants_tools or retry):
        return END
    if state.get("model_calls", 0) >= setup.max_steps:
        return "step_cap"
    return "review" if wants_tools else "model"


def stop_at_cap(state: AgentState, setup: NodeSetup) -> dict[str, Any]:
    """Answer the last reply's calls "not run" and tell the user the step limit was reached."""
    writer = get_stream_writer()
    last = state["messages"][-1]
    skipped: list[AnyMessage] = []
    if isinstance(last, AIMessage):
        for call in [*last.tool_calls, *last.invalid_tool_calls]:
            if call_id := call.get("id"):
                name = str(call.get("name") or "")
                skipped.append(_tool_message("Not run: the step limit was reached.", call_id, name, False))
    text = step_cap_message(setup.max_steps)
    writer(Notice(text, "warning"))
    return {"messages": [*skipped, AIMessage(content=text)]}


# --- review and approve -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """The next call of the last reply to answer: its position, id and the key of its review and decision."""

    index: int
    call: ToolCall
    call_id: str

    @property
    def key(self) -> str:
        # By position too: a reply that repeats a call id never lets one call use another's approval.
        return f"{self.index}:{self.call_id}"


def current_reply(messages: list[AnyMessage]) -> tuple[AIMessage | None, int, int]:
    """The last model reply, how many of its calls are answered (in order, after it) and its position."""
    answered = 0
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, ToolMessage):
            answered += 1
        elif isinstance(message, AIMessage):
            return message, answered, position
        else:
            break
    return None, 0, len(messages)


def next_step(messages: list[AnyMessage]) -> Step | None:
    """The reply's first unanswered call within the caps, if any (calls are previewed, decided and run in order)."""
    reply, answered, position = current_reply(messages)
    if reply is None:
        return None
    allowed = calls_within_caps(messages[:position], len(reply.tool_calls))
    if answered >= allowed:
        return None
    call = reply.tool_calls[answered]
    return Step(answered, call, tool_call_id(call, answered))


async def review(state: AgentState, setup: NodeSetup) -> dict[str, Any]:
    """Preview the reply's next call now, after its earlier calls ran, and decide it where no one need be asked.

    Each call is previewed just before it runs, never with the reply's other
    calls up front: a card never describes a project that the reply's earlier
    calls are about to change (a layer renamed by the call before is shown
    under the name and source it has when this one runs).  The policy decides
    (never: refuse; trust: approve), so does an earlier rejection in this reply
    (the rest of its risky steps are refused without asking: a reply that tries
    ten deletions costs one click) and an "always for this tool" answer that
    covers this call's tool, targets and effects (``StandingApprovals``);
    otherwise the ``approve`` node asks the user.
    """
    step = next_step(state["messages"])
    if step is None:
        return {}
    request = await setup.toolkit.approval_request(step.call_id, step.call["name"], step.call["args"])
    if isinstance(request, ToolOutcome):  # the preview broke: the call is answered with the error
        return {"reviews": {step.key: {PREVIEW_ERROR: request.text}}}
    update: dict[str, Any] = {"reviews": {step.key: request.to_dict() if request is not None else None}}
    if request is None:
        return update
    policy = state.get("approval_policy", POLICY_ASK)
    refused = _earlier_refusal(state.get("decisions") or {})
    standing = current_standing.get()
    if refused is not None or policy in (POLICY_NEVER, POLICY_TRUST):
        update["decisions"] = {step.key: _automatic_decision(policy, refused).to_dict()}
    elif standing is not None and standing.covers(request):
        update["decisions"] = {step.key: Decision(APPROVE, automatic=ALWAYS).to_dict()}
    return update


def after_review(state: AgentState, setup: NodeSetup) -> str:
    """Ask the user when the reviewed call is gated and nothing decided it; else run it."""
    step = next_step(state["messages"])
    if step is None:
        return "tools"
    found = (state.get("reviews") or {}).get(step.key)
    waiting = isinstance(found, dict) and PREVIEW_ERROR not in found and step.key not in (state.get("decisions") or {})
    return "approve" if waiting else "tools"


async def approve(state: AgentState, setup: NodeSetup) -> dict[str, Any]:
    """Pause until the user answers the reviewed call's card (its request as the review stored it).

    The card is the stored review, not a new preview: LangGraph runs this node
    again from the top when the run resumes, and the answer then applies to
    exactly the request the user saw.  The call runs only if it still resolves
    to that request's targets (``Toolkit.run``).
    """
    step = next_step(state["messages"])
    found = (state.get("reviews") or {}).get(step.key) if step is not None else None
    if step is None or not isinstance(found, dict):
        return {}
    request = ApprovalRequest.from_dict(found)
    decision = _ask_user(step.call_id, request)
    update: dict[str, Any] = {"decisions": {step.key: decision.to_dict()}}
    if decision.trust and decision.approved:
        update["approval_policy"] = POLICY_TRUST
    standing = current_standing.get()
    if decision.always and decision.approved and standing is not None:
        standing.grant(request)
    return update


def _earlier_refusal(decisions: dict[str, dict[str, Any]]) -> Decision | None:
    """The user's rejection of an earlier call of this reply, if any (the policy's refusals do not count)."""
    for value in decisions.values():
        decision = Decision.from_value(value)
        if not decision.approved and not decision.automatic:
            return decision
    return None


def _automatic_decision(policy: str, refused: Decision | None) -> Decision:
    """The decision made without asking: after a rejection in this reply, or by the never/trust policy."""
    if refused is not None:
        why = f" ({refused.reason})" if refused.reason else ""
        return Decision(REJECT, reason=f"the user rejected an earlier step of this reply{why}")
    if policy == POLICY_NEVER:
        return Decision(REJECT, automatic=POLICY_NEVER)
    return Decision(APPROVE, automatic=POLICY_TRUST)


def _ask_user(call_id: str, request: ApprovalRequest) -> Decision:
    """Pause the run until the user answers ``request`` (LangGraph ``interrupt``)."""
    decision = Decision.from_value(interrupt(request.to_dict()))
    if decision.call_id and decision.call_id != call_id:
        # The steps changed while the run waited (say, a layer went away): never reuse an answer.
        return Decision(REJECT, reason="the steps changed while waiting for approval; ask again")
    return decision


# --- tools ---------------------------------------------------------------------------------------------------------


async def run_tools(state: AgentState, setup: NodeSetup) -> dict[str, Any]:
    """Answer the reply's next call (run it, or refuse it: the gate), then, after its last, the rest.

    Once the last call within the caps is answered, the calls past the caps
    are answered "not run" and malformed ones with what was wrong.
    """
    writer = get_stream_writer()
    messages = state["messages"]
    reply, answered, position = current_reply(messages)
    if reply is None:  # routing only sends replies with tool calls here
        return {"messages": []}
    calls = reply.tool_calls
    allowed = calls_within_caps(messages[:position], len(calls))
    results: list[ToolMessage] = []
    step = next_step(messages)
    if step is not None:
        results.append(await _run_call(state, setup, step, writer))
        answered += 1
    if answered < allowed:
        return {"messages": results}
    if allowed < len(calls) and answered <= len(calls):
        writer(Notice(f"The model asked for {len(calls)} tool calls; {len(calls) - allowed} were not run.", "warning"))
    for index in range(max(answered, allowed), len(calls)):  # one message per call, no tool step
        call_id = tool_call_id(calls[index], index)
        results.append(_tool_message(cap_message(index, allowed), call_id, calls[index]["name"], False, not_run=True))
    if answered <= len(calls):
        for offset, bad in enumerate(reply.invalid_tool_calls):  # ids made up as the session makes them
            call_id = bad.get("id") or f"call_{len(calls) + offset}"
            results.append(_answer_malformed(setup.toolkit, bad, call_id, writer))
    return {"messages": results}


def after_tools(state: AgentState, setup: NodeSetup) -> str:
    """The next call of the reply is reviewed once this one has run; after the last, the model reads the results."""
    return "review" if next_step(state["messages"]) is not None else "model"


async def _run_call(state: AgentState, setup: NodeSetup, step: Step, writer: StreamWriter) -> ToolMessage:
    """Run one call within the caps, unless its preview failed or it is gated and was not approved."""
    name, call_id = step.call["name"], step.call_id
    args = dict(step.call["args"] or {})
    writer(ToolStarted(call_id, name, args))
    started = time.perf_counter()
    found = await _review(setup.toolkit, state.get("reviews") or {}, step.key, call_id, name, args)
    if isinstance(found, ToolOutcome):  # its approval preview failed: never run, the model reads why
        return _not_run(found.text, call_id, name, started, writer)
    decisions = state.get("decisions") or {}
    decision = Decision.from_value(decisions[step.key]) if step.key in decisions else None
    refusal = _gate(found, decision, writer)
    if refusal is not None:  # the gate: a gated call never runs without the user's approval
        return _not_run(refusal, call_id, name, started, writer)
    edited_note = ""
    if found is not None and decision is not None and decision.edited is not None and found.editable:
        args[found.editable] = decision.edited
        edited_note = (
            f"Note: the user edited the {found.editable} before approving; this version ran:\n{decision.edited}\n\n"
        )
    used = decision if found is not None else None  # a harmless call runs without a decision
    outcome = await _run_with_progress(setup.toolkit, name, args, used, found, call_id, writer)
    text = edited_note + outcome.text
    writer(ToolFinished(call_id, name, outcome.ok, text, time.perf_counter() - started, outcome.artifact))
    return _tool_message(text, call_id, name, outcome.ok, artifact=outcome.artifact)


def _not_run(text: str, call_id: str, name: str, started: float, writer: StreamWriter) -> ToolMessage:
    """Answer a call that was refused before it ran, and tell the dock."""
    writer(ToolFinished(call_id, name, False, text, time.perf_counter() - started))
    return _tool_message(text, call_id, name, False)


async def _review(
    toolkit: Toolkit,
    reviews: dict[str, dict[str, Any] | None],
    key: str,
    call_id: str,
    name: str,
    args: dict[str, Any],
) -> ApprovalRequest | ToolOutcome | None:
    """What the review node found for this call (it always looks, on the graph's edges); else look now."""
    if key not in reviews:
        return await toolkit.approval_request(call_id, name, args)
    found = reviews[key]
    if found is None:
        return None
    failed = found.get(PREVIEW_ERROR)
    return ToolOutcome(False, failed) if failed else ApprovalRequest.from_dict(found)


def _gate(request: ApprovalRequest | None, decision: Decision | None, writer: StreamWriter) -> str | None:
    """Why a gated call may not run (``None``: it may); says so when a policy decided."""
    if request is None:
        return None
    if decision is not None and decision.automatic:
        writer(Notice(automatic_notice(decision, request), "warning" if not decision.approved else "info"))
    if decision is not None and decision.approved:
        return None
    return rejection_message(decision or Decision(REJECT, reason="it was never approved"), request)


async def _run_with_progress(
    toolkit: Toolkit,
    name: str,
    args: dict[str, Any],
    decision: Decision | None,
    approved: ApprovalRequest | None,
    call_id: str,
    writer: StreamWriter,
) -> ToolOutcome:
    """Run one call through the toolkit, its progress reports streamed as ``ToolProgress`` events."""
    loop = asyncio.get_running_loop()

    def progress(percent: float, message: str) -> None:
        # Called from the tool's thread: hand the event to the graph's loop.
        loop.call_soon_threadsafe(writer, ToolProgress(call_id, name, percent, message))

    token = current_progress.set(progress)
    try:
        return await toolkit.run(name, args, decision, approved)
    finally:
        current_progress.reset(token)


def _answer_malformed(toolkit: Toolkit, bad: InvalidToolCall, call_id: str, writer: StreamWriter) -> ToolMessage:
    """Answer a call whose arguments could not be parsed, in the same words on both protocols."""
    name = bad.get("name") or "unknown"
    writer(ToolStarted(call_id, name, {"arguments (unparsed)": bad.get("args")}))
    # What was received, shortened, when the client gave no reason.
    problem = bad.get("error") or f"received {short(str(bad.get('args') or ''), 80)!r}"
    outcome = toolkit.malformed_call(name, problem)
    writer(ToolFinished(call_id, name, False, outcome.text, 0.0))
    return _tool_message(outcome.text, call_id, name, False)


# --- helpers -------------------------------------------------------------------------------------------------------


def unparsable_tool_call(exc: BaseException) -> str | None:
    """The reason, if ``exc`` means the model's tool call could not be parsed (else ``None``).

    Ollama reports it as HTTP 500 "error parsing tool call"; LangChain's Ollama
    client raises ``OutputParserException`` for arguments it cannot decode.
    """
    if isinstance(exc, OutputParserException):
        return str(exc).splitlines()[0][:300]
    text = str(getattr(exc, "error", "") or exc)
    if "error parsing tool call" in text:
        return text[:300]
    return None


def tool_call_id(call: Any, index: int) -> str:
    """The id of a tool call (made up from its position when the server sent none)."""
    return call.get("id") or f"call_{index}"


def calls_within_caps(messages: list[AnyMessage], asked: int) -> int:
    """How many of the ``asked`` calls of the last reply may run (the first ones, in order).

    At most ``MAX_TOOL_CALLS_PER_REPLY`` per reply, and ``MAX_TOOL_CALLS_PER_RUN``
    since the user's last message (calls answered "not run" do not count).
    """
    ran = 0
    for message in reversed(messages):
        if is_user_turn(message):
            break
        if isinstance(message, ToolMessage) and kind_of(message) != NOT_RUN:
            ran += 1
    return max(0, min(asked, MAX_TOOL_CALLS_PER_REPLY, MAX_TOOL_CALLS_PER_RUN - ran))


def cap_message(index: int, allowed: int) -> str:
    """The answer to a call past the caps (it was not run)."""
    if allowed >= MAX_TOOL_CALLS_PER_REPLY or index >= MAX_TOOL_CALLS_PER_REPLY:
        return (
            f"Not run: at most {MAX_TOOL_CALLS_PER_REPLY} tool calls are run per reply. "
            "Look at the results of the first ones, then call again only what is still needed."
        )
    return (
        f"Not run: this question reached its limit of {MAX_TOOL_CALLS_PER_RUN} tool calls. "
        "Answer with what you have, or tell the user what is left to do."
    )


def _tool_message(
    text: str, call_id: str, name: str, ok: bool, not_run: bool = False, artifact: ToolArtifact = EMPTY
) -> ToolMessage:
    """The answer to one call; its artifact (stored as a plain dict) is kept with it but never sent to the model."""
    extra = {KIND: NOT_RUN} if not_run else {}
    status = "success" if ok else "error"
    stored = artifact.to_dict() or None
    return ToolMessage(
        content=scrub(text), tool_call_id=call_id, name=name, status=status, additional_kwargs=extra, artifact=stored
    )
