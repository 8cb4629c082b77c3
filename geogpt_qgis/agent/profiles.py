"""Tool profiles: which tools a conversation is offered, and why small models get fewer.

A small local model (a few hundred million to a few billion weights, or a
short context window) is lost among twenty tool schemas: it calls none, or the
wrong one, and the schemas alone fill a third of a 4,096-token window.  The
compact profile offers it at most ``MAX_COMPACT_TOOLS`` tools, those that
answer the basic questions (describe a layer, read or select features, run one
algorithm), under a shorter system prompt; the whole of it stays within
``COMPACT_BUDGET_TOKENS`` Tekken tokens (tests/qgis/test_tool_profiles.py
measures it as ``make bench`` does).  Nothing becomes unreachable: the toolkit
still knows every tool and runs a call to one it did not send (with the same
checks and approvals), ``describe_capabilities`` lists them all with their
arguments, marking those not offered, and ``find_algorithm`` reaches every
processing algorithm.

The profile is fixed for a conversation: local servers reuse their cache of
everything up to the first byte that differs, so the system text and the tool
block must not change mid-conversation even when the model or the setting
does.  Each user message is marked with its conversation's profile
(``PROFILE_MARK`` in ``additional_kwargs``, stored with the history, never sent
to the server), and ``fixed_profile`` reads it back, also after a restart.

Qt-free and network-free: the session gathers what the server says
(``providers.discovery.ModelInfo``) and passes the figures in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.agent.config import PROFILE_AUTO, PROFILE_COMPACT, PROFILE_FULL, ModelConfig
from geogpt_qgis.agent.prompts import COMPACT_SYSTEM_PROMPT, SYSTEM_PROMPT, build_system_prompt
from geogpt_qgis.core.events import Notice
from geogpt_qgis.tools.help.family import offered_tools

# The compact profile: the tools for the basic tasks (``make eval-real``: inspection and one algorithm), in the
# order they are sent.  describe_layer, read_features, select_features, find_algorithm and run_algorithm are what
# those tasks call; describe_capabilities reaches the rest; find_examples (57 tokens) shows a worked sequence of
# calls for a question, which a small model copies better than it plans; set_layer (show, hide, zoom to, rename)
# is the commonest request about the map itself that no algorithm answers.
COMPACT_TOOLS = (
    "describe_layer",
    "read_features",
    "select_features",
    "set_layer",
    "find_algorithm",
    "run_algorithm",
    "find_examples",
    "describe_capabilities",
)
MAX_COMPACT_TOOLS = 8
# The compact profile's system prompt and tool schemas together, in Tekken tokens (the project's brief is apart).
COMPACT_BUDGET_TOKENS = 1200

# Auto picks the compact profile for a model with fewer weights than this (the server says how many)...
SMALL_MODEL_PARAMETERS = 4_000_000_000
# ...or one trained for a context shorter than this: the full profile's ~2,100 tokens would be half of it.
SMALL_CONTEXT_TOKENS = 8192

# additional_kwargs key on each user message: the profile its conversation runs with.
PROFILE_MARK = "geogpt_tool_profile"
PROFILES = (PROFILE_FULL, PROFILE_COMPACT)


@dataclass(frozen=True)
class ProfileChoice:
    """The profile a setting and a model call for, and why (for the notice and the run log)."""

    profile: str
    reason: str


def choose_profile(setting: str, parameters: int | None = None, context: int | None = None) -> ProfileChoice:
    """The profile for a new conversation: the setting's, or (auto) from the model's size and context length.

    ``parameters`` and ``context`` are what the server says of the model
    (``None``: it does not say).  Unknown size and context: full, the profile
    every model that calls tools well was measured with.
    """
    if setting == PROFILE_COMPACT:
        return ProfileChoice(PROFILE_COMPACT, "the Tool profile setting is Compact")
    if setting != PROFILE_AUTO:
        return ProfileChoice(PROFILE_FULL, "the Tool profile setting is Full")
    if parameters is not None and parameters < SMALL_MODEL_PARAMETERS:
        return ProfileChoice(PROFILE_COMPACT, f"the model is small ({_weights(parameters)} parameters)")
    if context is not None and context < SMALL_CONTEXT_TOKENS:
        return ProfileChoice(PROFILE_COMPACT, f"the model's context is short ({context:,} tokens)")
    if parameters is None and context is None:
        return ProfileChoice(PROFILE_FULL, "the server does not say the model's size")
    return ProfileChoice(PROFILE_FULL, "the model is large enough for every tool")


def _weights(count: int) -> str:
    """``135 M``, ``3.2 B``."""
    if count >= 10**9:
        return f"{count / 10**9:.1f} B".replace(".0 ", " ")
    return f"{round(count / 10**6)} M"


def fixed_profile(history: Sequence[Any]) -> str | None:
    """The profile a conversation is fixed to, or ``None`` while no model has answered in it yet.

    The model's first reply fixes it: the prompt it answered is the one the
    server caches.  It is the mark of the last marked user message before that
    reply (earlier runs that failed before any reply may have chosen another).
    A conversation that was answered before profiles existed, with no mark, ran
    with every tool: full.
    """
    mark: str | None = None
    for message in history:
        if getattr(message, "type", "") == "ai":
            return mark or PROFILE_FULL
        value = (getattr(message, "additional_kwargs", None) or {}).get(PROFILE_MARK)
        if getattr(message, "type", "") == "human" and value in PROFILES:
            mark = value
    return None


def mark(message: Any, profile: str) -> None:
    """Mark a user message with its conversation's profile (kept in the store, never sent to the server)."""
    message.additional_kwargs[PROFILE_MARK] = profile


