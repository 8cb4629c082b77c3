"""What the model sees of the conversation: valid, inside its context window, and a stable prefix.

History is not memory.  The store and the dock keep every message; each model
call gets the newest whole turns that fit the budget left after the system
prompt, the tool schemas and room for the answer.  The newest turn always goes
in: if it is too big by itself, its older tool results are shortened first,
then the message text.  So Ollama never has to cut the prompt (it would cut the
system prompt and tool schemas first, silently).

Local servers (llama.cpp, Ollama) keep the previous request's KV cache and
only process what follows the longest common prefix, so what is sent only ever
grows at the end: nothing here depends on anything but the stored history.
Messages the plugin adds (the project's state at the start, state-change
notes, a retry request) are marked in ``additional_kwargs`` and folded into the
user message they precede, since many chat templates accept neither a system
message mid-way nor two user messages in a row.  When the history outgrows the
budget, older turns are dropped in one large step (down to ``LOW_WATER`` of the
room), so the following calls keep the same start and the cache; the dropped
turns are summarised in a few lines (what was asked, which tools ran, what was
answered, and the project's state as last told) at the head of the first kept
user message, never in the system prompt.
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
QUESTION = "geogpt_question"  # additional_kwargs key of a user message with notes folded in: the text typed
STATE_NOTE = "state_note"  # what the user changed in the project between two messages (shown in the dock)
PROJECT_STATE = "project_state"  # the project's layers when a conversation starts or is taken up again
NOTE_KINDS = (STATE_NOTE, PROJECT_STATE)
RETRY_NOTE = "retry_note"
STOPPED = "stopped"  # an answer the user stopped: what they saw of it, ending in core.stopped_run.STOPPED_ANSWER
SUMMARY_SHARE = 0.3  # at most this share of the history budget goes to the summary
SUMMARY_MAX_TOKENS = 600
# After older turns are dropped, the kept ones fill at most this share of the room: the next drop
# (which changes the prompt's start, and so costs the server its cache) comes only after as much growth.
LOW_WATER = 0.5
SHORTENED = "[{n:,} characters of this result left out to fit the context; call the tool again if you need them]"


def kind_of(message: BaseMessage) -> str:
    return str(message.additional_kwargs.get(KIND, "")) if message.additional_kwargs else ""


def is_user_turn(message: BaseMessage) -> bool:
    """Whether ``message`` is something the user typed (a turn starts there)."""
    return isinstance(message, HumanMessage) and not kind_of(message)


def question_of(message: BaseMessage) -> str:
    """What the user typed in a user message, without the notes folded in before it (``fold_notes``)."""
    return str(message.additional_kwargs.get(QUESTION, "")) or text_of(message)


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


def is_note(message: BaseMessage) -> bool:
    """Whether ``message`` is a note the plugin wrote for the model (project state, state change)."""
    return isinstance(message, SystemMessage) and kind_of(message) in NOTE_KINDS


def fold_notes(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Put each note at the head of the user message it precedes."""
    folded: list[BaseMessage] = []
    notes: list[str] = []
    for message in messages:
        if is_note(message):
            notes.append(text_of(message))
            continue
        if notes and is_user_turn(message):
            prefix = "\n".join(f"[{note}]" for note in notes)
            typed = text_of(message)
            kept = {**message.additional_kwargs, QUESTION: typed}
            message = HumanMessage(content=f"{prefix}\n\n{typed}", id=message.id, additional_kwargs=kept)
            notes = []
        folded.append(message)
    return folded


@dataclass(frozen=True)
class Memory:
    """The messages to send after the system prompt, and the summary of what was left out."""

    messages: list[BaseMessage]  # the summary, if any, at the head of the first user message
    summary: str  # "" when nothing was left out
    omitted_messages: int
    tokens: int  # estimated, messages and summary


