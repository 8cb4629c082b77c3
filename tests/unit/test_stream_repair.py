"""OpenAI chat streams whose server repeats a tool call's id and name in every chunk (llama-cpp-python does)."""

from __future__ import annotations

import json

from geogpt_qgis.agent.call_arguments import ToolCallStreamRepair


def chunk(arguments: str, name: str = "list_layers", call_id: str = "call_1", index: int = 0) -> bytes:
    call = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    legacy = {"name": name, "arguments": arguments}
    delta = {"role": None, "content": None, "function_call": legacy, "tool_calls": [call]}
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}).encode()


def calls_of(line: bytes) -> list[dict]:
    return json.loads(line[len(b"data: ") :])["choices"][0]["delta"]["tool_calls"]


def test_the_id_and_name_go_once_and_the_arguments_whole_at_the_end():
    repair = ToolCallStreamRepair()
    first, second, third = (repair(chunk(a)) for a in ('{"layer"', ': "schools"', "}"))
    assert calls_of(first)[0]["id"] == "call_1" and calls_of(first)[0]["function"]["name"] == "list_layers"
    for later in (second, third):
        call = calls_of(later)[0]
        assert "id" not in call and call["function"] == {"arguments": ""}  # held back (agent/call_arguments.py)
        assert "function_call" not in json.loads(later[6:])["choices"][0]["delta"]  # the legacy duplicate
    finish = json.loads(repair(b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}')[6:])
    assert finish["choices"][0]["delta"]["tool_calls"] == [
        {"index": 0, "function": {"arguments": '{"layer": "schools"}'}}
    ]


def test_a_second_call_in_the_same_reply_keeps_its_own_name():
    repair = ToolCallStreamRepair()
    repair(chunk("{}", index=0))
    second = calls_of(repair(chunk("{", name="describe_layer", call_id="call_2", index=1)))[0]
    assert second["id"] == "call_2" and second["function"]["name"] == "describe_layer"


def test_lines_without_tool_calls_pass_byte_for_byte():
    repair = ToolCallStreamRepair()
    for line in (b'data: {"choices": [{"delta": {"content": "Hi"}}]}', b"data: [DONE]", b"", b": ping", b"data: {oops"):
        assert repair(line) == line
