"""What the model sees of the conversation: valid, and always inside its context window.

History is not memory.  The store and the dock keep every message; each model
call gets the newest whole turns that fit the budget left after the system
prompt, the tool schemas and room for the answer.  Turns that do not fit are
summarised in a few lines (what was asked, what was answered, which tools
ran) for the system prompt, newest first, and the oldest are dropped outright
when even their summary does not fit.  The newest turn always goes in: if it
is too big by itself, its older tool results are shortened first, then the
message text.  So Ollama never has to cut the prompt (it would cut the system
prompt and tool schemas first, silently).

Messages the plugin adds (state-change notes, a retry request) are marked in
``additional_kwargs``; notes are folded into the user message they precede,
since not every local model's chat template accepts a system message mid-way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from geogpt_qgis.core.text import short
from geogpt_qgis.core.tokens import estimate_tokens

MESSAGE_OVERHEAD_TOKENS = 8  # role markers and separators of a chat template
KIND = "geogpt_kind"  # additional_kwargs key marking what the plugin added
STATE_NOTE = "state_note"
RETRY_NOTE = "retry_note"
SUMMARY_SHARE = 0.3  # at most this share of the history budget goes to the summary
SUMMARY_MAX_TOKENS = 600
SHORTENED = "[{n:,} characters of this result left out to fit the context; call the tool again if you need them]"


def kind_of(message: BaseMessage) -> str:
    return str(message.additional_kwargs.get(KIND, "")) if message.additional_kwargs else ""


def is_user_turn(message: BaseMessage) -> bool:
    """Whether ``message`` is something the user typed (a turn starts there)."""
    return isinstance(message, HumanMessage) and not kind_of(message)


def text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def message_tokens(message: BaseMessage) -> int:
    tokens = estimate_tokens(text_of(message)) + MESSAGE_OVERHEAD_TOKENS
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{"name": c["name"], "arguments": c["args"]} for c in message.tool_calls]
        tokens += estimate_tokens(json.dumps(calls, ensure_ascii=False))
    return tokens


def repair_tool_pairs(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Give every tool call a result and drop results whose call is gone."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    called: set[str] = set()
    repaired: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id not in called:
            continue
        repaired.append(message)
        if isinstance(message, AIMessage):
            ids = [c["id"] for c in message.tool_calls] + [c["id"] for c in message.invalid_tool_calls]
            for call_id in ids:
                if call_id is None:
                    continue
                called.add(call_id)
                if call_id not in answered:
                    repaired.append(
                        ToolMessage(content="Not run: the user stopped the run.", tool_call_id=call_id, status="error")
                    )
    return repaired


def fold_notes(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Put each state-change note at the head of the user message it precedes."""
    folded: list[BaseMessage] = []
    notes: list[str] = []
    for message in messages:
        if isinstance(message, SystemMessage) and kind_of(message) == STATE_NOTE:
            notes.append(text_of(message))
            continue
        if notes and is_user_turn(message):
            prefix = "\n".join(f"[{note}]" for note in notes)
            message = HumanMessage(content=f"{prefix}\n\n{text_of(message)}", id=message.id)
            notes = []
        folded.append(message)
    return folded


@dataclass(frozen=True)
class Memory:
    """The messages to send after the system prompt, and the summary of what was left out."""

    messages: list[BaseMessage]
    summary: str  # for the system prompt; "" when nothing was left out
    omitted_messages: int
    tokens: int  # estimated, messages and summary


