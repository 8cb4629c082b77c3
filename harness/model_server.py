"""A scripted model server that speaks the Ollama and OpenAI chat protocols.

Tests, benchmarks and the screenshot job drive the real ``ChatOllama`` and
``ChatOpenAI`` clients against it: every chat request pops the next scripted
``Turn`` and streams it back exactly as the real servers would (newline
delimited JSON for Ollama, server-sent events for OpenAI).  Every request is
recorded so that tests can assert what the model was sent.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TOKEN_RE = re.compile(r"\s*\S+|\s+")


@dataclass
class ToolCall:
    """One scripted tool call; ``raw_arguments`` sends a literal (maybe broken) string.

    Over Ollama, ``raw_arguments`` makes the server fail the request as real Ollama
    does when it cannot parse the model's call, unless ``ollama_string`` is set:
    then the arguments are streamed as that JSON string instead of an object, as
    some models' templates make Ollama do.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    call_id: str | None = None
    ollama_string: bool = False


@dataclass
class Turn:
    """One scripted model reply.

    ``status`` other than 200 answers with an HTTP error carrying ``error``
    (and ``headers``, such as ``Retry-After``).
    ``delay_first`` sleeps before the first byte (a model loading or thinking);
    ``chunk_delay`` sleeps between streamed tokens.
    Faults in the middle of a streamed answer, after ``fault_after`` frames:
    ``fault="drop"`` closes the connection without ending the stream (a server
    that crashed or restarted), ``"reset"`` resets it (TCP RST), ``"garbage"``
    sends a line that is not JSON and ends the stream, ``"schema"`` (Ollama) sends
    JSON in a shape the client cannot read (a tool call without a name), ``"stall"`` stops
    sending for ``stall_seconds`` (a server that hangs), then goes on.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    thinking: str = ""
    status: int = 200
    error: str = ""
    delay_first: float = 0.0
    chunk_delay: float = 0.0
    prompt_tokens: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    fault: str = ""
    fault_after: int = 0
    stall_seconds: float = 0.0


@dataclass
class RecordedRequest:
    """What the client sent: the path, the decoded JSON body, the headers, and when (``time.monotonic``)."""

    method: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)

    def tool_messages(self) -> list[dict[str, Any]]:
        """The tool results the client sent back to the model, in order."""
        return [m for m in self.body.get("messages", []) if m.get("role") == "tool"]

    @property
    def prompt_tokens(self) -> int:
        """The prompt's size as the server measures it (``measure_prompt``)."""
        return measure_prompt(self.body)


ScriptSource = Callable[[dict[str, Any]], Turn]


def split_tokens(text: str) -> list[str]:
    """Split text into word-sized tokens the way a model streams them."""
    return _TOKEN_RE.findall(text) or ([text] if text else [])


