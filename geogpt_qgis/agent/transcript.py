"""A stored conversation as the user saw it: their messages, notes, answers and tool steps.

The dock rebuilds a resumed conversation from these entries, and exports them
as Markdown.  Messages the plugin added for the model only (a retry request)
are left out; the model's inline ``<think>`` reasoning is kept apart from the
answer, as it was while streaming.  Qt-free.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from geogpt_qgis.agent.memory import STATE_NOTE, STOPPED, is_user_turn, kind_of, text_of
from geogpt_qgis.core.artifacts import EMPTY, ToolArtifact
from geogpt_qgis.core.secrets_scrub import scrub
from geogpt_qgis.core.stopped_run import STOPPED_ANSWER
from geogpt_qgis.core.think import ThinkTagSplitter

EntryKind = Literal["user", "note", "reasoning", "answer", "tool", "chart", "sources", "stopped"]
STOPPED_MARK = "*(stopped by the user)*"  # after a stopped answer in an export


@dataclass(frozen=True)
class Entry:
    """One item of the transcript; tool entries carry the call, its result and its artifact."""

    kind: EntryKind
    text: str = ""
    name: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    ok: bool = True
    call_id: str = ""
    artifact: ToolArtifact = EMPTY


def transcript(messages: Sequence[BaseMessage]) -> list[Entry]:
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    entries: list[Entry] = []
    for message in messages:
        if isinstance(message, SystemMessage) and kind_of(message) == STATE_NOTE:
            entries.append(Entry("note", text_of(message)))
        elif isinstance(message, HumanMessage) and is_user_turn(message):
            entries.append(Entry("user", text_of(message)))
        elif isinstance(message, AIMessage) and kind_of(message) == STOPPED:
            # What the user saw of a stopped answer, then the mark (the model's end marker is not shown).
            text = text_of(message).strip().removesuffix(STOPPED_ANSWER).rstrip()
            entries += [Entry("answer", text)] if text else []
            entries.append(Entry("stopped"))
        elif isinstance(message, AIMessage):
            entries += _ai_entries(message, results)
    return entries


def _ai_entries(message: AIMessage, results: dict[str, ToolMessage]) -> list[Entry]:
    entries: list[Entry] = []
    reasoning = message.additional_kwargs.get("reasoning_content")
    parts: dict[str, str] = {"reasoning": reasoning if isinstance(reasoning, str) else "", "text": ""}
    splitter = ThinkTagSplitter()
    for kind, piece in [*splitter.feed(text_of(message)), *splitter.flush()]:
        parts["reasoning" if kind == "reasoning" else "text"] += piece
    if parts["reasoning"].strip():
        entries.append(Entry("reasoning", parts["reasoning"].strip()))
    if parts["text"].strip():
        entries.append(Entry("answer", parts["text"].strip()))
    for call in message.tool_calls:
        result = results.get(call["id"] or "")
        entries.append(
            Entry(
                "tool",
                text_of(result) if result is not None else "(no result: the run was stopped)",
                call["name"],
                dict(call["args"] or {}),
                result is not None and result.status != "error",
                call["id"] or "",
                # A conversation stored before tool results had artifacts reads as one without.
                ToolArtifact.from_dict(result.artifact if result is not None else None),
            )
        )
    return entries


def to_markdown(title: str, project: str, created: float, entries: Sequence[Entry]) -> str:
    """The whole conversation as a Markdown document, tool steps and results included."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(created))
    lines = [f"# {title}", "", f"*GeoGPT conversation, {when}" + (f", project `{project}`*" if project else "*"), ""]
    for entry in entries:
        if entry.kind == "user":
            lines += ["## You", "", entry.text, ""]
        elif entry.kind == "note":
            lines += [f"> *{entry.text}*", ""]
        elif entry.kind == "reasoning":
            quoted = "\n".join(f"> {line}" for line in entry.text.splitlines())
            lines += ["> **Reasoning**", ">", quoted, ""]
        elif entry.kind == "answer":
            lines += ["## GeoGPT", "", entry.text, ""]
        elif entry.kind == "chart":  # the PNG beside the conversation in the profile
            lines += [f"![chart](<{entry.text}>)", ""]
        elif entry.kind == "sources":
            lines += [entry.text, ""]
        elif entry.kind == "stopped":
            lines += [STOPPED_MARK, ""]
        else:
            mark = "✓" if entry.ok else "✗"
            arguments = json.dumps(entry.args, indent=2, ensure_ascii=False, default=str)
            lines += [
                f"**Tool `{entry.name}`** {mark}",
                "",
                "```json",
                arguments,
                "```",
                "",
                *_fenced(entry.text),
                "",
            ]
    # The export leaves the profile (mailed, attached to a ticket): no secret in it, whatever the history holds.
    return scrub("\n".join(lines).rstrip() + "\n")


def _fenced(text: str) -> list[str]:
    """A code fence long enough that backticks in ``text`` cannot close it."""
    fence = "```"
    while fence in text:
        fence += "`"
    return [fence, text, fence]
