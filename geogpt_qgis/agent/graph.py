"""The agent graph: the model calls tools until it answers, within a step cap.

```
START -> model --tool calls--> tools --> model ... --answer--> END
           \\--step cap reached--> step_cap --> END
```

The model node sends the system prompt plus the history that fits the
context; the tools node runs each call through the ``Toolkit`` (which turns
every mistake into a message the model can act on) and reports each step to
the stream as ``ToolStarted``/``ToolFinished`` events.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from geogpt_qgis.agent.memory import estimate_tokens, fit_history
from geogpt_qgis.core.events import ModelCallFinished, Notice, ToolFinished, ToolProgress, ToolStarted
from geogpt_qgis.core.progress import current_progress

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from geogpt_qgis.agent.toolkit import Toolkit

# Room left in the context window for the model's answer.
ANSWER_RESERVE_TOKENS = 1024


class AgentState(TypedDict):
    """The conversation, plus the model calls made for the current user message."""

    messages: Annotated[list[AnyMessage], add_messages]
    model_calls: int


def step_cap_message(max_steps: int) -> str:
    return (
        f"I stopped after {max_steps} steps without reaching an answer. "
        "Ask me to continue, narrow the question, or raise the step limit in the settings."
    )


def build_graph(
    model: BaseChatModel,
    toolkit: Toolkit,
    system_prompt: Callable[[int], str],
    *,
    max_steps: int,
    context_tokens: int,
    checkpointer: BaseCheckpointSaver | None = None,
) -> Any:
    """Compile the graph; ``system_prompt(omitted)`` builds the prompt for each call."""
    bound = model.bind_tools(toolkit.tools)
    schema_tokens = estimate_tokens(str([t.args_schema.model_json_schema() for t in toolkit.tools]))  # type: ignore[union-attr]

    async def call_model(state: AgentState) -> dict[str, Any]:
        writer = get_stream_writer()
        calls = state.get("model_calls", 0) + 1
        base_prompt = system_prompt(0)
        budget = context_tokens - ANSWER_RESERVE_TOKENS - estimate_tokens(base_prompt) - schema_tokens
        history, omitted = fit_history(state["messages"], max(budget, 0))
        prompt = [SystemMessage(system_prompt(omitted) if omitted else base_prompt), *history]
        started = time.perf_counter()
        try:
            reply = await bound.ainvoke(prompt)
        except Exception as exc:
            problem = unparsable_tool_call(exc)
            if problem is None:
                raise
            # The model wrote a tool call that Ollama could not parse: tell it, let it retry.
            writer(Notice("The model sent a tool call that could not be parsed; asking it to retry.", "warning"))
            note = f"Your last tool call could not be parsed: {problem} Call the tool again with a valid JSON object."
            return {"messages": [AIMessage(content=""), HumanMessage(content=note)], "model_calls": calls}
        usage = getattr(reply, "usage_metadata", None) or {}
        writer(
            ModelCallFinished(
                int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), time.perf_counter() - started
            )
        )
        return {"messages": [reply], "model_calls": calls}

    async def run_tools(state: AgentState) -> dict[str, Any]:
        writer = get_stream_writer()
        loop = asyncio.get_running_loop()
        last = state["messages"][-1]
        if not isinstance(last, AIMessage):  # routing only sends AI messages with tool calls here
            return {"messages": []}
        results: list[ToolMessage] = []
        for call in last.tool_calls:
            call_id = call["id"] or f"call_{len(results)}"
            writer(ToolStarted(call_id, call["name"], dict(call["args"] or {})))
            started = time.perf_counter()

            def progress(percent: float, message: str, call_id: str = call_id, name: str = call["name"]) -> None:
                # Called from the tool's thread: hand the event to the graph's loop.
                loop.call_soon_threadsafe(writer, ToolProgress(call_id, name, percent, message))

            token = current_progress.set(progress)
            try:
                outcome = await toolkit.run(call["name"], call["args"])
            finally:
                current_progress.reset(token)
            writer(ToolFinished(call_id, call["name"], outcome.ok, outcome.text, time.perf_counter() - started))
            results.append(_tool_message(outcome.text, call_id, call["name"], outcome.ok))
        for bad in last.invalid_tool_calls:
            call_id = bad.get("id") or f"call_{len(results)}"
            name = bad.get("name") or "unknown"
            writer(ToolStarted(call_id, name, {"arguments (unparsed)": bad.get("args")}))
            outcome = toolkit.malformed_call(name, bad.get("error") or "")
            writer(ToolFinished(call_id, name, False, outcome.text, 0.0))
            results.append(_tool_message(outcome.text, call_id, name, False))
        return {"messages": results}

    def stop_at_cap(state: AgentState) -> dict[str, Any]:
        writer = get_stream_writer()
        last = state["messages"][-1]
        skipped: list[AnyMessage] = []
        if isinstance(last, AIMessage):
            for call in [*last.tool_calls, *last.invalid_tool_calls]:
                if call.get("id"):
                    skipped.append(
                        _tool_message("Not run: the step limit was reached.", call["id"], call.get("name") or "", False)
                    )
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
        return "tools" if wants_tools else "model"

    graph = StateGraph(AgentState)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_node("step_cap", stop_at_cap)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after_model, ["tools", "model", "step_cap", END])
    graph.add_edge("tools", "model")
    graph.add_edge("step_cap", END)
    return graph.compile(checkpointer=checkpointer)


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


def _tool_message(text: str, call_id: str, name: str, ok: bool) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call_id, name=name, status="success" if ok else "error")
