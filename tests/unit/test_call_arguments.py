"""Tool-call arguments bounded and made safe before a client library parses them (agent/call_arguments.py).

The Ollama cases feed the transport's output to langchain-ollama's own parser
(``_get_tool_calls_from_response``, what ``ChatOllama`` runs on every streamed
line), so what is asserted is that the library reads each line without failing.
"""

from __future__ import annotations

import ast
import json

import pytest
from langchain_core.messages import AIMessage
from langchain_ollama.chat_models import _get_tool_calls_from_response

from geogpt_qgis.agent.call_arguments import (
    FRAME_DEPTH,
    ToolCallStreamRepair,
    decode_tool_arguments,
    flattened,
    unparsed_as_invalid,
)
from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.providers.explain import explain_model_error
from geogpt_qgis.core.call_bounds import CALL_CHARS, CALL_DEPTH, CALL_TEXT_CHARS, REFUSED_ARGUMENTS, arguments_problem

WORDS = " ".join(["school"] * 1_600)  # Python's parser raises MemoryError on this (ast.literal_eval)
PATHOLOGICAL = [WORDS, "[" * 1_000, "- " * 5_000, "{'a': " * 200, "not " * 3_000]


def ollama_line(arguments, name: str = "find_algorithm") -> bytes:
    """One streamed line of Ollama's /api/chat carrying a tool call, as the server sends it."""
    message = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}
    return json.dumps({"model": "qwen3:8b", "created_at": "2026-01-01T00:00:00Z", "message": message, "done": False})


def parsed_by_langchain_ollama(line: bytes) -> AIMessage:
    """What ChatOllama makes of the transport's line, and what the graph then reads (``unparsed_as_invalid``)."""
    calls = _get_tool_calls_from_response(json.loads(line))
    return unparsed_as_invalid(AIMessage(content="", tool_calls=calls))


def test_the_pathological_texts_do_break_the_parsers_langchain_ollama_uses():
    """The premise: these texts fail Python's parsers with errors langchain-ollama does not catch."""
    with pytest.raises(MemoryError):
        ast.literal_eval(WORDS)
    with pytest.raises(RecursionError):
        json.loads("[" * 1_000_000)


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=["1600 words", "brackets", "minus", "dicts", "nots"])
def test_every_text_reaches_the_graph_as_sent_without_the_client_parsing_it(text):
    line = decode_tool_arguments(ollama_line({"query": text, "limit": 5}).encode())
    reply = parsed_by_langchain_ollama(line)
    assert reply.tool_calls[0]["args"] == {"query": text, "limit": 5}
    assert not reply.invalid_tool_calls


def test_arguments_sent_as_a_json_string_are_decoded_and_other_strings_are_invalid_calls():
    decoded = parsed_by_langchain_ollama(decode_tool_arguments(ollama_line(json.dumps({"query": WORDS})).encode()))
    assert decoded.tool_calls[0]["args"] == {"query": WORDS}
    invalid = parsed_by_langchain_ollama(decode_tool_arguments(ollama_line(WORDS).encode()))
    assert not invalid.tool_calls and invalid.invalid_tool_calls[0]["args"] == WORDS


def test_a_text_past_the_bound_is_refused_with_its_size_and_the_bound():
    text = "x " * 30_000
    reply = parsed_by_langchain_ollama(decode_tool_arguments(ollama_line({"query": text}).encode()))
    refused = reply.tool_calls[0]["args"]
    assert list(refused) == [REFUSED_ARGUMENTS]
    assert refused[REFUSED_ARGUMENTS] == f"query is 60,000 characters; at most {CALL_TEXT_CHARS:,} are read"
    whole = parsed_by_langchain_ollama(decode_tool_arguments(ollama_line("y" * (CALL_CHARS + 1)).encode()))
    assert whole.tool_calls[0]["args"][REFUSED_ARGUMENTS] == (
        f"the arguments are {CALL_CHARS + 1:,} characters; at most {CALL_CHARS:,} are read"
    )


def test_a_frame_nested_beyond_pythons_parser_is_read_and_its_call_refused():
    deep = '{"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [{"function": '
    # 100,000 levels: past the JSON parser's limit on every Python here (3.11 fails near 1,000, 3.13 near 20,000).
    deep += '{"name": "run_algorithm", "arguments": {"parameters": ' + "[" * 100_000 + "]" * 100_000 + "}}}]}}"
    with pytest.raises(RecursionError):
        json.loads(deep)
    reply = parsed_by_langchain_ollama(decode_tool_arguments(deep.encode()))
    assert reply.tool_calls[0]["name"] == "run_algorithm"
    assert "is nested more than 32 levels deep; at most 32 are read" in reply.tool_calls[0]["args"][REFUSED_ARGUMENTS]