class ScriptedModelServer:
    """Serve scripted turns on 127.0.0.1 for both protocols.

    Use as a context manager; ``url`` is the base URL (for OpenAI append ``/v1``).
    """

    def __init__(
        self,
        turns: list[Turn] | ScriptSource | None = None,
        models: tuple[str, ...] = ("qwen3:8b", "llama3.2:3b"),
        context_length: int = 32768,
        capabilities: tuple[str, ...] = ("completion", "tools"),
        api_key: str | None = None,
        port: int = 0,
        parameter_counts: dict[str, int] | None = None,
    ) -> None:
        self.port = port
        # Weights per model, as /api/show says them (others: 8 B) and as llama-server's /v1/models "meta" does
        # (others: no meta, as llama-cpp-python, vLLM and OpenAI list them).
        self.parameter_counts = dict(parameter_counts or {})
        self._turns: list[Turn] = []
        self._source: ScriptSource | None = None
        self.models = models
        self.context_length = context_length
        self.capabilities = capabilities
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        # When set, model-list requests wait until it is set (a slow server; tests release it).
        self.list_gate: threading.Event | None = None
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.script(turns or [])

    # -- script -------------------------------------------------------------
    def script(self, turns: list[Turn] | ScriptSource) -> None:
        """Replace the remaining script with a list of turns or a callable."""
        with self._lock:
            if callable(turns):
                self._source, self._turns = turns, []
            else:
                self._source, self._turns = None, list(turns)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._turns)

    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded chat requests (both protocols), oldest first."""
        return [r for r in self.requests if r.path in ("/api/chat", "/v1/chat/completions")]

    def _next_turn(self, body: dict[str, Any]) -> Turn | None:
        with self._lock:
            if self._source is not None:
                return self._source(body)
            return self._turns.pop(0) if self._turns else None

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> ScriptedModelServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Keep test output quiet."""

    def handle(self) -> None:
        # The client may hang up (a stopped run): nothing to report.
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            super().handle()

    # -- plumbing -----------------------------------------------------------
    def _read_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _record(self, body: dict[str, Any]) -> None:
        self.owner.requests.append(
            RecordedRequest(self.command, self.path, body, {k.lower(): v for k, v in self.headers.items()})
        )

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _stream(self, turn: Turn, frames: list[bytes], garbage: bytes) -> None:
        """Write ``frames`` as chunks, with the turn's pacing and its mid-stream fault; end the stream."""
        for index, frame in enumerate(frames):
            if turn.fault and index == turn.fault_after:
                if turn.fault in ("drop", "reset"):
                    self._hang_up(reset=turn.fault == "reset")
                    return
                if turn.fault in ("garbage", "schema"):
                    self._write_chunk(garbage if turn.fault == "garbage" else _NAMELESS_TOOL_CALL)
                    self._end_stream()
                    return
                if turn.fault == "stall":
                    time.sleep(turn.stall_seconds)
            self._write_chunk(frame)
            if turn.chunk_delay:
                time.sleep(turn.chunk_delay)
        self._end_stream()

    def _hang_up(self, reset: bool) -> None:
        """Close the connection in the middle of the body: a FIN, or with ``reset`` a TCP RST."""
        self.close_connection = True
        self.wfile.flush()
        if reset:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- routing ------------------------------------------------------------
    def do_GET(self) -> None:
        self._record({})
        owner = self.owner
        if self.path in ("/", ""):
            data = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path in ("/api/tags", "/v1/models") and owner.list_gate is not None and not owner.list_gate.wait(30):
            self._send_json(503, {"error": "the test never released the model list"})
        elif self.path == "/api/tags":
            self._send_json(200, {"models": [_ollama_model_entry(m) for m in owner.models]})
        elif self.path == "/api/version":
            self._send_json(200, {"version": "0.12.3"})
        elif self.path == "/v1/models":
            if not self._authorised():
                return
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in owner.models]
            for entry in data:
                weights = owner.parameter_counts.get(entry["id"])
                if weights is not None:  # as llama.cpp's llama-server says it
                    entry["meta"] = {"n_params": weights, "n_ctx_train": owner.context_length}
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        body = self._read_body()
        self._record(body)
        if self.path == "/api/show":
            self._show(body)
        elif self.path == "/api/chat":
            self._ollama_chat(body)
        elif self.path == "/v1/chat/completions":
            if self._authorised():
                self._openai_chat(body)
        else:
            self._send_json(404, {"error": f"no route {self.path}"})

    def _authorised(self) -> bool:
        key = self.owner.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send_json(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error"}})
        return False

    def _show(self, body: dict[str, Any]) -> None:
        name = body.get("model") or body.get("name") or ""
        if name not in self.owner.models:
            self._send_json(404, {"error": f"model '{name}' not found"})
            return
        arch = name.split(":")[0].replace(".", "")
        weights = self.owner.parameter_counts.get(name, 8_000_000_000)
        size = f"{weights / 1e9:.1f}B" if weights >= 1e9 else f"{weights / 1e6:.0f}M"
        self._send_json(
            200,
            {
                "modelfile": "",
                "parameters": "",
                "template": "{{ .Prompt }}",
                "details": {"family": arch, "parameter_size": size, "quantization_level": "Q4_K_M"},
                "model_info": {
                    "general.architecture": arch,
                    "general.parameter_count": weights,
                    f"{arch}.context_length": self.owner.context_length,
                },
                "capabilities": list(self.owner.capabilities),
            },
        )

    def _turn_or_error(self, body: dict[str, Any], openai: bool) -> Turn | None:
        model = body.get("model", "")
        if model not in self.owner.models:
            if openai:
                self._send_json(
                    404,
                    {
                        "error": {
                            "message": f"The model `{model}` does not exist.",
                            "type": "invalid_request_error",
                            "code": "model_not_found",
                        }
                    },
                )
            else:
                self._send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
            return None
        turn = self.owner._next_turn(body)
        if turn is None:
            self._send_json(500, {"error": "scripted model server: script exhausted"})
            return None
        if turn.delay_first:
            time.sleep(turn.delay_first)
        if turn.status != 200:
            payload: Any = (
                {"error": {"message": turn.error, "type": "server_error"}} if openai else {"error": turn.error}
            )
            self._send_json(turn.status, payload, turn.headers)
            return None
        return turn

    # -- Ollama -------------------------------------------------------------
    def _ollama_chat(self, body: dict[str, Any]) -> None:
        turn = self._turn_or_error(body, openai=False)
        if turn is None:
            return
        broken = [tc for tc in turn.tool_calls if tc.raw_arguments is not None and not tc.ollama_string]
        if broken:
            # Real Ollama parses the model's tool call itself and fails the request.
            raw = broken[0].raw_arguments
            self._send_json(500, {"error": f"error parsing tool call: raw='{raw}', err=invalid character"})
            return
        model = body["model"]
        prompt_tokens = turn.prompt_tokens if turn.prompt_tokens is not None else measure_prompt(body)
        if body.get("stream", True) is False:
            message: dict[str, Any] = {"role": "assistant", "content": turn.text}
            if turn.thinking:
                message["thinking"] = turn.thinking
            if turn.tool_calls:
                message["tool_calls"] = [_ollama_tool_call(tc) for tc in turn.tool_calls]
            self._send_json(200, _ollama_done(model, message, prompt_tokens, len(split_tokens(turn.text))))
            return
        self._start_stream("application/x-ndjson")
        frames = [json.dumps(_ollama_frame(model, piece)).encode() + b"\n" for piece in _ollama_pieces(turn)]
        done = _ollama_done(model, {"role": "assistant", "content": ""}, prompt_tokens, len(split_tokens(turn.text)))
        frames.append(json.dumps(done).encode() + b"\n")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._stream(turn, frames, b'{"model": "qwen3:8b", "message": {"role": "assist\n')

    # -- OpenAI -------------------------------------------------------------
    def _openai_chat(self, body: dict[str, Any]) -> None:
        turn = self._turn_or_error(body, openai=True)
        if turn is None:
            return
        model = body["model"]
        prompt_tokens = turn.prompt_tokens if turn.prompt_tokens is not None else measure_prompt(body)
        completion_tokens = len(split_tokens(turn.text))
        finish = "tool_calls" if turn.tool_calls else "stop"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if turn.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": _call_id(tc, i),
                        "type": "function",
                        "function": {"name": tc.name, "arguments": _raw_args(tc)},
                    }
                    for i, tc in enumerate(turn.tool_calls)
                ]
            self._send_json(
                200,
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": _usage(prompt_tokens, completion_tokens),
                },
            )
            return
        self._start_stream("text/event-stream")
        frames = [_sse(_openai_chunk(model, delta, None)) for delta in _openai_deltas(turn)]
        frames.append(_sse(_openai_chunk(model, {}, finish)))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk = _openai_chunk(model, {}, None)
            chunk["choices"] = []
            chunk["usage"] = _usage(prompt_tokens, completion_tokens)
            frames.append(_sse(chunk))
        frames.append(b"data: [DONE]\n\n")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._stream(turn, frames, b'data: {"id": "chatcmpl-scripted", "choices": [{"delta": {"content": "Th\n\n')


