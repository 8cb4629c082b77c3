"""Choosing and keeping a conversation's tool profile (``agent.profiles``), without QGIS or a server."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.profiles import (
    COMPACT_TOOLS,
    PROFILE_MARK,
    SMALL_CONTEXT_TOKENS,
    SMALL_MODEL_PARAMETERS,
    ProfileKeeper,
    choose_profile,
    fixed_profile,
    offered_names,
)
from geogpt_qgis.agent.providers.discovery import parameter_size
from geogpt_qgis.core.events import Notice
from geogpt_qgis.tools.help.family import offered_tools


@pytest.mark.parametrize(
    ("setting", "parameters", "context", "profile"),
    [
        ("auto", 135_000_000, 8192, "compact"),  # SmolLM2-135M
        ("auto", 3_210_000_000, 131_072, "compact"),  # Llama 3.2 3B
        ("auto", SMALL_MODEL_PARAMETERS, 131_072, "full"),  # the threshold itself is not small
        ("auto", 8_190_000_000, 40_960, "full"),  # Qwen3 8B
        ("auto", 7_000_000_000, 4096, "compact"),  # an old 7B with a 4k window
        ("auto", None, SMALL_CONTEXT_TOKENS, "full"),
        ("auto", None, None, "full"),  # llama-cpp-python, vLLM, OpenAI: nothing said
        ("compact", 70_000_000_000, None, "compact"),
        ("full", 135_000_000, 2048, "full"),
    ],
)
def test_the_profile_follows_the_setting_else_the_models_size_and_context(setting, parameters, context, profile):
    choice = choose_profile(setting, parameters, context)
    assert choice.profile == profile and choice.reason


def test_the_reason_names_the_size_in_words():
    assert choose_profile("auto", 135_000_000, None).reason == "the model is small (135 M parameters)"
    assert choose_profile("auto", 3_200_000_000, None).reason == "the model is small (3.2 B parameters)"
    assert "4,096 tokens" in choose_profile("auto", None, 4096).reason


@pytest.mark.parametrize(
    ("text", "count"),
    [("135M", 135_000_000), ("3.2B", 3_200_000_000), ("8B", 8_000_000_000), ("1.5b", 1_500_000_000), ("", None)],
)
def test_ollamas_parameter_size_is_read_as_a_count(text, count):
    assert parameter_size(text) == count


def _user(text: str, profile: str | None = None) -> HumanMessage:
    return HumanMessage(text, additional_kwargs={PROFILE_MARK: profile} if profile else {})


def test_the_first_reply_fixes_the_profile_of_the_last_marked_message_before_it():
    note = SystemMessage("[project]")
    assert fixed_profile([]) is None
    assert fixed_profile([note, _user("hi", "compact")]) is None  # no model answered yet: still open
    # A first run that failed before any reply chose full; the next one chose compact and was answered.
    history = [note, _user("hi", "full"), _user("again", "compact"), AIMessage("Hello."), _user("more", "compact")]
    assert fixed_profile(history) == "compact"
    assert fixed_profile([note, _user("hi"), AIMessage("Hello.")]) == "full"  # answered before profiles existed
    assert fixed_profile([_user("hi", "bogus"), AIMessage("Hello.")]) == "full"  # a mark that is no profile


def test_the_compact_profile_offers_its_tools_in_toolkit_order_and_full_offers_all():
    names = ["run_sql", "describe_layer", "make_chart", "find_algorithm", "run_algorithm"]
    assert offered_names("compact", names) == ("describe_layer", "find_algorithm", "run_algorithm")
    assert offered_names("full", names) is None
    assert len(COMPACT_TOOLS) == 8


def _begin(keeper: ProfileKeeper, history: list, config: ModelConfig, size=(135_000_000, 8192)):
    asked: list[ModelConfig] = []

    async def model_size(cfg: ModelConfig):
        asked.append(cfg)
        return size

    async def go():
        inputs = {"messages": [SystemMessage("[project]"), HumanMessage("hi")]}
        notices = await keeper.begin("t1", history, inputs, config, model_size)
        return inputs, notices, offered_tools.get()

    inputs, notices, offered = asyncio.run(go())
    return inputs["messages"][-1], notices, offered, asked


def test_a_new_conversation_is_marked_and_told_when_compact():
    keeper = ProfileKeeper(lambda: ["describe_layer", "run_sql", "find_algorithm"])
    message, notices, offered, asked = _begin(keeper, [], ModelConfig(model="smollm2:135m"))
    assert message.additional_kwargs[PROFILE_MARK] == "compact" and keeper.profile("t1") == "compact"
    assert offered == frozenset(COMPACT_TOOLS) and len(asked) == 1
    (notice,) = notices
    assert isinstance(notice, Notice) and "offered 2 tools" in notice.text and "135 M parameters" in notice.text


def test_a_fixed_conversation_keeps_its_profile_and_says_so_when_another_is_wanted():
    keeper = ProfileKeeper(lambda: [])
    history = [_user("hi", "compact"), AIMessage("Hello.")]
    message, notices, offered, _ = _begin(keeper, history, ModelConfig(model="big", tool_profile="full"))
    assert offered == frozenset(COMPACT_TOOLS)
    assert message.additional_kwargs[PROFILE_MARK] == "compact" and keeper.profile("t1") == "compact"
    (notice,) = notices
    assert "keeps the compact tool profile" in notice.text and "the Tool profile setting is Full" in notice.text
    # The setting asks for what the conversation has: nothing to say; the size is not asked for a set profile.
    _, notices, _, asked = _begin(keeper, history, ModelConfig(model="big", tool_profile="compact"))
    assert notices == [] and asked == []