def split_turns(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Turns, each starting at a user message (anything before the first goes with it)."""
    turns: list[list[BaseMessage]] = []
    for message in messages:
        if is_user_turn(message) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def build_memory(history: Sequence[BaseMessage], budget: int) -> Memory:
    """What fits ``budget`` tokens: the newest turns whole, a summary of older ones, nothing over."""
    turns = split_turns(fold_notes(repair_tool_pairs(history)))
    if not turns:
        return Memory([], "", 0, 0)
    current = fit_turn(turns[-1], budget)
    used = sum(message_tokens(m) for m in current)
    older = turns[:-1]
    costs = [sum(message_tokens(m) for m in turn) for turn in older]
    room = budget - used
    if sum(costs) <= room:
        kept = [m for turn in older for m in turn]
        return Memory([*kept, *current], "", 0, used + sum(costs))
    reserve = min(SUMMARY_MAX_TOKENS, int(max(room, 0) * SUMMARY_SHARE))
    keep_from = len(older)
    spent = 0
    while keep_from > 0 and spent + costs[keep_from - 1] <= room - reserve:
        keep_from -= 1
        spent += costs[keep_from]
    summary = summarise(older[:keep_from], room - spent)
    kept = [m for turn in older[keep_from:] for m in turn]
    omitted = sum(len(turn) for turn in older[:keep_from])
    tokens = used + spent + (estimate_tokens(summary) if summary else 0)
    return Memory([*kept, *current], summary, omitted, tokens)


def fit_turn(turn: list[BaseMessage], budget: int) -> list[BaseMessage]:
    """The newest turn within ``budget``: older tool results shortened first, then the longest texts cut."""
    fitted = list(turn)
    total = sum(message_tokens(m) for m in fitted)
    for index, message in enumerate(fitted[:-1]):
        if total <= budget:
            return fitted
        if isinstance(message, ToolMessage) and len(text_of(message)) > 200:
            short = message.model_copy(update={"content": SHORTENED.format(n=len(text_of(message)))})
            total += message_tokens(short) - message_tokens(message)
            fitted[index] = short
    while total > budget:
        index = max(range(len(fitted)), key=lambda i: message_tokens(fitted[i]))
        message = fitted[index]
        text = text_of(message)
        tokens = message_tokens(message)
        target = tokens - (total - budget) - MESSAGE_OVERHEAD_TOKENS - 24  # 24: the cut marker, and a margin
        keep = max(0, int(len(text) * target / tokens))
        if keep >= len(text) or len(text) < 40:
            break  # nothing left to cut: the budget is smaller than a bare message
        marker = f"\n[… {len(text) - keep:,} characters cut to fit the context …]\n"
        cut = text[: keep // 2] + marker + text[len(text) - keep // 2 :]
        shortened = message.model_copy(update={"content": cut})
        total += message_tokens(shortened) - message_tokens(message)
        fitted[index] = shortened
    return fitted


def summarise(turns: Sequence[Sequence[BaseMessage]], budget: int) -> str:
    """A few lines on turns left out, newest first within ``budget`` tokens; older ones only counted."""
    if not turns:
        return ""
    header = "Earlier in this conversation (not shown in full):"
    lines: list[str] = []
    spent = estimate_tokens(header) + 12
    for turn in reversed(turns):
        line = _turn_line(turn)
        cost = estimate_tokens(line) + 1
        if spent + cost > budget:
            break
        lines.append(line)
        spent += cost
    dropped = len(turns) - len(lines)
    if not lines:
        return f"({len(turns)} earlier turns of this conversation are not shown to fit your context.)"
    tail = [f"- ({dropped} older turns not shown.)"] if dropped else []
    return "\n".join([header, *tail, *reversed(lines)])


def _turn_line(turn: Sequence[BaseMessage]) -> str:
    asked = next((text_of(m) for m in turn if isinstance(m, HumanMessage)), "")
    answers = [text_of(m) for m in turn if isinstance(m, AIMessage) and text_of(m).strip()]
    tools = sorted({c["name"] for m in turn if isinstance(m, AIMessage) for c in m.tool_calls})
    line = f"- User: {_squeeze(_without_notes(asked), 140)}"
    if tools:
        line += f" | tools: {', '.join(tools)}"
    if answers:
        line += f" | you answered: {_squeeze(answers[-1], 220)}"
    return line


def _without_notes(text: str) -> str:
    """The user's words without the folded-in state notes."""
    while text.startswith("[") and "]\n" in text:
        text = text.split("]\n", 1)[1].lstrip("\n")
    return text


def _squeeze(text: str, limit: int) -> str:
    return short(" ".join(text.split()), limit)
