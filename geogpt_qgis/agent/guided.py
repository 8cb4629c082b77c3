"""Guided tool calls: a chat model whose every reply is constrained to one offered call or an answer.

``GuidedChatModel`` wraps the provider's chat model (langchain-ollama or
langchain-openai, with the plugin's HTTP transport under it) and looks like
any chat model to the graph: ``bind_tools`` takes the tools, ``astream``
yields the answer's text as it is generated and, for a call, one tool call at
the end.  So a guided call goes down the native path: the bounds, the review
and approval, the per-reply and per-run caps, the run log and the dock's steps.

What it changes on the wire:
- the tools are described in the system text (``core.guided_schema.system_text``),
  the same for the whole conversation, instead of the request's ``tools``;
- earlier calls are written back as the JSON the model would have written, and
  tool results as user text (many small models' templates render only user and
  assistant turns);
- each request carries the reply schema (``reply_schema``): Ollama's ``format``;
  on the OpenAI protocol ``response_format`` as OpenAI, vLLM, LM Studio and
  llama.cpp's server read it (``json_schema``), or as llama-cpp-python's server
  reads it (``json_object`` with ``schema``) when a server refuses the first.
"""

from __future__ import annotations

import contextlib
import functools
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field

from geogpt_qgis.agent.call_arguments import UNPARSED_ARGUMENTS, refused
from geogpt_qgis.agent.config import PROVIDER_OLLAMA
from geogpt_qgis.agent.memory import is_user_turn, question_of
from geogpt_qgis.agent.reply import content_text
from geogpt_qgis.core.artifacts import ToolArtifact
from geogpt_qgis.core.call_bounds import CALL_CHARS, arguments_problem
from geogpt_qgis.core.guided_schema import (
    ANSWER_KEY,
    ARGUMENTS_KEY,
    TOOL_KEY,
    AnswerStream,
    ExampleAlgorithms,
    Vocabulary,
    WorkedExamples,
    evidence_lines,
    figures_in,
    parse_reply,
    quoted,
    reply_schema,
    system_text,
)

# How an OpenAI-compatible server is asked for a schema-constrained reply.
DIALECT_JSON_SCHEMA = "json_schema"  # OpenAI, vLLM, LM Studio, llama.cpp's llama-server, Ollama's /v1
DIALECT_JSON_OBJECT = "json_object"  # llama-cpp-python's server: {"type": "json_object", "schema": ...}
# The dialect each OpenAI-compatible server (base URL) was found to read, for this QGIS session.
_DIALECTS: dict[str, str] = {}

# Tools that help the model rather than read the data: their answer is in the context after one call, and a
# small model held to calls otherwise asks them again and again (SmolLM2-135M: find_examples four times).
HELP_TOOLS = frozenset({"find_examples", "describe_capabilities"})
# The tool whose result lists every tool, the ones a compact profile does not send included.
CAPABILITIES_TOOL = "describe_capabilities"
# The tool a small model re-runs on its own output (``_answered_before``), and the argument that names the output.
RERUN_TOOL = "run_algorithm"
OUTPUT_NAME = "output_name"

# The reply schema, built for a server that matches string patterns against the JSON text (raw_patterns) or not.
SchemaFor = Callable[..., dict[str, Any]]
# The names that exist now; given algorithms (and the parameters an example sets), their parameters too.
VocabularySource = Callable[[ExampleAlgorithms], Awaitable[Vocabulary]]
# Worked examples for a question, written as guided replies, using only the tools named: tools.examples.
ExamplesSource = Callable[[str, frozenset[str]], Awaitable[WorkedExamples]]
# The examples shown beside each question, by message: worked out once, so the same history is always sent as the
# same text (the server's cache of it stays valid) even after the project's names change.  Bounded.
_SHOWN_EXAMPLES: dict[str, WorkedExamples] = {}
_MAX_SHOWN = 512
EXAMPLES_HEAD = "Solved like this before (use the real names):"
# After each tool result: the question it is for (at most QUESTION_CHARS of it).
REMINDER = "The question was: {question} Answer it from the results, or call a tool."
QUESTION_CHARS = 300


def response_format(schema: dict[str, Any], dialect: str) -> dict[str, Any]:
    """``response_format`` for an OpenAI-compatible request, in ``dialect``."""
    if dialect == DIALECT_JSON_OBJECT:
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def refuses_dialect(exc: BaseException) -> bool:
    """Whether a server refused the request's ``response_format`` (it reads another dialect)."""
    text = str(getattr(exc, "body", "") or "") + " " + str(exc)
    status = getattr(exc, "status_code", None)
    return (status is None or 400 <= int(status) < 600) and "response_format" in text


