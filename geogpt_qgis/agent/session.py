"""One conversation with the agent: run a user message, yield what happens.

``AgentSession.run`` is an async generator of ``core.events`` objects; it is
Qt-free, so the dock (through ``AgentWorker``), the headless command and the
tests all drive exactly the same code.  Cancellation is asyncio cancellation
of the consuming task plus the run's ``CancelToken`` for tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage

from geogpt_qgis.agent.config import PROVIDER_OLLAMA, ModelConfig, ModelSetupError
from geogpt_qgis.agent.graph import build_graph, pending_request, tool_call_id
from geogpt_qgis.agent.memory import KIND, STATE_NOTE
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
from geogpt_qgis.agent.store import ConversationInfo, ConversationStore
from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.agent.transcript import Entry, to_markdown, transcript
from geogpt_qgis.core.approval import APPROVE, POLICY_ASK, ApprovalRequest
from geogpt_qgis.core.cancel import RunCancelled, current_conversation
from geogpt_qgis.core.events import ApprovalRequested, Event, ReasoningDelta, RunFinished, TextDelta
from geogpt_qgis.core.run_log import format_runs
from geogpt_qgis.core.sources import with_extras
from geogpt_qgis.core.think import ThinkTagSplitter
from geogpt_qgis.core.tokens import TokenCalibration
from geogpt_qgis.tools.project import project_brief
from geogpt_qgis.tools.registry import active_families, build_families

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from geogpt_qgis.tools.base import ToolContext, ToolFamily

log = logging.getLogger(__name__)

# The answer stored for a tool call whose step never finished; it is not run again.
UNFINISHED_STEP = "Not run: the run ended (stopped, or QGIS closed) before this step finished."


@dataclass(frozen=True)
class OpenedConversation:
    """A conversation continued from the store: what to show, and any step waiting for approval."""

    thread_id: str
    entries: list[Entry]
    pending: ApprovalRequest | None


async def _quietly(step: Awaitable[Any]) -> None:
    """Book-keeping after a run must never turn a stop or a failure into another error."""
    with contextlib.suppress(Exception):
        await step


class AgentSession:
    """A conversation (a LangGraph thread) over one QGIS project, and the store it lives in."""

    def __init__(
        self,
        ctx: ToolContext,
        checkpointer: BaseCheckpointSaver,
        thread_id: str | None = None,
        store: ConversationStore | None = None,
    ) -> None:
        self.ctx = ctx
        self.checkpointer = checkpointer
        self.store = store
        self.thread_id = thread_id or uuid.uuid4().hex
        self.families: list[ToolFamily] = build_families(ctx)
        self._model_info: dict[tuple[str, str], ModelInfo] = {}
        self._calibrations: dict[tuple[str, str], TokenCalibration] = {}
        self._toolkits: dict[tuple, Toolkit] = {}

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

    async def run(
        self, text: str, config: ModelConfig, policy: str = POLICY_ASK, note: str = ""
    ) -> AsyncIterator[Event]:
        """Run one user message until it ends or waits for approval; yields events, ending with ``RunFinished``.

        ``note`` tells the model what the user changed in the project since the
        last answer (kept in the history as a marked system message).
        Failures (server down, unknown model, HTTP errors) end the run with a
        clear ``RunFinished("failed", ...)``; cancellation propagates.
        """
        current_conversation.set(self.thread_id)
        for family in self.families:
            family.notice_user_text(text)
        messages: list[Any] = [SystemMessage(content=note, additional_kwargs={KIND: STATE_NOTE})] if note else []
        messages.append(HumanMessage(content=text))
        inputs = {"messages": messages, "model_calls": 0, "approval_policy": policy}
        async for event in self._logged(inputs, config, text, text):
            yield event

    async def resume(self, decision: dict[str, Any], config: ModelConfig) -> AsyncIterator[Event]:
        """Continue a run that waits for approval, with the user's decision."""
        from langgraph.types import Command

        label = "approved a step" if decision.get("action") == APPROVE else "rejected a step"
        async for event in self._logged(Command(resume=decision), config, f"({label})", None):
            yield event

    async def _logged(self, inputs: Any, config: ModelConfig, label: str, message: str | None) -> AsyncIterator[Event]:
        """Run, recording the run and its events in the store; prune old checkpoints after."""
        thread_id = self.thread_id
        current_conversation.set(thread_id)  # tools keep per-conversation state (the code namespace)
        if self.store is None:
            async for event in self._drive(inputs, config):
                yield event
            return
        project_file = await asyncio.to_thread(self.ctx.on_main, self.ctx.project.fileName)
        await self.store.touch(thread_id, message, project_file)
        run_log = await self.store.start_run(thread_id, label)
        try:
            async for event in self._drive(inputs, config):
                await run_log.record(event)
                if isinstance(event, RunFinished):
                    await run_log.finish(event.status, event.error)
                yield event
        except (asyncio.CancelledError, RunCancelled):
            await _quietly(run_log.finish("cancelled", None))
            raise
        except BaseException as exc:
            await _quietly(run_log.finish("failed", f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            await _quietly(self.store.prune(thread_id))

    async def _drive(self, inputs: Any, config: ModelConfig) -> AsyncIterator[Event]:
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
            calibration = self._calibrations.setdefault((config.base_url, config.model), TokenCalibration())
            try:
                graph = await self._graph(model, num_ctx, config.max_steps, calibration)
                if isinstance(inputs, dict):
                    # A new message while a step waits for approval gives that step up first.
                    await self._drop(graph, "Not done: the user moved on without deciding.")
                    await self._answer_unfinished(graph)
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

    async def _graph(
        self, model: Any, num_ctx: int, max_steps: int, calibration: TokenCalibration | None = None
    ) -> Any:
        """The graph for this run (``model`` None: only to read the conversation's state)."""
        brief = await asyncio.to_thread(self.ctx.on_main, project_brief, self.ctx.project)
        families = await asyncio.to_thread(active_families, self.families)
        hints = tuple(f.prompt_hint for f in families if f.prompt_hint)
        tools = [tool for family in families for tool in family.tools()]
        # Building a toolkit makes a pydantic schema per tool (~100 ms): reuse it while the tool set is the same.
        key = tuple((id(tool.__self__), tool.__name__) for tool in tools)  # type: ignore[attr-defined]
        toolkit = self._toolkits.get(key)
        if toolkit is None:
            toolkit = self._toolkits[key] = Toolkit(tools)
        return build_graph(
            model,
            toolkit,
            lambda summary: build_system_prompt(brief, summary, hints),
            max_steps=max_steps,
            context_tokens=num_ctx,
            checkpointer=self.checkpointer,
            calibration=calibration,
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

    async def _answer_unfinished(self, graph: Any) -> None:
        """Answer, in the store, the tool calls of a step that never finished (Stop, or QGIS closed mid-step).

        They are never run again; without an answer the conversation would
        hold calls without results, and the model would not know they did not run.
        """
        config = self._config()
        state = await graph.aget_state(config)
        messages = (state.values or {}).get("messages") or []
        if not state.next or pending_request(state) is not None or not messages:
            return
        last = messages[-1]
        if not isinstance(last, AIMessage):
            return
        calls = [*last.tool_calls, *last.invalid_tool_calls]
        answered = [
            ToolMessage(
                UNFINISHED_STEP, tool_call_id=tool_call_id(call, index), name=call.get("name") or "", status="error"
            )
            for index, call in enumerate(calls)
        ]
        if answered:
            await graph.aupdate_state(config, {"messages": answered}, as_node="tools")

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

    async def history(self, thread_id: str | None = None) -> list[Any]:
        """The stored messages of a conversation (default: this one)."""
        state = await self.checkpointer.aget_tuple({"configurable": {"thread_id": thread_id or self.thread_id}})
        if state is None:
            return []
        return list(state.checkpoint["channel_values"].get("messages", []))

    # -- the conversations in the store ---------------------------------------------
    async def open(self, thread_id: str) -> OpenedConversation:
        """Continue ``thread_id``: what the dock shows of it, and any step waiting for approval."""
        messages = await self.history(thread_id)
        request = await self.pending(thread_id)
        self.thread_id = thread_id
        entries = with_extras(transcript(messages))
        current_conversation.set(thread_id)
        for family in self.families:  # server URLs the user gave earlier stay usable
            for entry in entries:
                if entry.kind == "user":
                    family.notice_user_text(entry.text)
        return OpenedConversation(thread_id, entries, request)

    async def conversations(self, project: str | None = None) -> list[ConversationInfo]:
        return await self._store().conversations(project)

    async def rename(self, thread_id: str, title: str) -> None:
        await self._store().rename(thread_id, title)

    async def delete(self, thread_id: str) -> None:
        """Delete a conversation everywhere: its state, its catalogue entry and its run log."""
        await self.checkpointer.adelete_thread(thread_id)
        await self._store().delete(thread_id)
        if thread_id == self.thread_id:
            self.new_conversation()

    async def export_markdown(self, thread_id: str) -> str:
        info = await self._store().conversation(thread_id)
        entries = with_extras(transcript(await self.history(thread_id)))
        if info is None:
            return to_markdown("Conversation", "", time.time(), entries)
        return to_markdown(info.title, info.project, info.created, entries)

    async def run_log(self, thread_id: str | None = None) -> str:
        return format_runs(await self._store().runs(thread_id or self.thread_id))

    def _store(self) -> ConversationStore:
        if self.store is None:
            raise RuntimeError("this session keeps no conversation store")
        return self.store


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