def test_flattening_keeps_strings_and_shallow_structure():
    text = b'{"a": "[[[{{", "b": [[[1]], {"c": "]"}], "d": 2}'
    assert json.loads(flattened(text, 3)) == {"a": "[[[{{", "b": [[None], {"c": "]"}], "d": 2}
    assert flattened(text, 10) == text
    assert FRAME_DEPTH > CALL_DEPTH + 6  # what the cut leaves out was already beyond the bound


def test_arguments_problem_names_the_place_the_size_and_the_bound():
    assert arguments_problem({"query": "x" * CALL_TEXT_CHARS, "n": [1, 2]}) is None
    assert arguments_problem({"parameters": {"EXPR": "e" * (CALL_TEXT_CHARS + 5)}}) == (
        f"parameters.EXPR is {CALL_TEXT_CHARS + 5:,} characters; at most {CALL_TEXT_CHARS:,} are read"
    )
    nested: list = []
    for _ in range(CALL_DEPTH + 1):
        nested = [nested]
    assert "nested more than 32 levels" in str(arguments_problem({"v": nested}))
    # An integer past 64 bits cannot be stored with the conversation (msgpack): the whole run ended there.
    assert arguments_problem({"limit": 10**18 - 1, "n": -(10**17)}) is None
    assert arguments_problem({"p": {"N": [2**70]}}) == "p.N[0] is an integer of 22 digits; at most 18 are read"
    # Found by the process fuzzer: Infinity in one call ended the run when the next request was written.
    assert arguments_problem(json.loads('{"size": Infinity}')) == "size is inf; only finite numbers are read"
    assert arguments_problem({"p": [float("nan")]}) == "p[0] is nan; only finite numbers are read"
    assert arguments_problem({"size": 1e300}) is None
    many = {f"k{i}": "v" * 1000 for i in range(CALL_CHARS // 1000 + 1)}
    assert arguments_problem(many) == (
        f"the arguments are more than {CALL_CHARS:,} characters in all; at most {CALL_CHARS:,} are read"
    )


# -- OpenAI: held back, passed on whole -------------------------------------------------------------------------------
def sse(delta: dict | None = None, finish: str | None = None, index: int = 0) -> bytes:
    choice = {"index": index, "delta": delta or {}, "finish_reason": finish}
    frame = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}
    return b"data: " + json.dumps(frame).encode()


def piece(arguments: str, name: str | None = None, call: int = 0) -> dict:
    function = {"arguments": arguments, **({"name": name} if name else {})}
    return {
        "tool_calls": [
            {"index": call, **({"id": f"call_{call}", "type": "function"} if name else {}), "function": function}
        ]
    }


def arguments_sent(lines: list[bytes]) -> dict[int, str]:
    """What a client concatenates per call from the repaired lines."""
    joined: dict[int, str] = {}
    for line in b"\n".join(lines).split(b"\n"):
        if not line.startswith(b"data: {"):
            continue
        for choice in json.loads(line[6:])["choices"]:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                joined[call["index"]] = joined.get(call["index"], "") + call["function"].get("arguments", "")
    return joined


def test_openai_arguments_are_passed_on_whole_with_the_finishing_chunk():
    repair = ToolCallStreamRepair()
    first = repair(sse(piece('{"layer', "describe_layer")))
    second = repair(sse(piece('": "schools"}')))
    assert arguments_sent([first, second]) == {0: ""}  # held back
    finished = repair(sse(finish="tool_calls"))
    assert arguments_sent([first, second, finished]) == {0: '{"layer": "schools"}'}
    assert json.loads(finished[6:])["choices"][0]["finish_reason"] == "tool_calls"


def test_openai_arguments_past_the_bound_are_refused_with_the_size():
    repair = ToolCallStreamRepair()
    lines = [repair(sse(piece('{"code": "', "run_pyqgis")))]
    lines += [repair(sse(piece("x = 1; " * 1_000))) for _ in range(12)]
    lines += [repair(sse(piece('"}'))), repair(sse(finish="tool_calls"))]
    sent = json.loads(arguments_sent(lines)[0])
    assert sent == {REFUSED_ARGUMENTS: f"code is 84,000 characters; at most {CALL_TEXT_CHARS:,} are read"}
    assert max(len(line) for line in lines) < 1_000  # the long text itself never reached the client
    repair = ToolCallStreamRepair()
    lines = [repair(sse(piece("[" * 200_000, "run_pyqgis"))), repair(sse(finish="tool_calls"))]
    assert json.loads(arguments_sent(lines)[0]) == {
        REFUSED_ARGUMENTS: f"the arguments are 200,000 characters; at most {CALL_CHARS:,} are read"
    }


def test_openai_arguments_still_held_go_before_done_or_at_the_end_of_the_stream():
    repair = ToolCallStreamRepair()
    lines = [repair(sse(piece("{}", "describe_layer"))), repair(b"data: [DONE]")]
    assert arguments_sent(lines) == {0: "{}"} and lines[-1].endswith(b"data: [DONE]")
    repair = ToolCallStreamRepair()
    lines = [repair(sse(piece('{"a": ' + "[" * 3_000 + "]" * 3_000 + "}", "x"))), repair.end()]
    assert "nested more than" in json.loads(arguments_sent(lines)[0])[REFUSED_ARGUMENTS]


def handled_json_error_then(failure: BaseException) -> BaseException:
    """``failure`` raised while a JSON error was being handled, as langchain-ollama's fallback raises it."""
    try:
        try:
            json.loads(WORDS)
        except json.JSONDecodeError:
            raise failure  # noqa: B904 - chained implicitly, as in langchain-ollama
    except BaseException as exc:  # noqa: BLE001 - returned for the test to look at
        return exc
    raise AssertionError("unreachable")


def test_a_json_error_handled_before_another_failure_is_not_blamed_on_the_server():
    config = ModelConfig(base_url="http://127.0.0.1:11434", model="qwen3:8b")
    failure = handled_json_error_then(MemoryError())
    assert isinstance(failure.__context__, json.JSONDecodeError)
    said = explain_model_error(failure, config)
    assert "not valid JSON" not in said and WORDS[:40] not in said
    assert said.startswith("The model call failed (MemoryError)")
    assert "not valid JSON" in explain_model_error(json.JSONDecodeError("x", "<html>", 0), config)


# -- llama-cpp-python's stream, through the real OpenAI client --------------------------------------------------------
def llama_cpp_stream(name: str, arguments: str, token_chars: int = 3) -> bytes:
    """A constrained tool call streamed as llama-cpp-python's server streams it (its chat-format code, 0.3.x).

    A blank first chunk, then one chunk per token repeating the call's id and name
    (and the legacy ``function_call``), then a chunk finishing with ``tool_calls``.
    """
    envelope = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gemma3"}
    blank = {"role": "assistant", "content": None, "function_call": None, "tool_calls": None}
    events = [{**envelope, "choices": [{"index": 0, "finish_reason": None, "logprobs": None, "delta": blank}]}]
    for start in range(0, len(arguments), token_chars):
        text = arguments[start : start + token_chars]
        call = {
            "index": 0,
            "id": f"call__0_{name}_1",
            "type": "function",
            "function": {"name": name, "arguments": text},
        }
        delta = {
            "role": None,
            "content": None,
            "function_call": {"name": name, "arguments": text},
            "tool_calls": [call],
        }
        events.append({**envelope, "choices": [{"index": 0, "finish_reason": None, "logprobs": None, "delta": delta}]})
    end = {"role": None, "content": None, "function_call": None, "tool_calls": None}
    events.append(
        {**envelope, "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None, "delta": end}]}
    )
    return b"".join(b"data: " + json.dumps(event).encode() + b"\r\n\r\n" for event in events) + b"data: [DONE]\r\n\r\n"


def through_chat_openai(body: bytes) -> AIMessage:
    """``body`` served in 37-byte pieces to ChatOpenAI through the plugin's transport; the reply the graph reads."""
    import asyncio

    import httpx2
    import openai
    from langchain_openai import ChatOpenAI

    from geogpt_qgis.agent.providers.transports import StreamRepairTransport
    from geogpt_qgis.agent.reply import stream_reply

    async def pieces():
        for start in range(0, len(body), 37):
            yield body[start : start + 37]

    def serve(request):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=pieces())

    client = openai.DefaultAsyncHttpxClient(transport=StreamRepairTransport(httpx2.MockTransport(serve)))
    model = ChatOpenAI(model="gemma3", base_url="http://127.0.0.1:9/v1", api_key="x", http_async_client=client)
    return unparsed_as_invalid(asyncio.run(stream_reply(model, [("user", "go")], 100)).message)


def test_a_call_streamed_as_llama_cpp_python_streams_it_reaches_the_graph_whole_and_bounded():
    name = "Nordby " * 85  # 595 characters, in about 200 chunks
    reply = through_chat_openai(llama_cpp_stream("describe_layer", json.dumps({"layer": name})))
    assert reply.tool_calls[0]["name"] == "describe_layer" and reply.tool_calls[0]["args"] == {"layer": name}
    deep = json.dumps({"layer": json.loads("[" * 40 + "1" + "]" * 40)})
    refused = through_chat_openai(llama_cpp_stream("describe_layer", deep, token_chars=1)).tool_calls[0]["args"]
    assert (
        refused[REFUSED_ARGUMENTS].startswith("layer[0]") and "nested more than 32 levels" in refused[REFUSED_ARGUMENTS]
    )
    long = through_chat_openai(llama_cpp_stream("run_sql", json.dumps({"sql": "SELECT 1 " * 5_000}), 200))
    assert long.tool_calls[0]["args"] == {REFUSED_ARGUMENTS: "sql is 45,000 characters; at most 20,000 are read"}