class GuidedChatModel(BaseChatModel):
    """The provider's chat model, asked for replies constrained to one offered tool call or an answer."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: Any
    provider: str
    base_url: str
    vocabulary: Any = None  # VocabularySource | None: the names that exist, read before each call
    examples: Any = None  # ExamplesSource | None: worked examples put beside each question
    tools: list[dict[str, Any]] = Field(default_factory=list)
    # Tools the toolkit runs but the model is not sent (a compact profile): admitted once the conversation's
    # describe_capabilities result has listed them, as that result tells the model it may call them.
    reachable: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "geogpt-guided"

    def bind_tools(self, tools: Any, reachable: Any = (), **kwargs: Any) -> GuidedChatModel:
        """This model with ``tools`` (OpenAI function format, as the toolkit sends them) offered."""
        return self.model_copy(update={"tools": list(tools), "reachable": list(reachable)})

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        raise NotImplementedError("guided replies are streamed (astream)")

    async def _astream(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        examples = await self._examples_for(messages)
        asked_now = next((m.id for m in reversed(messages) if is_user_turn(m)), None)
        algorithms = examples[asked_now].algorithms if asked_now in examples else ()
        names = await self.vocabulary(algorithms) if self.vocabulary is not None else Vocabulary()
        listed = any(isinstance(m, ToolMessage) and m.name == CAPABILITIES_TOOL for m in messages)
        admitted = [*self.tools, *self.reachable] if listed else self.tools
        asked = _called_for_this_question(messages)
        admitted = [t for t in admitted if t["function"]["name"] not in HELP_TOOLS & asked]
        if kwargs.get("answer_only"):  # the step cap is reached: no call would run
            admitted = []
        # A small model (the compact profile: tools it is not sent) quotes the lines its answer rests on, and
        # writes only figures that were read.
        question, results = _read_for_this_question(messages)
        figures = figures_in([question, *results]) if self.reachable else None
        evidence = evidence_lines(results) if self.reachable else ()
        schema = functools.partial(
            reply_schema, admitted, names, not admitted or not _asks_anew(messages), figures, evidence
        )
        prompt = guided_messages(messages, self.tools, {key: shown.text for key, shown in examples.items()})
        reading = AnswerStream()
        async for chunk in self._streamed(prompt, schema, reading):
            yield chunk
        if reading.is_answer:
            async for chunk in _quotes_of(reading, evidence):
                yield chunk
            return
        call = _call_chunk(reading.text)
        if call is not None and _answered_before(call, messages):
            # The same call was made and answered for this question: its result is in front of the model, and a
            # small model held to calls repeats one until the step cap.  Its answer is asked for instead.
            reading = AnswerStream()
            answer_schema = functools.partial(reply_schema, [], names, figures=figures, evidence=evidence)
            async for chunk in self._streamed(prompt, answer_schema, reading):
                yield chunk
            if reading.is_answer:
                async for chunk in _quotes_of(reading, evidence):
                    yield chunk
                return
            call = _call_chunk(reading.text)
        if call is not None:
            yield ChatGenerationChunk(message=call)

    async def _streamed(
        self, prompt: list[BaseMessage], schema: SchemaFor, reading: AnswerStream
    ) -> AsyncIterator[ChatGenerationChunk]:
        """One constrained reply: its answer text as it becomes readable, and its usage; ``reading`` keeps it."""
        async for chunk in self._constrained(prompt, schema):
            shown = reading.feed(content_text(chunk.content)) if chunk.content else ""
            extra: dict[str, Any] = {}
            if chunk.usage_metadata:
                extra["usage_metadata"] = chunk.usage_metadata
            if chunk.response_metadata:
                extra["response_metadata"] = chunk.response_metadata
            if shown or extra:
                yield ChatGenerationChunk(message=AIMessageChunk(content=shown, **extra))

    async def _examples_for(self, messages: list[BaseMessage]) -> dict[str, WorkedExamples]:
        """The worked examples beside each of the user's questions, by message id (found once per message)."""
        if self.examples is None:
            return {}
        runnable = frozenset(t["function"]["name"] for t in [*self.tools, *self.reachable])
        shown: dict[str, WorkedExamples] = {}
        for message in messages:
            if not is_user_turn(message) or not message.id:
                continue
            if message.id not in _SHOWN_EXAMPLES:
                if len(_SHOWN_EXAMPLES) >= _MAX_SHOWN:
                    _SHOWN_EXAMPLES.pop(next(iter(_SHOWN_EXAMPLES)))
                _SHOWN_EXAMPLES[message.id] = await self.examples(question_of(message), runnable)
            shown[message.id] = _SHOWN_EXAMPLES[message.id]
        return shown

    async def _constrained(self, prompt: list[BaseMessage], schema: SchemaFor) -> AsyncIterator[AIMessageChunk]:
        """The inner model's reply chunks, under ``schema``; a refused dialect is tried once in the other.

        The schema as this dialect's server reads patterns: llama-cpp-python's (``json_object``) matches them
        against the JSON text, so an expression may be held there to one that cannot run on past its end.
        """
        no_callbacks: Any = {"callbacks": []}  # the inner run's raw JSON must not reach the dock's stream
        if self.provider == PROVIDER_OLLAMA:
            async for chunk in self.inner.astream(prompt, config=no_callbacks, format=schema()):
                yield chunk
            return
        dialect = _DIALECTS.get(self.base_url, DIALECT_JSON_SCHEMA)
        for attempt in (1, 2):
            body = {
                **(getattr(self.inner, "extra_body", None) or {}),
                "response_format": response_format(schema(raw_patterns=dialect == DIALECT_JSON_OBJECT), dialect),
            }
            stream = self.inner.astream(prompt, config=no_callbacks, extra_body=body)
            try:
                first = await anext(stream)
            except StopAsyncIteration:
                return
            except Exception as exc:
                with contextlib.suppress(Exception):
                    await stream.aclose()
                if attempt == 2 or not refuses_dialect(exc):
                    raise
                dialect = DIALECT_JSON_OBJECT if dialect == DIALECT_JSON_SCHEMA else DIALECT_JSON_SCHEMA
                continue
            _DIALECTS[self.base_url] = dialect
            yield first
            async with contextlib.aclosing(stream):
                async for chunk in stream:
                    yield chunk
            return


