"""The model's view of the conversation: valid for every provider, and inside its budget."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from geogpt_qgis.agent.memory import estimate_tokens, fit_history, message_tokens, repair_tool_pairs


def _turn(i: int, size: int = 400) -> list:
    call = {"name": "list_layers", "args": {}, "id": f"c{i}"}
    return [
        HumanMessage(content=f"question {i} " + "x" * size),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content="y" * size, tool_call_id=f"c{i}"),
        AIMessage(content=f"answer {i}"),
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


def test_history_keeps_newest_whole_turns_within_budget():
    messages = [m for i in range(30) for m in _turn(i)]
    budget = 1200
    kept, omitted = fit_history(messages, budget)
    assert sum(message_tokens(m) for m in kept) <= budget
    assert isinstance(kept[0], HumanMessage)  # starts at a turn boundary
    assert kept[-1].content == "answer 29"
    assert omitted == len(messages) - len(kept)
    assert 0 < len(kept) < len(messages)


def test_the_newest_turn_is_kept_even_when_too_big():
    messages = _turn(0) + _turn(1, size=20_000)
    kept, _ = fit_history(messages, 100)
    assert kept[0].content.startswith("question 1")


def test_estimate_is_pessimistic_for_english():
    text = "The schools layer has 31 features in EPSG:25832. " * 20
    assert estimate_tokens(text) >= len(text) / 4
