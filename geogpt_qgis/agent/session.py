"""One conversation with the agent: run a user message, yield what happens.

``AgentSession.run`` is an async generator of ``core.events`` objects; it is
Qt-free, so the dock (through ``AgentWorker``), the headless command and the
tests all drive exactly the same code.  Cancellation is asyncio cancellation
of the consuming task plus the run's ``CancelToken`` for tools.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage

from geogpt_qgis.agent.config import PROVIDER_OLLAMA, ModelConfig, ModelSetupError
from geogpt_qgis.agent.graph import build_graph, pending_request, tool_call_id
from geogpt_qgis.agent.prompts import build_system_prompt
from geogpt_qgis.agent.providers import (
    ModelInfo,
    ServerError,
    aclose_chat_model,
    create_chat_model,
    effective_context,
    explain_model_error,
    ollama_model_info,
)
from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.approval import POLICY_ASK, ApprovalRequest
from geogpt_qgis.core.cancel import RunCancelled, current_conversation
from geogpt_qgis.core.events import ApprovalRequested, Event, ReasoningDelta, RunFinished, TextDelta
from geogpt_qgis.core.think import ThinkTagSplitter
from geogpt_qgis.tools.project import project_brief
from geogpt_qgis.tools.registry import active_families, build_families

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from geogpt_qgis.tools.base import ToolContext, ToolFamily

log = logging.getLogger(__name__)


class AgentSession:
    """A conversation (a LangGraph thread) over one QGIS project."""

    def __init__(self, ctx: ToolContext, checkpointer: BaseCheckpointSaver, thread_id: str | None = None) -> None:
        self.ctx = ctx
        self.checkpointer = checkpointer
        self.thread_id = thread_id or uuid.uuid4().hex
        self.families: list[ToolFamily] = build_families(ctx)
        self._model_info: dict[tuple[str, str], ModelInfo] = {}

    def new_conversation(self) -> str:
        """Start a fresh thread; the old one stays in the store."""
        self.thread_id = uuid.uuid4().hex
        return self.thread_id

    async def _model_info_for(self, config: ModelConfig) -> ModelInfo | None:
        if config.provider != PROVIDER_OLLAMA:
            return None
        key = (config.base_url, config.model)
        if key not in self._model_info:
            self._model_info[key] = await asyncio.to_thread(ollama_model_info, config.base_url, config.model)
        return self._model_info[key]

    async def run(self, text: str, config: ModelConfig, policy: str = POLICY_ASK) -> AsyncIterator[Event]:
        """Run one user message until it ends or waits for approval; yields events, ending with ``RunFinished``.

        Failures (server down, unknown model, HTTP errors) end the run with a
        clear ``RunFinished("failed", ...)``; cancellation propagates.
        """
        inputs = {"messages": [HumanMessage(content=text)], "model_calls": 0, "approval_policy": policy}
        async for event in self._drive(inputs, config):
            yield event

    async def resume(self, decision: dict[str, Any], config: ModelConfig) -> AsyncIterator[Event]:
        """Continue a run that waits for approval, with the user's decision."""
        from langgraph.types import Command

        async for event in self._drive(Command(resume=decision), config):
            yield event

    async def _drive(self, inputs: Any, config: ModelConfig) -> AsyncIterator[Event]:
        current_conversation.set(self.thread_id)  # tools keep per-conversation state (the code namespace)
        try:
            config.validate()
            info = await self._model_info_for(config)
            if info is not None and info.supports_tools is False:
                raise ModelSetupError(
                    f"The model '{config.model}' cannot call tools, which GeoGPT needs. "
                    "Choose a model with tool support (for example qwen3, llama3.1 or mistral-nemo)."
                )
            num_ctx = effective_context(config, info)
            model = create_chat_model(config, num_ctx, thinking=bool(info and info.supports_thinking))
            try:
                graph = await self._graph(model, num_ctx, config.max_steps)
                if isinstance(inputs, dict):
                    # A new message while a step waits for approval gives that step up first.
                    await self._drop(graph, "Not done: the user moved on without deciding.")
                async for event in self._stream(graph, inputs, config):
                    yield event
                request = pending_request(await graph.aget_state(self._config(config.max_steps)))
            finally:
                await aclose_chat_model(model)
        except (ModelSetupError, ServerError) as exc:
            yield RunFinished("failed", explain_model_error(exc, config))
            return
        except (asyncio.CancelledError, RunCancelled):
            raise
        except Exception as exc:
            log.debug("run failed", exc_info=True)
            yield RunFinished("failed", explain_model_error(exc, config))
            return
        if request is not None:
            yield ApprovalRequested(request.to_dict())
            yield RunFinished("paused")
            return
        yield RunFinished("finished")

    async def _graph(self, model: Any, num_ctx: int, max_steps: int) -> Any:
        """The graph for this run (``model`` None: only to read the conversation's state)."""
        brief = await asyncio.to_thread(self.ctx.on_main, project_brief, self.ctx.project)
        families = await asyncio.to_thread(active_families, self.families)
        hints = tuple(f.prompt_hint for f in families if f.prompt_hint)
        tools = [tool for family in families for tool in family.tools()]
        return build_graph(
            model,
            Toolkit(tools),
            lambda omitted: build_system_prompt(brief, omitted, hints),
            max_steps=max_steps,
            context_tokens=num_ctx,
            checkpointer=self.checkpointer,
        )

    def _config(self, max_steps: int = 15, thread_id: str | None = None) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id or self.thread_id}, "recursion_limit": 3 * max_steps + 10}

    async def pending(self, thread_id: str | None = None) -> ApprovalRequest | None:
        """The approval a conversation (default: this one) waits for, if any; it survives restarts (in the store)."""
        graph = await self._graph(None, 8192, 15)
        return pending_request(await graph.aget_state(self._config(thread_id=thread_id)))

    async def drop_pending(self, thread_id: str | None = None) -> bool:
        """Give up the step a conversation (default: this one) waits on; returns whether there was one."""
        graph = await self._graph(None, 8192, 15)
        return await self._drop(graph, "Not done: the user dropped this step.", thread_id)

    async def _drop(self, graph: Any, answer: str, thread_id: str | None = None) -> bool:
        """Answer every tool call of the paused step with ``answer``, so the conversation stays well-formed."""
        config = self._config(thread_id=thread_id)
        state = await graph.aget_state(config)
        if pending_request(state) is None:
            return False
        last = state.values["messages"][-1]
        answered = [
            ToolMessage(content=answer, tool_call_id=tool_call_id(call, index), name=call["name"], status="error")
            for index, call in enumerate(getattr(last, "tool_calls", []))
        ]
        await graph.aupdate_state(config, {"messages": answered}, as_node="tools")
        return True

    async def _stream(self, graph: Any, inputs: Any, config: ModelConfig) -> AsyncIterator[Event]:
        splitter = ThinkTagSplitter()
        current_message: str | None = None
        async for mode, data in graph.astream(
            inputs, self._config(config.max_steps), stream_mode=["messages", "custom"]
        ):
            if mode == "custom":
                yield data
                continue
            chunk, meta = data
            if meta.get("langgraph_node") != "model" or not isinstance(chunk, AIMessageChunk):
                continue
            if chunk.id != current_message:
                for kind, piece in splitter.flush():
                    yield _delta(kind, piece)
                splitter, current_message = ThinkTagSplitter(), chunk.id
            reasoning = chunk.additional_kwargs.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                yield ReasoningDelta(reasoning)
            for kind, piece in splitter.feed(_content_text(chunk.content)):
                yield _delta(kind, piece)
        for kind, piece in splitter.flush():
            yield _delta(kind, piece)

    async def history(self) -> list[Any]:
        """The stored messages of the current thread (for tests and resume)."""
        state = await self.checkpointer.aget_tuple({"configurable": {"thread_id": self.thread_id}})
        if state is None:
            return []
        return list(state.checkpoint["channel_values"].get("messages", []))


def _delta(kind: str, text: str) -> Event:
    return ReasoningDelta(text) if kind == "reasoning" else TextDelta(text)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            if isinstance(part, dict) and part.get("type") == "text"
            else (part if isinstance(part, str) else "")
            for part in content
        )
    return ""
