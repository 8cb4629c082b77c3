"""The prompt-cache benchmark reads llama-cpp-python's log and stream right (bench/prompt_cache.py).

The log lines are as llama-cpp-python 0.3.36's server writes them with ``verbose`` on (long lines shortened).
"""

from __future__ import annotations

import json

import pytest

from bench.prompt_cache import Call, first_token_in, read_cache_log

CACHED_REQUEST = """\
Llama.generate: 348 prefix-match hit, remaining 14 prompt tokens to eval
llama_perf_context_print:        load time =       0.70 ms
llama_perf_context_print: prompt eval time =     505.25 ms /    14 tokens (   36.09 ms per token, ...)
llama_perf_context_print:        eval time =    2091.56 ms /    31 runs   (   67.47 ms per token, ...)
INFO:     127.0.0.1:36532 - "POST /v1/chat/completions HTTP/1.1" 200 OK
"""
FIRST_REQUEST = """\
llama_perf_context_print:        load time =       0.70 ms
llama_perf_context_print: prompt eval time =       0.24 ms /   317 tokens (    0.00 ms per token, ...)
INFO:     127.0.0.1:52348 - "POST /v1/chat/completions HTTP/1.1" 200 OK
"""


def test_a_request_after_another_reports_the_prefix_it_reused():
    assert read_cache_log(CACHED_REQUEST) == (362, 348)  # the prompt is what was reused plus what was evaluated
    call = Call(prompt_tokens=362, cached_tokens=348)
    assert call.cached_pct == 96.1


def test_a_servers_first_request_has_no_prefix_line_and_nothing_cached():
    assert read_cache_log(FIRST_REQUEST) == (317, 0)


def test_a_request_the_log_does_not_describe_is_an_error_not_a_zero():
    with pytest.raises(RuntimeError, match="no prompt size"):
        read_cache_log('INFO:     127.0.0.1:1 - "GET /v1/models HTTP/1.1" 200 OK\n')


def event(delta: dict) -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}).encode()


def test_the_first_token_is_the_first_chunk_with_text_or_a_tool_call():
    assert not first_token_in(event({"role": "assistant"}))  # the role alone is not a token
    assert not first_token_in(event({"content": ""}))
    assert first_token_in(event({"content": "The"}))
    assert first_token_in(event({"tool_calls": [{"index": 0, "function": {"name": "list_layers"}}]}))
    assert not first_token_in(b"data: [DONE]")
    assert not first_token_in(b": ping")
    assert not first_token_in(b"data: {not json")