def _called_for_this_question(messages: list[BaseMessage]) -> set[str]:
    """The tools called since the user's last message."""
    called: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            called.add(message.name or "")
        elif is_user_turn(message):  # the graph's own notion of where a question starts (not a retry note)
            break
    return called


def _read_for_this_question(messages: list[BaseMessage]) -> tuple[str, list[str]]:
    """The user's last message, and the results of the calls made for it that read data (oldest first).

    Left out: failed calls, and the help tools' results (what the tools can do is no figure of the data).
    """
    results: list[str] = []
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.status != "error" and message.name not in HELP_TOOLS:
            results.append(content_text(message.content))
        elif is_user_turn(message):
            return content_text(message.content), results[::-1]
    return "", results[::-1]


async def _quotes_of(reading: AnswerStream, offered: tuple[str, ...]) -> AsyncIterator[ChatGenerationChunk]:
    """The lines a whole answer quoted (``core.guided_schema.quoted``), shown under it.

    Only lines that were offered: a server that ignores the schema could "quote" a line nothing read.
    """
    text = quoted(tuple(line for line in parse_reply(reading.text).evidence if line in offered))
    if text:
        yield ChatGenerationChunk(message=AIMessageChunk(content=text))


def _answered_before(call: AIMessageChunk, messages: list[BaseMessage]) -> bool:
    """Whether ``call`` repeats a call made since the user's last message whose result was not an error.

    An algorithm run again on the layer it just made, with the same settings
    (under another output name), repeats it too: SmolLM2-135M counted the
    schools in districts, then in the layer of counts, then in that one's
    counts, one new layer each time, until the step cap.
    """
    wanted = call.tool_call_chunks[0] if call.tool_call_chunks else None
    if wanted is None:
        return False
    try:
        arguments = json.loads(wanted.get("args") or "{}")
    except json.JSONDecodeError:
        return False
    succeeded: set[str] = set()
    made: set[str] = set()  # the layers the calls that succeeded for this question added
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.status != "error":
            succeeded.add(message.tool_call_id)
            made.update(ToolArtifact.from_dict(message.artifact).added_names)
        elif isinstance(message, AIMessage):
            for earlier in message.tool_calls:
                if earlier.get("id") not in succeeded or earlier["name"] != wanted.get("name"):
                    continue
                if earlier["args"] == arguments:
                    return True
                if earlier["name"] == RERUN_TOOL and _rerun_on_output(arguments, earlier["args"], made):
                    return True
        elif is_user_turn(message):
            break
    return False


