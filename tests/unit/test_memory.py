"""The model's view of the conversation: valid for every provider, always inside its budget."""

from __future__ import annotations

import itertools

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from geogpt_qgis.agent.memory import (
    KIND,
    PROJECT_STATE,
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
    sent = sum(message_tokens(m) for m in memory.messages)  # the summary heads the first user message
    assert sent <= budget
    assert memory.tokens <= budget
    assert isinstance(memory.messages[0], HumanMessage)  # whole turns only
    assert memory.messages[-1].content.startswith("answer 59")
    assert memory.omitted_messages == len(messages) - len(memory.messages)
    assert memory.summary.startswith("Earlier in this conversation")
    assert memory.messages[0].content.startswith(memory.summary + "\n\nquestion ")
    # The newest of the left-out turns is summarised: question and answer.
    newest_left_out = 59 - len(split_turns(memory.messages))
    assert f"- User: question {newest_left_out} word" in memory.summary
    assert f"you answered: answer {newest_left_out}:" in memory.summary
    assert "tools: list_layers" in memory.summary


def test_a_huge_newest_turn_is_shortened_to_fit():
    messages = _turn(0) + _turn(1, size=40_000)
    memory = build_memory(messages, 600)
    assert sum(message_tokens(m) for m in memory.messages) <= 600
    assert memory.messages[0].content.startswith(
        "Earlier in this conversation (not shown in full):\n- User: question 0"
    )
    assert "\n\nquestion 1" in memory.messages[0].content
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


def _prefix_breaks(requests: list[list]) -> list[int]:
    """The calls whose messages do not start with the previous call's messages."""
    return [i for i in range(1, len(requests)) if requests[i][: len(requests[i - 1])] != requests[i - 1]]


@pytest.mark.parametrize("budget", [2000, 3000, 6000])
def test_trimming_drops_turns_in_large_steps_so_the_prefix_survives_most_calls(budget):
    history: list = []
    sent: list[list] = []
    for i in range(80):
        turn = _turn(i, size=200 + 37 * (i % 5))
        history.append(turn[0])
        sent.append(build_memory(history, budget).messages)  # the call that answers with a tool call
        history += turn[1:3]
        sent.append(build_memory(history, budget).messages)  # the call after the tool result
        history.append(turn[3])
        assert sum(message_tokens(m) for m in sent[-1]) <= budget
    breaks = _prefix_breaks(sent)
    assert breaks, "80 turns never outgrew the budget: the test proves nothing"
    assert len(breaks) <= len(sent) // 6, breaks  # at least five calls in six keep the cached prefix
    # Between two cuts the summary is the same text: it depends on the dropped turns only.
    for before, after in itertools.pairwise(breaks):
        assert len({str(sent[j][0].content).split("\n\nquestion ")[0] for j in range(before, after)}) == 1


def test_notes_start_the_turn_of_the_message_they_precede_and_the_project_state_outlives_trimming():
    state = SystemMessage(content="Open project: 'Elvbury'; 7 layers.", additional_kwargs={KIND: PROJECT_STATE})
    note = SystemMessage(
        content="Since your last answer, the user added layer 'wells'.", additional_kwargs={KIND: STATE_NOTE}
    )
    first = _turn(0)
    messages = [state, *first, note, *_turn(1)[:1]]
    turns = split_turns(messages)
    assert [len(t) for t in turns] == [5, 2]  # each note travels with the user message after it
    assert fold_notes(messages)[0].content.startswith("[Open project: 'Elvbury'; 7 layers.]\n\nquestion 0")
    history = [state, *first] + [m for i in range(1, 40) for m in _turn(i)]
    memory = build_memory(history, 900)
    assert memory.omitted_messages > 5
    assert "- Open project: 'Elvbury'; 7 layers." in memory.messages[0].content  # recalled in the summary
    assert not any(isinstance(m, SystemMessage) for m in memory.messages)
