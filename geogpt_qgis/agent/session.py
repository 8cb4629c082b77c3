"""The run engine of a conversation: run a user message (or resume after an approval), yield what happens.

``AgentSession.run`` is an async generator of ``core.events`` objects; it is
Qt-free, so the dock, the headless command and the tests all drive exactly the
same code through ``conversation.Conversation``, which owns the conversation's
life (which one is current, the store, stop) and sets ``thread_id`` before each
run.  Cancellation is asyncio cancellation of the consuming task plus the run's
``CancelToken`` for tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage

from geogpt_qgis.agent.config import (
    PROVIDER_OLLAMA,
    TOOL_CALLS_AUTO,
    TOOL_CALLS_GUIDED,
    TOOL_CALLS_NATIVE,
    ModelConfig,
    ModelSetupError,
)
from geogpt_qgis.agent.graph import build_graph, pending_request, recursion_limit, tool_call_id
from geogpt_qgis.agent.guided import guided_chat_model
from geogpt_qgis.agent.memory import KIND, PROJECT_STATE, STATE_NOTE, STOPPED, is_user_turn, kind_of, text_of
from geogpt_qgis.agent.nodes import current_reply
from geogpt_qgis.agent.profiles import ModelSize, ProfileKeeper, offered_names, system_prompt
from geogpt_qgis.agent.prompts import project_state
from geogpt_qgis.agent.providers.chat import aclose_chat_model, create_chat_model
from geogpt_qgis.agent.providers.discovery import (
    ModelInfo,
    ServerError,
    effective_context,
    ollama_model_info,
    openai_model_info,
)
from geogpt_qgis.agent.providers.explain import explain_model_error
from geogpt_qgis.agent.store import ConversationStore
from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.approval import APPROVE, POLICY_ASK, ApprovalRequest, StandingApprovals, current_standing
from geogpt_qgis.core.cancel import RunCancelled, current_conversation
from geogpt_qgis.core.events import ApprovalRequested, Event, ReasoningDelta, RunFinished, TextDelta
from geogpt_qgis.core.guided_schema import ExampleAlgorithms, Vocabulary, WorkedExamples
from geogpt_qgis.core.provenance import RunOrigin, current_origin
from geogpt_qgis.core.secrets_scrub import scrub
from geogpt_qgis.core.stopped_run import STOPPED_ANSWER, STOPPED_STEP, RunTracker
from geogpt_qgis.core.think import ThinkTagSplitter
from geogpt_qgis.core.tokens import TokenCalibration
from geogpt_qgis.tools import result_copies
from geogpt_qgis.tools.project.family import project_brief
from geogpt_qgis.tools.provenance import ProvenanceRecorder
from geogpt_qgis.tools.registry import active_families, build_families

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph

    from geogpt_qgis.agent.nodes import AgentState
    from geogpt_qgis.tools.base import ToolContext, ToolFamily

log = logging.getLogger(__name__)

# additional_kwargs of a project-state note: the session that told it, and the project file it was about.
TOLD_IN = "geogpt_session"
TOLD_ABOUT = "geogpt_project"

# The answer stored for a tool call whose step never finished; it is not run again.
UNFINISHED_STEP = "Not run: the run ended (stopped, or QGIS closed) before this step finished."
# Ends the stored part of an answer whose model call failed in the middle (the user saw that part).
CUT_OFF_ANSWER = "[The answer was cut off here: the model server stopped answering.]"


async def _quietly(step: Awaitable[Any]) -> None:
    """Book-keeping after a run must never turn a stop or a failure into another error."""
    with contextlib.suppress(Exception):
        await step


async def _stored_results() -> None:
    """Every result copy under way finished, its layer reading the stored table (``tools.result_copies``)."""
    if result_copies.pending():
        await asyncio.to_thread(result_copies.finish)


async def _despite_stop(step: Awaitable[Any]) -> None:
    """Book-keeping after a stop, done to the end even when the stop's second signal arrives meanwhile.

    Stop cancels the run's token (a tool raises ``RunCancelled``) and its task
    (``CancelledError``); whichever comes second must not cut the saving of what
    the run did.  The caller re-raises the stop afterwards.
    """
    task = asyncio.ensure_future(step)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    if not task.cancelled() and task.exception() is not None:
        log.debug("saving a stopped run failed", exc_info=task.exception())


class AgentSession:
    """A conversation (a LangGraph thread) over one QGIS project, and the store it lives in."""

    def __init__(
        self,
        ctx: ToolContext,
        checkpointer: BaseCheckpointSaver[str],
        thread_id: str | None = None,
        store: ConversationStore | None = None,
    ) -> None:
        self.ctx = ctx
        self.checkpointer = checkpointer
        self.store = store
        self.thread_id = thread_id or uuid.uuid4().hex
        self.session_id = uuid.uuid4().hex  # a conversation taken up by another session is told the project again
        self.families: list[ToolFamily] = build_families(ctx)
        self._model_info: dict[tuple[str, str], ModelInfo] = {}
        self._listed: dict[tuple[str, str], ModelInfo | None] = {}  # what OpenAI-compatible /models says
        # The tool profile of each conversation (``agent.profiles``), fixed at its start.
        self.profiles = ProfileKeeper(lambda: [tool.__name__ for family in self.families for tool in family.tools()])
        # (server, model) whose native tool calls the server refused in this session: asked guided from then on.
        self._guided_models: set[tuple[str, str]] = set()
        self._calibrations: dict[tuple[str, str], TokenCalibration] = {}
        self._toolkits: dict[tuple[Any, ...], Toolkit] = {}
        # "Always for this tool" answers per conversation, for this session only (see StandingApprovals).
        self._standing: dict[str, StandingApprovals] = {}

    def standing(self, thread_id: str | None = None) -> StandingApprovals:
        """The "always for this tool" answers of a conversation (default: this one)."""
        return self._standing.setdefault(thread_id or self.thread_id, StandingApprovals())

    async def _model_info_for(self, config: ModelConfig) -> ModelInfo | None:
        if config.provider != PROVIDER_OLLAMA:
            return None
        key = (config.base_url, config.model)
        if key not in self._model_info:
            self._model_info[key] = await asyncio.to_thread(ollama_model_info, config.base_url, config.model)
        return self._model_info[key]

    async def _model_size(self, config: ModelConfig) -> ModelSize:
        """What the server says of the model's size, for the tool profile; ``None`` where it does not (or fails)."""
        try:
            if config.provider == PROVIDER_OLLAMA:
                info = await self._model_info_for(config)
            else:
                key = (config.base_url, config.model)
                if key not in self._listed:
                    found = await asyncio.to_thread(openai_model_info, config.base_url, config.model, config.api_key)
                    self._listed[key] = found
                info = self._listed[key]
        except ServerError:  # the run itself says what is wrong with the server
            log.debug("the model's size is unknown", exc_info=True)
            return None, None
        return (info.parameter_count, info.context_length) if info is not None else (None, None)

    async def run(
        self, text: str, config: ModelConfig, policy: str = POLICY_ASK, note: str = ""
    ) -> AsyncIterator[Event]:
        """Run one user message until it ends or waits for approval; yields events, ending with ``RunFinished``.

        ``note`` tells the model what the user changed in the project since the
        last answer (kept in the history as a marked system message).  The
        project's state goes first when the model has not been told it in this
        session and project (``_project_state``).
        Failures (server down, unknown model, HTTP errors) end the run with a
        clear ``RunFinished("failed", ...)``; cancellation propagates.
        """
        current_conversation.set(self.thread_id)
        for family in self.families:
            family.notice_user_text(text)
        messages: list[Any] = await self._project_state()
        if note:
            messages.append(SystemMessage(content=note, additional_kwargs={KIND: STATE_NOTE}))
        messages.append(HumanMessage(content=text))
        inputs = {"messages": messages, "model_calls": 0, "approval_policy": policy}
        async for event in self._logged(inputs, config, text, text):
            yield event

    async def _project_state(self) -> list[Any]:
        """The project-state note for this message, if the model needs one (else nothing).

        The history only ever grows at its end (local servers then reuse their
        cache of it), so the project's state is told once, as a note, not in the
        system prompt: when a conversation starts, when it is taken up in
        another session (QGIS restarted, or the command line), and after another
        project was opened.  The user's later changes follow as state notes.
        """
        brief, project_file = await asyncio.to_thread(self.ctx.on_main, _brief_and_file, self.ctx.project)
        for message in reversed(await self.history()):
            if kind_of(message) == PROJECT_STATE:
                told = message.additional_kwargs
                if told.get(TOLD_IN) == self.session_id and told.get(TOLD_ABOUT) == project_file:
                    return []
                break
        note = project_state(brief)
        note.additional_kwargs.update({TOLD_IN: self.session_id, TOLD_ABOUT: project_file})
        return [note]

    async def resume(self, decision: dict[str, Any], config: ModelConfig) -> AsyncIterator[Event]:
        """Continue a run that waits for approval, with the user's decision."""
        from langgraph.types import Command

        label = "approved a step" if decision.get("action") == APPROVE else "rejected a step"
        async for event in self._logged(Command(resume=decision), config, f"({label})", None):
            yield event

    async def _logged(self, inputs: Any, config: ModelConfig, label: str, message: str | None) -> AsyncIterator[Event]:
        """Run, recording the run and its events in the store; prune old checkpoints after.

        A stopped run keeps what it did (``_keep_stopped``, wherever the stop
        lands), and its log counts it: the cut model call and the steps under
        way are recorded as calls (``RunTracker.closing_events``) before the run
        is marked cancelled.
        """
        thread_id = self.thread_id
        current_conversation.set(thread_id)  # tools keep per-conversation state (the code namespace)
        current_standing.set(self.standing(thread_id))  # the approve node reads the "always" answers
        history = await self.history(thread_id)
        current_origin.set(run_origin(message, history, config))  # the result layers' provenance reads it
        # The conversation's tool profile: fixed at its first run, so its prompt never changes (``agent.profiles``).
        notices = await self.profiles.begin(thread_id, history, inputs, config, self._model_size)
        tracker = RunTracker()
        run_log = None
        if self.store is not None:
            project_file = await asyncio.to_thread(self.ctx.on_main, self.ctx.project.fileName)
            await self.store.touch(thread_id, message, project_file)
            run_log = await self.store.start_run(thread_id, label)
        events = self._drive(inputs, config, tracker)
        # The run's results are stored while the model reads them, and all of them before it ends.
        result_copies.copies_deferred.set(True)
        try:
            async for event in _preceded(notices, events):
                if isinstance(event, RunFinished):
                    await _quietly(_stored_results())
                tracker.see(event)
                if run_log is not None:
                    await run_log.record(event)
                    if isinstance(event, RunFinished):
                        await run_log.finish(event.status, event.error)
                yield event
        except (asyncio.CancelledError, RunCancelled):
            tracker.stopped = True
            await _despite_stop(events.aclose())  # a stop between two events: the run keeps what it did
            if run_log is not None:
                await _despite_stop(_close_log(run_log, tracker.closing_events()))
            raise
        except BaseException as exc:
            if run_log is not None:
                await _quietly(run_log.finish("failed", f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            await _despite_stop(_stored_results())  # a stopped or failed run's results too
            if self.store is not None:
                await _quietly(self.store.prune(thread_id))

    async def _drive(self, inputs: Any, config: ModelConfig, tracker: RunTracker) -> AsyncGenerator[Event, None]:
        try:
            config.validate()
            info = await self._model_info_for(config)
            mode = self._tool_call_mode(config, info)
            if mode == TOOL_CALLS_NATIVE and info is not None and info.supports_tools is False:
                raise ModelSetupError(
                    f"The model '{config.model}' cannot call tools, which GeoGPT needs in the Native tool-call "
                    "mode. Set Tool calls to Auto or Guided in the settings (replies held to a schema of the "
                    "tools), or choose a model with tool support (for example qwen3, llama3.1 or mistral-nemo)."
                )
            num_ctx = effective_context(config, info)
            native = create_chat_model(config, num_ctx, thinking=bool(info and info.supports_thinking))
            guided = guided_chat_model(native, config, self._vocabulary, self._guided_examples)
            model, fallback = (guided, None) if mode == TOOL_CALLS_GUIDED else (native, guided)
            if config.tool_calls != TOOL_CALLS_AUTO:
                fallback = None  # the user chose the mode: it is never changed for them
            calibration = self._calibrations.setdefault((config.base_url, config.model), TokenCalibration())
            try:
                graph = await self._graph(
                    model,
                    num_ctx,
                    config.max_steps,
                    calibration,
                    config.max_tokens,
                    fallback=fallback,
                    on_fallback=lambda: self._guided_models.add((config.base_url, config.model)),
                )
                if isinstance(inputs, dict):
                    # A new message while a step waits for approval gives that step up first.
                    await self._answer_open_calls(graph, "Not done: the user moved on without deciding.", paused=True)
                    await self._answer_open_calls(graph, UNFINISHED_STEP, paused=False)
                shown: list[str] = []  # the answer text streamed by the model call under way
                try:
                    # Closed with this generator: a stop between two events ends the graph's tasks first.
                    async with contextlib.aclosing(self._stream(graph, inputs, config)) as stream:
                        async for event in stream:
                            if isinstance(event, TextDelta):
                                shown.append(event.text)
                            elif not isinstance(event, ReasoningDelta):
                                shown.clear()  # a call ended (or a tool ran): its text is in the state already
                            yield event
                except (asyncio.CancelledError, RunCancelled):
                    await _despite_stop(self._keep_stopped(graph, tracker))
                    raise
                except GeneratorExit:  # closed by ``_logged`` after a stop that came between two events
                    if tracker.stopped:
                        await _despite_stop(self._keep_stopped(graph, tracker))
                    raise
                except Exception:
                    await _quietly(self._keep_cut_answer(graph, "".join(shown)))
                    raise
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

    def _tool_call_mode(self, config: ModelConfig, info: ModelInfo | None) -> str:
        """Native or guided tool calls for this run (``ModelConfig.tool_calls``; auto decides per server and model).

        Auto is guided for a model the server says cannot call tools (Ollama's
        capabilities) and for one whose native calls the server refused before
        in this session (``nodes.call_model`` falls back); native otherwise.
        """
        if config.tool_calls != TOOL_CALLS_AUTO:
            return config.tool_calls
        if info is not None and info.supports_tools is False:
            return TOOL_CALLS_GUIDED
        if (config.base_url, config.model) in self._guided_models:
            return TOOL_CALLS_GUIDED
        return TOOL_CALLS_NATIVE

    async def _vocabulary(self, algorithms: ExampleAlgorithms = ()) -> Vocabulary:
        """The names a guided reply may use now (the project's layers and fields, the registry's algorithms)."""
        from geogpt_qgis.tools.vocabulary import read_vocabulary

        return await asyncio.to_thread(self.ctx.on_main, read_vocabulary, self.ctx.project, algorithms)

    async def _guided_examples(self, question: str, tools: frozenset[str]) -> WorkedExamples:
        """Worked examples for ``question`` as guided replies, calling only ``tools`` (names read on main, the
        values of the layers it names read from snapshots on a worker)."""
        from geogpt_qgis.tools.examples.family import guided_examples, named_layer_plans, project_names, text_values

        names = await asyncio.to_thread(self.ctx.on_main, project_names, self.ctx.project)
        plans = await asyncio.to_thread(self.ctx.on_main, named_layer_plans, self.ctx.project, question, names[0])
        values = await asyncio.to_thread(text_values, plans, self.ctx.cancel)
        return await asyncio.to_thread(guided_examples, question, names, tools, values)

    async def _graph(
        self,
        model: Any,
        num_ctx: int,
        max_steps: int,
        calibration: TokenCalibration | None = None,
        max_tokens: int = 1024,
        fallback: Any = None,
        on_fallback: Callable[[], None] | None = None,
    ) -> CompiledStateGraph[AgentState]:
        """The graph for this run (``model`` None: only to read the conversation's state)."""
        families = await asyncio.to_thread(active_families, self.families)
        tools = [tool for family in families for tool in family.tools()]
        profile = self.profiles.profile(self.thread_id)
        offered = offered_names(profile, [tool.__name__ for tool in tools])  # None: every tool is sent
        # Building a toolkit makes a pydantic schema per tool (~100 ms): reuse it while the tool set is the same.
        key = (offered, *((id(tool.__self__), tool.__name__) for tool in tools))  # type: ignore[attr-defined]
        toolkit = self._toolkits.get(key)
        if toolkit is None:
            toolkit = self._toolkits[key] = Toolkit(
                tools, offered, after_call=ProvenanceRecorder(self.ctx), before_call=result_copies.finish
            )
        return build_graph(
            model,
            toolkit,
            system_prompt(profile, families, offered),
            max_steps=max_steps,
            context_tokens=num_ctx,
            checkpointer=self.checkpointer,
            calibration=calibration,
            max_tokens=max_tokens,
            fallback=fallback,
            on_fallback=on_fallback,
        )

    def _config(self, max_steps: int = 15, thread_id: str | None = None) -> RunnableConfig:
        return {
            "configurable": {"thread_id": thread_id or self.thread_id},
            "recursion_limit": recursion_limit(max_steps),
        }

    async def pending(self, thread_id: str | None = None) -> ApprovalRequest | None:
        """The approval a conversation (default: this one) waits for, if any; it survives restarts (in the store)."""
        graph = await self._graph(None, 8192, 15)
        return pending_request(await graph.aget_state(self._config(thread_id=thread_id)))

    async def drop_pending(self, thread_id: str | None = None) -> bool:
        """Give up the step a conversation (default: this one) waits on; returns whether there was one."""
        graph = await self._graph(None, 8192, 15)
        return await self._answer_open_calls(graph, "Not done: the user dropped this step.", True, thread_id)

    async def _answer_open_calls(
        self, graph: CompiledStateGraph[AgentState], answer: str, paused: bool, thread_id: str | None = None
    ) -> bool:
        """Answer, in the store, every tool call of a step that will not run, with ``answer``; whether there was one.

        ``paused``: the step waits for approval (the user dropped it or moved
        on); otherwise it never finished (Stop, or QGIS closed mid-step).  Its
        calls, valid and malformed alike, are never run again; without an answer
        the conversation would hold calls without results, which the model
        servers refuse, and the model would not know they did not run.
        """
        config = self._config(thread_id=thread_id)
        state = await graph.aget_state(config)
        waiting = pending_request(state) is not None
        last, done, _ = current_reply(await self._stored_messages(config))
        if waiting != paused or last is None:
            return False
        if not (waiting or state.next or done < len(last.tool_calls) + len(last.invalid_tool_calls)):
            return False
        answered = [  # the reply's calls that ran are answered already (each runs before the next is asked)
            ToolMessage(answer, tool_call_id=tool_call_id(call, index), name=call.get("name") or "", status="error")
            for index, call in enumerate([*last.tool_calls, *last.invalid_tool_calls])
            if index >= done
        ]
        if answered:
            await graph.aupdate_state(config, {"messages": answered}, as_node="tools")
        return True

    async def _stored_messages(self, config: RunnableConfig) -> list[Any]:
        """The messages of the conversation's last checkpoint, without the writes of a step cut by a stop.

        A stop can land just after a tool step finished: its answer is then kept
        as a pending write that ``aget_state`` shows but a state update drops.
        Steps are answered from this view (a finished one from the run's record).
        """
        saved = await self.checkpointer.aget_tuple({"configurable": dict(config["configurable"])})
        return list(saved.checkpoint["channel_values"].get("messages", [])) if saved is not None else []

    async def _keep_cut_answer(self, graph: CompiledStateGraph[AgentState], shown: str) -> None:
        """Store the part of an answer the user saw before the model call failed (a server that died mid-answer).

        Without it the dock would show text that reopening the conversation loses; it is stored as the
        model's reply, marked as cut off, so the conversation stays well-formed and the next message works.
        """
        if not shown.strip():
            return
        message = AIMessage(content=f"{shown.rstrip()}\n\n{CUT_OFF_ANSWER}")
        await graph.aupdate_state(self._config(), {"messages": [message]}, as_node="model")

    async def _keep_stopped(self, graph: CompiledStateGraph[AgentState], tracker: RunTracker) -> None:
        """Keep what a stopped run did, marked stopped: the history stays well-formed and shows the stop.

        The steps of the reply under way are answered (a finished one with its
        result, as its node would have stored it; one under way or not started
        with why it did not finish), then the answer text the user saw is stored
        as the model's reply, ending in ``STOPPED_ANSWER`` (so the model knows)
        and marked ``STOPPED`` (so the dock and the export show the mark).
        """
        config = self._config()
        state = await graph.aget_state(config)
        messages = await self._stored_messages(config)
        last, done, _ = current_reply(messages)
        calls = [*last.tool_calls, *last.invalid_tool_calls] if last is not None else []
        if not (state.next or done < len(calls)) or not messages or pending_request(state) is not None:
            return  # the run had ended (or waits for approval): nothing was cut
        answers = [_stopped_step(call, index, tracker) for index, call in enumerate(calls) if index >= done]
        if answers:
            await graph.aupdate_state(config, {"messages": answers}, as_node="tools")
        shown = tracker.shown.rstrip()
        text = f"{shown}\n\n{STOPPED_ANSWER}" if shown.strip() else STOPPED_ANSWER
        stopped = AIMessage(content=text, additional_kwargs={KIND: STOPPED})
        await graph.aupdate_state(config, {"messages": [stopped]}, as_node="model")

    async def _stream(self, graph: Any, inputs: Any, config: ModelConfig) -> AsyncGenerator[Event, None]:
        splitter = ThinkTagSplitter()
        current_message: str | None = None
        stream = graph.astream(inputs, self._config(config.max_steps), stream_mode=["messages", "custom"])
        async with contextlib.aclosing(stream):  # closing it (after a stop) ends the graph's tasks
            async for mode, data in stream:
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


async def _preceded(first: list[Any], events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """``first`` (the run's notices), then ``events``."""
    for event in first:
        yield event
    async for event in events:
        yield event


async def _close_log(run_log: Any, closing: list[Event]) -> None:
    """Record a stopped run's cut model call and steps under way, then mark it cancelled."""
    for event in closing:
        await _quietly(run_log.record(event))
    await run_log.finish("cancelled", None)


def _stopped_step(call: Any, index: int, tracker: RunTracker) -> ToolMessage:
    """The stored answer to a call of the reply under way at Stop: its result if it finished, else why not."""
    call_id, name = tool_call_id(call, index), call.get("name") or ""
    done = tracker.finished.get(call_id)
    if done is not None:
        status = "success" if done.ok else "error"
        stored = done.artifact.to_dict() or None
        return ToolMessage(scrub(done.result), tool_call_id=call_id, name=name, status=status, artifact=stored)
    return ToolMessage(STOPPED_STEP, tool_call_id=call_id, name=name, status="error")


def run_origin(message: str | None, history: list[Any], config: ModelConfig) -> RunOrigin:
    """The run's question (the message sent, or on resuming the user's last one) and its model, without the key."""
    if message is None:
        message = next((text_of(m) for m in reversed(history) if is_user_turn(m)), "")
    return RunOrigin.of(message, config.model, config.base_url, config.provider)


def _brief_and_file(project: Any) -> tuple[str, str]:
    """The project's brief and its file (main thread)."""
    return project_brief(project), project.fileName()


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