def split_turns(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Turns, each starting at a user message or at the notes just before it (anything before goes with the first)."""
    turns: list[list[BaseMessage]] = []
    previous: BaseMessage | None = None
    for message in messages:
        starts = is_note(message) and not (previous is not None and is_note(previous))
        starts = starts or (is_user_turn(message) and not (previous is not None and is_note(previous)))
        if starts or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
        previous = message
    return turns


def build_memory(history: Sequence[BaseMessage], budget: int) -> Memory:
    """What fits ``budget`` tokens: the newest turns whole, a summary of older ones, nothing over.

    Everything is a function of ``history`` and ``budget`` alone, and the kept
    part starts at the same turn from call to call until it outgrows the budget.
    """
    turns = split_turns(repair_tool_pairs(history))
    if not turns:
        return Memory([], "", 0, 0)
    folded = [fold_notes(turn) for turn in turns]
    costs = [sum(message_tokens(m) for m in turn) for turn in folded]
    reserve = min(SUMMARY_MAX_TOKENS, int(max(budget, 0) * SUMMARY_SHARE))
    cut = trim_point(costs, budget, reserve)
    older = [m for turn in folded[cut:-1] for m in turn]
    older_tokens = sum(costs[cut:-1])
    if cut == 0:
        current = fit_turn(folded[-1], budget - older_tokens)
        return Memory([*older, *current], "", 0, older_tokens + sum(message_tokens(m) for m in current))
    summary = summarise(turns[:cut], reserve)
    head = f"{summary}\n\n" if summary else ""
    head_tokens = estimate_tokens(head)
    current = fit_turn(folded[-1], budget - older_tokens - head_tokens)
    kept = _with_head([*older, *current], head)
    tokens = older_tokens + head_tokens + sum(message_tokens(m) for m in current)
    omitted = sum(len(turn) for turn in turns[:cut])
    return Memory(kept, summary, omitted, tokens)


def trim_point(costs: Sequence[int], budget: int, reserve: int) -> int:
    """The first turn to keep: 0 while everything fits; past that, cut in one large step (``LOW_WATER``).

    Replays the conversation's growth, oldest turn first: where a turn makes
    the total overflow, the turns before it are dropped down to ``LOW_WATER``
    of the room, however big that turn is at the time, so the answer stays the
    same from one call to the next until the kept turns outgrow the room again.
    The newest turn is always kept.
    """
    cut, older = 0, 0  # older: the cost of the kept turns before the one looked at
    room = max(budget - reserve, 0)
    for index, cost in enumerate(costs):
        if older + cost > (budget if cut == 0 else room):
            while cut < index and older > room * LOW_WATER:
                older -= costs[cut]
                cut += 1
            while cut < index and older + cost > room:  # a turn bigger than half the room
                older -= costs[cut]
                cut += 1
        older += cost
    return cut


def _with_head(messages: list[BaseMessage], head: str) -> list[BaseMessage]:
    """``messages`` with ``head`` at the start of the first user message (or as one, if there is none first)."""
    if not head:
        return messages
    if messages and is_user_turn(messages[0]):
        first = messages[0]
        return [HumanMessage(content=head + text_of(first), id=first.id), *messages[1:]]
    return [HumanMessage(content=head.rstrip()), *messages]


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
    """A few lines on turns left out, newest first within ``budget`` tokens; older ones only counted.

    The project's state as the model was last told it in those turns comes
    first (the first kept turns may rely on it), then one line per turn.
    """
    if not turns:
        return ""
    header = "Earlier in this conversation (not shown in full):"
    states = [text_of(m) for turn in turns for m in turn if kind_of(m) == PROJECT_STATE and is_note(m)]
    state = [f"- {_squeeze(states[-1], 600)}"] if states else []
    lines: list[str] = []
    spent = estimate_tokens(header) + 12 + sum(estimate_tokens(line) + 1 for line in state)
    for turn in reversed(turns):
        line = _turn_line(turn)
        cost = estimate_tokens(line) + 1
        if spent + cost > budget:
            break
        lines.append(line)
        spent += cost
    dropped = len(turns) - len(lines)
    if not lines and not state:
        return f"({len(turns)} earlier turns of this conversation are not shown to fit your context.)"
    tail = [f"- ({dropped} older turns not shown.)"] if dropped else []
    return "\n".join([header, *state, *tail, *reversed(lines)])


def _turn_line(turn: Sequence[BaseMessage]) -> str:
    asked = next((text_of(m) for m in turn if is_user_turn(m)), "")
    answers = [text_of(m) for m in turn if isinstance(m, AIMessage) and text_of(m).strip()]
    tools = sorted({c["name"] for m in turn if isinstance(m, AIMessage) for c in m.tool_calls})
    line = f"- User: {_squeeze(asked, 140)}"
    if tools:
        line += f" | tools: {', '.join(tools)}"
    if answers:
        line += f" | you answered: {_squeeze(answers[-1], 220)}"
    return line


def _squeeze(text: str, limit: int) -> str:
    return short(" ".join(text.split()), limit)
