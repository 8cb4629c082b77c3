"""The agent graph: the model calls tools until it answers, within a step cap, and asks before risky steps.

```
START -> model --tool calls--> approve --> tools --> model ... --answer--> END
           \\--step cap reached--> step_cap --> END
```

The model node sends the system prompt plus the history that fits the
context.  The approve node looks at each tool call: a gated call (code, a SQL
write, deleting a layer or features, writing a file) pauses the run with a
LangGraph ``interrupt`` until the user decides, unless the conversation's
policy decides (trust: approve; never: refuse).  The tools node runs each call
through the ``Toolkit`` (which turns every mistake into a message the model
can act on), and never runs a gated call without a recorded approval.  At most
``MAX_TOOL_CALLS_PER_REPLY`` calls of one reply run, and
``MAX_TOOL_CALLS_PER_RUN`` per user message; each call past a cap is answered
"Not run" (nothing asked, nothing run), so a reply of 200 calls costs 16.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

from geogpt_qgis.agent.memory import KIND, RETRY_NOTE, build_memory, is_user_turn, kind_of
from geogpt_qgis.agent.providers import unparsed_as_invalid, with_retries
from geogpt_qgis.agent.reply import stream_reply
from geogpt_qgis.agent.toolkit import ToolOutcome
from geogpt_qgis.core.approval import (
    APPROVE,
    POLICY_ASK,
    POLICY_NEVER,
    POLICY_TRUST,
    REJECT,
    ApprovalRequest,
    Decision,
    automatic_notice,
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
    from langchain_core.language_models import BaseChatModel
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from geogpt_qgis.agent.toolkit import Toolkit

# Room left in the context window for the model's answer (less in small windows).
ANSWER_RESERVE_TOKENS = 1024
# Tool calls run per model reply, and per user message: a reply asking for 200 buffers runs 16.
MAX_TOOL_CALLS_PER_REPLY = 16
MAX_TOOL_CALLS_PER_RUN = 64
# additional_kwargs value (under memory.KIND) of the answers to calls that were not run because of a cap.
NOT_RUN = "not_run"


def answer_reserve(context_tokens: int) -> int:
    return min(ANSWER_RESERVE_TOKENS, max(context_tokens // 8, 256))


# A review holding this key records a call whose approval preview failed, with the error to answer it with.
PREVIEW_ERROR = "preview_error"

# Written by the model node: the decisions and reviews of earlier replies no longer apply.
FORGET: dict[str, Any] = {"__forget__": True}


def _merge(old: dict | None, new: dict | None) -> dict:
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
    # tool call id -> Decision as a dict; written only from the user's resume values or the policy
    decisions: Annotated[dict[str, dict[str, Any]], _merge]
    # tool call id -> the ApprovalRequest the approve node found for it (None: the call is harmless)
    reviews: Annotated[dict[str, dict[str, Any] | None], _merge]


def step_cap_message(max_steps: int) -> str:
    return (
        f"I stopped after {max_steps} steps without reaching an answer. "
        "Ask me to continue, narrow the question, or raise the step limit in the settings."
    )


def build_graph(
    model: BaseChatModel | None,
    toolkit: Toolkit,
    system_prompt: str,
    *,
    max_steps: int,
    context_tokens: int,
    checkpointer: BaseCheckpointSaver | None = None,
    calibration: TokenCalibration | None = None,
    max_tokens: int = 1024,
) -> Any:
    """Compile the graph; ``system_prompt`` opens every model call, the same text each time.

    ``model`` may be ``None`` to inspect a conversation's stored state only.
    ``calibration`` carries what earlier calls taught about the server's token
    counts (it only ever makes estimates larger).  ``max_tokens`` is the bound
    on a reply the model was built with (``ModelConfig.max_tokens``), for the
    message when a reply reaches it.
    """
    bound: list[Any] = []  # the model with the tools bound, made on first use
    calibration = calibration or TokenCalibration()
    schema_tokens = toolkit.schema_tokens
    reserve = answer_reserve(context_tokens)

    async def call_model(state: AgentState) -> dict[str, Any]:
        if model is None:
            raise RuntimeError("this graph was built without a model")
        if not bound:
            bound.append(model.bind_tools(toolkit.schemas))
        writer = get_stream_writer()
        calls = state.get("model_calls", 0) + 1
        # Everything is estimated in raw units; the calibration shrinks the window they must fit.
        window = int((context_tokens - reserve) / calibration.factor)
        fixed = estimate_tokens(system_prompt) + schema_tokens
        memory = build_memory(state["messages"], max(window - fixed, 0))
        prompt = [SystemMessage(system_prompt), *memory.messages]
        estimated = fixed + memory.tokens
        writer(ContextUsage(calibration.scale(estimated), context_tokens, reserve, memory.omitted_messages))
        started = time.perf_counter()
        try:
            # A busy or failing server is asked again (Retry-After honoured); undecodable arguments of an
            # Ollama tool call become invalid tool calls, answered as on the OpenAI protocol.  The reply
            # streams through a loop detector: a model that repeats itself is stopped (``agent.reply``).
            answer = await with_retries(
                lambda: stream_reply(bound[0], prompt, max_tokens),
                lambda text: writer(Notice(text, "warning")),
                retryable=lambda exc: unparsable_tool_call(exc) is None,
            )
            reply = clean_reply(unparsed_as_invalid(answer.message))  # no lone surrogate reaches the store or model
        except Exception as exc:
            problem = unparsable_tool_call(exc)
            if problem is None:
                scrub_exception(exc)  # LangGraph stores the error, and a server may have quoted the key in it
                raise
            # The model wrote a tool call that Ollama could not parse: tell it, let it retry.
            writer(Notice("The model sent a tool call that could not be parsed; asking it to retry.", "warning"))
            note = f"Your last tool call could not be parsed: {problem} Call the tool again with a valid JSON object."
            return {
                "messages": [AIMessage(content=""), HumanMessage(content=note, additional_kwargs={KIND: RETRY_NOTE})],
                "model_calls": calls,
                "decisions": FORGET,
                "reviews": FORGET,
            }
        usage = getattr(reply, "usage_metadata", None) or {}
        calibration.observe(estimated, int(usage.get("input_tokens", 0)))
        writer(
            ModelCallFinished(
                int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), time.perf_counter() - started
            )
        )
        if answer.cut is not None:
            writer(answer.cut)
        return {"messages": [reply], "model_calls": calls, "decisions": FORGET, "reviews": FORGET}

    async def approve(state: AgentState) -> dict[str, Any]:
        """Ask the user (or apply the policy) for every gated call of the last model reply.

        LangGraph re-runs this node from the top when the run resumes; earlier
        interrupts then return the decisions already given, in order.  Once the
        user rejects a step, the rest of the reply's risky steps are refused
        without asking (a reply that tries ten deletions costs one click).
        """
        last = state["messages"][-1]
        policy = state.get("approval_policy", POLICY_ASK)
        decisions: dict[str, dict[str, Any]] = {}
        reviews: dict[str, dict[str, Any] | None] = {}
        refused: Decision | None = None
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        allowed = calls_within_caps(state["messages"], len(calls))
        for index, call in enumerate(calls[:allowed]):  # calls past the caps are never run: nothing to ask
            call_id = tool_call_id(call, index)
            request = await toolkit.approval_request(call_id, call["name"], call["args"])
            if isinstance(request, ToolOutcome):  # the preview broke: the call is answered with the error
                reviews[call_id] = {PREVIEW_ERROR: request.text}
                continue
            reviews[call_id] = request.to_dict() if request is not None else None
            if request is None:
                continue
            if refused is not None:
                why = f" ({refused.reason})" if refused.reason else ""
                decision = Decision(REJECT, reason=f"the user rejected an earlier step of this reply{why}")
            elif policy == POLICY_NEVER:
                decision = Decision(REJECT, automatic=POLICY_NEVER)
            elif policy == POLICY_TRUST:
                decision = Decision(APPROVE, automatic=POLICY_TRUST)
            else:
                decision = Decision.from_value(interrupt(request.to_dict()))
                if decision.call_id and decision.call_id != call_id:
                    # The steps changed while the run waited (say, a layer went away): never reuse an answer.
                    decision = Decision(REJECT, reason="the steps changed while waiting for approval; ask again")
                if decision.trust:
                    policy = POLICY_TRUST
                if not decision.approved:
                    refused = decision
            decisions[call_id] = decision.to_dict()
        update: dict[str, Any] = {"decisions": decisions, "reviews": reviews}
        if policy != state.get("approval_policy", POLICY_ASK):
            update["approval_policy"] = policy
        return update

    async def run_tools(state: AgentState) -> dict[str, Any]:
        writer = get_stream_writer()
        loop = asyncio.get_running_loop()
        last = state["messages"][-1]
        if not isinstance(last, AIMessage):  # routing only sends AI messages with tool calls here
            return {"messages": []}
        decisions = state.get("decisions") or {}
        reviews = state.get("reviews") or {}
        results: list[ToolMessage] = []
        allowed = calls_within_caps(state["messages"], len(last.tool_calls))
        if allowed < len(last.tool_calls):
            skipped = len(last.tool_calls) - allowed
            writer(Notice(f"The model asked for {len(last.tool_calls)} tool calls; {skipped} were not run.", "warning"))
        for index, call in enumerate(last.tool_calls):
            call_id = tool_call_id(call, index)
            if index >= allowed:  # one message per call (the protocol wants every call answered), no tool step
                results.append(_tool_message(cap_message(index, allowed), call_id, call["name"], False, not_run=True))
                continue
            args = dict(call["args"] or {})
            writer(ToolStarted(call_id, call["name"], args))
            started = time.perf_counter()
            if call_id in reviews:  # the approve node looked at this call (it always does, on the graph's edges)
                review = reviews[call_id]
                found: Any = None
                if review is not None:
                    failed = review.get(PREVIEW_ERROR)
                    found = ToolOutcome(False, failed) if failed else ApprovalRequest.from_dict(review)
            else:
                found = await toolkit.approval_request(call_id, call["name"], args)
            if isinstance(found, ToolOutcome):  # its approval preview failed: never run, the model reads why
                writer(ToolFinished(call_id, call["name"], False, found.text, time.perf_counter() - started))
                results.append(_tool_message(found.text, call_id, call["name"], False))
                continue
            request = found
            decision = Decision.from_value(decisions[call_id]) if call_id in decisions else None
            if request is not None and decision is not None and decision.automatic:
                writer(Notice(automatic_notice(decision, request), "warning" if not decision.approved else "info"))
            if request is not None and (decision is None or not decision.approved):
                # The gate: a gated call never runs without the user's approval.
                text = rejection_message(decision or Decision(REJECT, reason="it was never approved"), request)
                writer(ToolFinished(call_id, call["name"], False, text, time.perf_counter() - started))
                results.append(_tool_message(text, call_id, call["name"], False))
                continue
            edited_note = ""
            if request is not None and decision and decision.edited is not None and request.editable:
                args[request.editable] = decision.edited
                edited_note = (
                    f"Note: the user edited the {request.editable} before approving; this version ran:\n"
                    f"{decision.edited}\n\n"
                )

            def progress(percent: float, message: str, call_id: str = call_id, name: str = call["name"]) -> None:
                # Called from the tool's thread: hand the event to the graph's loop.
                loop.call_soon_threadsafe(writer, ToolProgress(call_id, name, percent, message))

            token = current_progress.set(progress)
            try:
                outcome = await toolkit.run(call["name"], args, decision if request is not None else None)
            finally:
                current_progress.reset(token)
            text = edited_note + outcome.text
            seconds = time.perf_counter() - started
            writer(ToolFinished(call_id, call["name"], outcome.ok, text, seconds, outcome.artifact))
            results.append(_tool_message(text, call_id, call["name"], outcome.ok, artifact=outcome.artifact))
        for bad in last.invalid_tool_calls:
            call_id = bad.get("id") or f"call_{len(results)}"
            name = bad.get("name") or "unknown"
            writer(ToolStarted(call_id, name, {"arguments (unparsed)": bad.get("args")}))
            # The same words on both protocols; what was received, shortened, when the client gave no reason.
            problem = bad.get("error") or f"received {short(str(bad.get('args') or ''), 80)!r}"
            outcome = toolkit.malformed_call(name, problem)
            writer(ToolFinished(call_id, name, False, outcome.text, 0.0))
            results.append(_tool_message(outcome.text, call_id, name, False))
        return {"messages": results}

    def stop_at_cap(state: AgentState) -> dict[str, Any]:
        writer = get_stream_writer()
        last = state["messages"][-1]
        skipped: list[AnyMessage] = []
        if isinstance(last, AIMessage):
            for call in [*last.tool_calls, *last.invalid_tool_calls]:
                if call_id := call.get("id"):
                    name = str(call.get("name") or "")
                    skipped.append(_tool_message("Not run: the step limit was reached.", call_id, name, False))
        text = step_cap_message(max_steps)
        writer(Notice(text, "warning"))
        return {"messages": [*skipped, AIMessage(content=text)]}

    def after_model(state: AgentState) -> str:
        last = state["messages"][-1]
        wants_tools = isinstance(last, AIMessage) and bool(last.tool_calls or last.invalid_tool_calls)
        retry = isinstance(last, HumanMessage)  # a tool call that could not be parsed
        if not (wants_tools or retry):
            return END
        if state.get("model_calls", 0) >= max_steps:
            return "step_cap"
        return "approve" if wants_tools else "model"

    graph = StateGraph(AgentState)
    graph.add_node("model", call_model)
    graph.add_node("approve", approve)
    graph.add_node("tools", run_tools)
    graph.add_node("step_cap", stop_at_cap)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after_model, ["approve", "model", "step_cap", END])
    graph.add_edge("approve", "tools")
    graph.add_edge("tools", "model")
    graph.add_edge("step_cap", END)
    return graph.compile(checkpointer=checkpointer)


def pending_request(state: Any) -> ApprovalRequest | None:
    """The approval a conversation is waiting for (from ``graph.aget_state``), if any."""
    for interrupt_ in getattr(state, "interrupts", ()) or ():
        value = getattr(interrupt_, "value", None)
        if isinstance(value, dict) and "action" in value:
            return ApprovalRequest.from_dict(value)
    return None


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