_NAMELESS_TOOL_CALL = (
    json.dumps(
        {
            "model": "qwen3:8b",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": {}}}]},
            "done": False,
        }
    ).encode()
    + b"\n"
)


def _sse(payload: dict[str, Any]) -> bytes:
    """One server-sent event."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


# -- protocol helpers --------------------------------------------------------
def measure_prompt(body: dict[str, Any]) -> int:
    """The prompt's size in tokens as a chat template would lay it out (ChatML), counted the plugin's way.

    Every message costs its role markers, its text and its tool calls; every
    tool schema is written out as JSON in the system part, as Ollama's
    templates do.  What the client left out of its own budget shows here.
    """
    from geogpt_qgis.core.tokens import estimate_tokens

    total = 3  # the assistant's header the answer starts after
    for message in body.get("messages", []):
        content = message.get("content") or ""
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        total += 5 + estimate_tokens(str(content))
        calls = message.get("tool_calls")
        if calls:
            total += estimate_tokens(json.dumps(calls, ensure_ascii=False))
    for tool in body.get("tools", []) or []:
        total += 4 + estimate_tokens(json.dumps(tool, ensure_ascii=False))
    return total


def _ollama_model_entry(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": "2026-01-01T00:00:00Z",
        "size": 4_900_000_000,
        "digest": "0" * 64,
        "details": {
            "format": "gguf",
            "family": name.split(":")[0],
            "parameter_size": "8B",
            "quantization_level": "Q4_K_M",
        },
    }


def _raw_args(tc: ToolCall) -> str:
    return tc.raw_arguments if tc.raw_arguments is not None else json.dumps(tc.arguments)


_call_counter = itertools.count(1)


def _call_id(tc: ToolCall, index: int) -> str:
    """A unique id per scripted call, as real servers give."""
    if tc.call_id is None:
        tc.call_id = f"call_{next(_call_counter)}_{index}"
    return tc.call_id


def _ollama_tool_call(tc: ToolCall) -> dict[str, Any]:
    args: Any = tc.raw_arguments if tc.raw_arguments is not None else tc.arguments
    if tc.ollama_string and not isinstance(args, str):
        args = json.dumps(args)
    return {"function": {"name": tc.name, "arguments": args}}


def _ollama_pieces(turn: Turn) -> Iterator[dict[str, Any]]:
    for token in split_tokens(turn.thinking):
        yield {"role": "assistant", "content": "", "thinking": token}
    for token in split_tokens(turn.text):
        yield {"role": "assistant", "content": token}
    if turn.tool_calls:
        yield {"role": "assistant", "content": "", "tool_calls": [_ollama_tool_call(tc) for tc in turn.tool_calls]}


def _ollama_frame(model: str, message: dict[str, Any]) -> dict[str, Any]:
    return {"model": model, "created_at": "2026-01-01T00:00:00Z", "message": message, "done": False}


def _ollama_done(model: str, message: dict[str, Any], prompt_tokens: int, eval_tokens: int) -> dict[str, Any]:
    return {
        "model": model,
        "created_at": "2026-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 1_000_000,
        "load_duration": 1_000,
        "prompt_eval_count": prompt_tokens,
        "prompt_eval_duration": 1_000,
        "eval_count": eval_tokens,
        "eval_duration": 1_000,
    }


def _openai_deltas(turn: Turn) -> Iterator[dict[str, Any]]:
    yield {"role": "assistant", "content": ""}
    for token in split_tokens(turn.text):
        yield {"content": token}
    for index, tc in enumerate(turn.tool_calls):
        raw = _raw_args(tc)
        half = len(raw) // 2
        yield {
            "tool_calls": [
                {
                    "index": index,
                    "id": _call_id(tc, index),
                    "type": "function",
                    "function": {"name": tc.name, "arguments": raw[:half]},
                }
            ]
        }
        yield {"tool_calls": [{"index": index, "function": {"arguments": raw[half:]}}]}


def _openai_chunk(model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
