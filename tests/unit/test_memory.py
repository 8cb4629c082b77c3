"""The model's view of the conversation: valid for every provider, always inside its budget."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from geogpt_qgis.agent.memory import (
    KIND,
    RETRY_NOTE,
    STATE_NOTE,
    build_memory,
    fold_notes,
    message_tokens,
    repair_tool_pairs,
    split_turns,
)
from geogpt_qgis.core.tokens import TokenCalibration, estimate_tokens


def _turn(i: int, size: int = 400) -> list:
    call = {"name": "list_layers", "args": {}, "id": f"c{i}"}
    return [
        HumanMessage(content=f"question {i} " + "word " * (size // 5)),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content="result " * (size // 7), tool_call_id=f"c{i}"),
        AIMessage(content=f"answer {i}: the district with most schools is Nordby."),
    ]


def test_dangling_tool_calls_get_a_placeholder_result():
    call = {"name": "describe_layer", "args": {"layer": "x"}, "id": "c1"}
    messages = [HumanMessage(content="q"), AIMessage(content="", tool_calls=[call]), HumanMessage(content="next")]
    repaired = repair_tool_pairs(messages)
    assert isinstance(repaired[2], ToolMessage) and repaired[2].tool_call_id == "c1"
    assert "stopped" in repaired[2].content
    assert isinstance(repaired[3], HumanMessage)


def test_orphan_tool_results_are_dropped():
    messages = [HumanMessage(content="q"), ToolMessage(content="r", tool_call_id="nope"), AIMessage(content="a")]
    assert [type(m) for m in repair_tool_pairs(messages)] == [HumanMessage, AIMessage]


def test_everything_is_sent_when_it_fits():
    messages = [m for i in range(3) for m in _turn(i)]
    memory = build_memory(messages, 10_000)
    assert memory.messages == messages
    assert memory.summary == "" and memory.omitted_messages == 0
    assert memory.tokens == sum(message_tokens(m) for m in messages)


@pytest.mark.parametrize("budget", [400, 900, 1500, 3000])
def test_older_turns_are_summarised_and_everything_fits(budget):
    messages = [m for i in range(60) for m in _turn(i)]
    memory = build_memory(messages, budget)
    sent = sum(message_tokens(m) for m in memory.messages) + estimate_tokens(memory.summary)
    assert sent <= budget
    assert memory.tokens <= budget
    assert isinstance(memory.messages[0], HumanMessage)  # whole turns only
    assert memory.messages[-1].content.startswith("answer 59")
    assert memory.omitted_messages == len(messages) - len(memory.messages)
    assert memory.summary.startswith("Earlier in this conversation")
    # The newest of the left-out turns is summarised: question and answer.
    newest_left_out = 59 - len(split_turns(memory.messages))
    assert f"- User: question {newest_left_out} word" in memory.summary
    assert f"you answered: answer {newest_left_out}:" in memory.summary
    assert "tools: list_layers" in memory.summary


def test_a_huge_newest_turn_is_shortened_to_fit():
    messages = _turn(0) + _turn(1, size=40_000)
    memory = build_memory(messages, 600)
    assert sum(message_tokens(m) for m in memory.messages) <= 600
    assert memory.messages[0].content.startswith("question 1")
    result = next(m for m in memory.messages if isinstance(m, ToolMessage))
    assert "characters of this result left out to fit the context" in result.content
    assert memory.messages[-1].content.startswith("answer 1")


def test_a_huge_user_message_is_cut_in_the_middle():
    text = "start " + "filler " * 5000 + "the real question at the end?"
    memory = build_memory([HumanMessage(content=text)], 300)
    (sent,) = memory.messages
    assert message_tokens(sent) <= 300
    assert sent.content.startswith("start filler") and sent.content.endswith("the real question at the end?")
    assert "characters cut to fit the context" in sent.content


def test_state_notes_are_folded_into_the_user_message_they_precede():
    note = SystemMessage(
        content="Since your last answer the user added layer 'wells'.", additional_kwargs={KIND: STATE_NOTE}
    )
    messages = [*_turn(0), note, HumanMessage(content="how many wells?")]
    folded = fold_notes(messages)
    assert not any(isinstance(m, SystemMessage) for m in folded)
    assert folded[-1].content == "[Since your last answer the user added layer 'wells'.]\n\nhow many wells?"
    assert len(split_turns(folded)) == 2


def test_a_retry_request_does_not_start_a_turn():
    retry = HumanMessage(content="Your last tool call could not be parsed", additional_kwargs={KIND: RETRY_NOTE})
    messages = [HumanMessage(content="q"), AIMessage(content=""), retry, AIMessage(content="a")]
    assert len(split_turns(messages)) == 1


def test_estimates_are_on_the_high_side():
    prose = "The schools layer has 31 features in EPSG:25832, most of them primary schools. " * 20
    assert estimate_tokens(prose) >= len(prose) / 4.2
    identifiers = "schools_3c2e1f0a_1b2c_4d5e_8f9a_0b1c2d3e4f5a " * 10
    assert estimate_tokens(identifiers) >= len(identifiers) / 3


def test_calibration_only_grows_and_is_bounded():
    calibration = TokenCalibration()
    calibration.observe(1000, 800)
    assert calibration.factor == 1.0
    calibration.observe(1000, 1300)
    assert 1.3 < calibration.factor < 1.4
    assert calibration.scale(1000) >= 1300
    calibration.observe(10, 10_000)
    assert calibration.factor == 3.0