def _rerun_on_output(new: Any, old: Any, made: set[str]) -> bool:
    """Whether ``new`` is ``old`` again, but for its output's name and a layer ``made`` where ``old`` had another."""
    if isinstance(new, dict) and isinstance(old, dict):
        keys = (set(new) | set(old)) - {OUTPUT_NAME}
        return all(_rerun_on_output(new.get(key), old.get(key), made) for key in keys)
    if isinstance(new, list) and isinstance(old, list):
        return len(new) == len(old) and all(_rerun_on_output(a, b, made) for a, b in zip(new, old, strict=True))
    return new == old or (isinstance(new, str) and isinstance(old, str) and new in made)


def _asks_anew(messages: list[BaseMessage]) -> bool:
    """Whether the model is to reply to the user's message itself (nothing has been looked at for it yet)."""
    return bool(messages) and isinstance(messages[-1], HumanMessage)


def _call_chunk(text: str) -> AIMessageChunk | None:
    """The tool call a whole reply makes, bounded as native calls are (``core.call_bounds``)."""
    call_id = f"call_{uuid.uuid4().hex[:16]}"
    if len(text) > CALL_CHARS:
        arguments: Any = refused(f"the reply is {len(text):,} characters; at most {CALL_CHARS:,} are read")
        return _chunk(parse_reply(text[:500]).tool or "unknown", arguments, call_id)
    reply = parse_reply(text)
    if reply.problem is not None:  # answered as a call whose arguments are not JSON, on every protocol
        return _chunk(reply.tool or "unknown", {UNPARSED_ARGUMENTS: text.strip()}, call_id)
    if reply.tool is None:
        return AIMessageChunk(content=reply.text) if reply.text else None
    arguments = reply.arguments
    if isinstance(arguments, dict):
        problem = arguments_problem(arguments)
        arguments = refused(problem) if problem else arguments
    return _chunk(reply.tool, arguments, call_id)


def _chunk(name: str, arguments: Any, call_id: str) -> AIMessageChunk:
    args = json.dumps(arguments, ensure_ascii=False)
    return AIMessageChunk(content="", tool_call_chunks=[tool_call_chunk(name=name, args=args, id=call_id, index=0)])


def guided_messages(
    messages: list[BaseMessage], tool_schemas: list[dict[str, Any]], examples: dict[str, str] | None = None
) -> list[BaseMessage]:
    """The conversation as a guided request sends it: the tools in the system text, calls and results as text.

    ``examples`` (by message id) are worked examples written after the
    question they were found for.

    Consecutive user texts (a result and the next question) are joined, so the
    turns alternate as the strictest chat templates require.  The same history
    always gives the same messages (the server's cache of them stays valid).
    """
    out: list[BaseMessage] = []
    question = ""
    for message in messages:
        if isinstance(message, SystemMessage) and not out:
            out.append(SystemMessage(content=system_text(content_text(message.content), tool_schemas)))
        elif isinstance(message, AIMessage):
            text = _as_written(message)
            if text:
                out.append(AIMessage(content=text))
        elif isinstance(message, ToolMessage):
            result = f"Result of {message.name or 'the tool'}:\n{content_text(message.content)}"
            # The question again, last: a small model answers what it read last.
            _add_user(out, f"{result}\n\n{REMINDER.format(question=question)}" if question else result)
        else:
            if is_user_turn(message):
                question = " ".join(question_of(message).split())[:QUESTION_CHARS]
            text = content_text(message.content)
            found = (examples or {}).get(message.id or "") if is_user_turn(message) else ""
            _add_user(out, f"{text}\n\n{EXAMPLES_HEAD}\n{found}" if found else text)
    return out


def _as_written(message: AIMessage) -> str:
    """An earlier reply as the JSON a guided reply would have been."""
    calls = [{TOOL_KEY: call["name"], ARGUMENTS_KEY: call.get("args") or {}} for call in message.tool_calls]
    written = [json.dumps(call, ensure_ascii=False) for call in calls]
    written += [str(bad.get("args") or "") for bad in message.invalid_tool_calls]
    if written:
        return "\n".join(written)
    text = content_text(message.content)
    return json.dumps({ANSWER_KEY: text}, ensure_ascii=False) if text else ""


def _add_user(out: list[BaseMessage], text: str) -> None:
    if out and isinstance(out[-1], HumanMessage):
        out[-1] = HumanMessage(content=f"{content_text(out[-1].content)}\n\n{text}")
    else:
        out.append(HumanMessage(content=text))


def guided_chat_model(
    native: BaseChatModel,
    config: Any,
    vocabulary: VocabularySource | None,
    examples: ExamplesSource | None = None,
) -> GuidedChatModel:
    """``native`` (the provider's chat model for ``config``) asked for guided replies instead of native calls."""
    return GuidedChatModel(
        inner=native, provider=config.provider, base_url=config.base_url, vocabulary=vocabulary, examples=examples
    )
