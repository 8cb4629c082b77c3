"""What the model sees of the conversation: valid, and small enough for its context.

The dock keeps the whole history; the model gets the newest whole turns that
fit the token budget, so Ollama never has to cut the prompt (it would cut the
system prompt and tool schemas first).  Tool calls left without results (a run
stopped mid-tool, a crash) get a placeholder result so the history stays
valid for every provider.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

# Deliberately pessimistic: English prose is ~4 characters per token, JSON and
# code fewer; over-estimating keeps the prompt inside the window.
CHARS_PER_TOKEN = 3.2
MESSAGE_OVERHEAD_TOKENS = 6


def estimate_tokens(text: str) -> int:
    """A tokenizer-free token estimate (no downloads, no model files)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def message_tokens(message: BaseMessage) -> int:
    content = message.content if isinstance(message.content, str) else json.dumps(message.content)
    tokens = estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS
    if isinstance(message, AIMessage) and message.tool_calls:
        tokens += estimate_tokens(json.dumps([{"name": c["name"], "args": c["args"]} for c in message.tool_calls]))
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


def fit_history(messages: Sequence[BaseMessage], budget_tokens: int) -> tuple[list[BaseMessage], int]:
    """The newest whole turns that fit ``budget_tokens``, and how many messages were left out.

    A turn starts at a user message; the newest turn is always kept.
    """
    repaired = repair_tool_pairs(messages)
    starts = [i for i, m in enumerate(repaired) if isinstance(m, HumanMessage)] or [0]
    keep_from = starts[-1]
    used = sum(message_tokens(m) for m in repaired[keep_from:])
    for start in reversed(starts[:-1]):
        turn_tokens = sum(message_tokens(m) for m in repaired[start:keep_from])
        if used + turn_tokens > budget_tokens:
            break
        used += turn_tokens
        keep_from = start
    return list(repaired[keep_from:]), keep_from
