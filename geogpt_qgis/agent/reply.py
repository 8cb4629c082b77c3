"""One model reply, streamed and watched: it ends early when the model loops, and says why it ended.

The model node streams the reply (``astream``) rather than waiting for it, so
that the text can be checked as it arrives: a small local model that repeats
one line forever is stopped as soon as ``core.repetition`` sees the loop, by
closing the stream (which closes the HTTP response, and the server stops
generating).  What was streamed so far is the reply, kept as the user saw it.
Every request also carries a bound on the reply's length (``max_tokens`` /
``num_predict``, ``providers.chat.create_chat_model``); a reply that reached it is
reported too, since its end is missing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, message_chunk_to_message

from geogpt_qgis.core.events import AnswerCut
from geogpt_qgis.core.repetition import RepetitionDetector

LOOP_MESSAGE = (
    "The model is repeating itself, so its answer was stopped here. "
    "A larger model is likely to do better; or ask again in other words."
)


def length_message(limit: int) -> str:
    return (
        f"The answer reached the length limit of {limit:,} tokens and was cut off. "
        "Ask for a shorter answer, or raise the limit in the settings."
    )


@dataclass(frozen=True)
class Reply:
    """The model's reply, and why it ended early (``None``: it ended by itself)."""

    message: AIMessage
    cut: AnswerCut | None = None


async def stream_reply(model: Any, prompt: list[BaseMessage], max_tokens: int) -> Reply:
    """Stream one reply of ``model`` to ``prompt``; stop reading as soon as its text (or reasoning) loops."""
    text_watch, reasoning_watch = RepetitionDetector(), RepetitionDetector()
    merged: AIMessageChunk | None = None
    looped = False
    async with contextlib.aclosing(model.astream(prompt)) as chunks:
        async for chunk in chunks:
            merged = chunk if merged is None else merged + chunk
            reasoning = chunk.additional_kwargs.get("reasoning_content")
            if text_watch.feed(content_text(chunk.content)) or (
                isinstance(reasoning, str) and reasoning_watch.feed(reasoning)
            ):
                looped = True
                break  # leaving the block closes the stream: the server stops generating
    if merged is None:
        return Reply(AIMessage(content=""))
    message = message_chunk_to_message(merged)
    if not isinstance(message, AIMessage):  # pragma: no cover - a chat model streams AI message chunks
        message = AIMessage(content=content_text(message.content))
    if looped:
        # A tool call still being written when the loop was seen is incomplete: it is not made.
        message = message.model_copy(update={"tool_calls": [], "invalid_tool_calls": []})
        return Reply(message, AnswerCut(LOOP_MESSAGE, "warning", reason="loop"))
    metadata = message.response_metadata or {}
    if "length" in (metadata.get("finish_reason"), metadata.get("done_reason")):
        return Reply(message, AnswerCut(length_message(max_tokens), "warning", reason="length", limit=max_tokens))
    return Reply(message)


def content_text(content: Any) -> str:
    """The text of a message's content (a string, or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) and part.get("type", "text") == "text" else ""
            for part in content
        )
    return ""