def offered_names(profile: str, names: Sequence[str]) -> tuple[str, ...] | None:
    """The tools sent to the model in ``profile``, in toolkit order (``None``: all of them)."""
    if profile != PROFILE_COMPACT:
        return None
    return tuple(name for name in names if name in COMPACT_TOOLS)


def profile_hints(profile: str, families: Sequence[Any], offered: Sequence[str] | None) -> tuple[str, ...]:
    """The families' prompt hints for ``profile``: compact keeps only those of families it offers a tool of."""
    if offered is None:
        return tuple(f.prompt_hint for f in families if f.prompt_hint)
    return tuple(f.prompt_hint for f in families if f.prompt_hint and any(t.__name__ in offered for t in f.tools()))


def system_prompt(profile: str, families: Sequence[Any], offered: Sequence[str] | None) -> str:
    """The system prompt of a conversation with ``profile`` (the same text for all its calls)."""
    base = COMPACT_SYSTEM_PROMPT if profile == PROFILE_COMPACT else SYSTEM_PROMPT
    return build_system_prompt(profile_hints(profile, families, offered), base)


def new_conversation_notice(choice: ProfileChoice, offered: int) -> str:
    """Said once, when a conversation starts with the compact profile."""
    return (
        f"Compact tool profile for this conversation ({choice.reason}): the model is offered {offered} tools; "
        "describe_capabilities names the others, which it can still call."
    )


def kept_profile_notice(fixed: str, choice: ProfileChoice) -> str:
    """Said when the setting or the model now calls for another profile than the conversation's."""
    return (
        f"This conversation keeps the {fixed} tool profile it started with, so its prompt stays the same; "
        f"a new conversation will use the {choice.profile} profile ({choice.reason})."
    )


# What the server says of a model: (parameter count, context length), either ``None`` when it does not say.
ModelSize = tuple[int | None, int | None]


class ProfileKeeper:
    """The profile of each conversation of a session, chosen at its start and kept for its life.

    ``begin`` runs before each run (the session's ``_logged``): it reads the
    conversation's fixed profile from its history (or chooses one for a new
    conversation), marks the run's user message with it, tells the tools which
    are offered (``tools.help.family.offered_tools``), and returns the notices
    for the dock and the run log.  ``profile`` is what the graph is built with.
    """

    def __init__(self, tool_names: Callable[[], Sequence[str]]) -> None:
        self._tool_names = tool_names  # every tool the session knows (to count the compact profile's)
        self._profiles: dict[str, str] = {}

    def profile(self, thread_id: str) -> str:
        return self._profiles.get(thread_id, PROFILE_FULL)

    async def begin(
        self,
        thread_id: str,
        history: Sequence[Any],
        inputs: Any,
        config: ModelConfig,
        model_size: Callable[[ModelConfig], Awaitable[ModelSize]],
    ) -> list[Notice]:
        """Fix the run's profile; ``inputs`` is a new message's graph input (a dict) or a resume command."""
        fixed = fixed_profile(history)
        new_message = isinstance(inputs, dict)
        choice = None
        if fixed is None or new_message:
            size = await model_size(config) if config.tool_profile == PROFILE_AUTO else (None, None)
            choice = choose_profile(config.tool_profile, *size)
        profile = fixed or (choice.profile if choice is not None else PROFILE_FULL)
        self._profiles[thread_id] = profile
        offered_tools.set(frozenset(COMPACT_TOOLS) if profile == PROFILE_COMPACT else None)
        if not new_message or choice is None:
            return []
        for message in reversed(inputs.get("messages", ())):
            if getattr(message, "type", "") == "human":
                mark(message, profile)
                break
        if fixed is None and profile == PROFILE_COMPACT:
            offered = len(set(self._tool_names()) & set(COMPACT_TOOLS))
            return [Notice(new_conversation_notice(choice, offered))]
        if fixed is not None and choice.profile != fixed:
            return [Notice(kept_profile_notice(fixed, choice))]
        return []
