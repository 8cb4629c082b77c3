"""Model providers: build the chat model, ask the server what it has, retry and explain failures.

Server discovery (model lists, context length, tool support) uses the plugin's
one HTTP configuration (``toolbelt.network``: QGIS's proxy, TLS, user agent),
as the chat clients do, so the dock can fill its model list without importing
LangChain.  ``create_chat_model`` imports langchain-ollama or langchain-openai
only when called.

Faults are worded for the user by ``explain_model_error``: a server that cannot
be reached, one that hangs up in the middle of an answer, one that sends what
is not JSON, one that says "too many requests" or fails.  A busy or failing
server (HTTP 429, 5xx) is asked again by ``with_retries``, after the wait it
asks for (``Retry-After``, up to a bound) or a short backoff; the graph uses it
around each model call.  Tool calls are bounded and made safe as they arrive,
in the HTTP transport under the clients (``StreamRepairTransport``,
``agent.call_arguments``): arguments too long or too deep become a tool error
with the size and the bound; Ollama arguments that are not JSON become invalid
tool calls, which the model is asked to send again, as on the OpenAI protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import importlib
import json
import re
import socket
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from geogpt_qgis.agent.call_arguments import ToolCallStreamRepair, decode_tool_arguments
from geogpt_qgis.agent.call_arguments import unparsed_as_invalid as unparsed_as_invalid  # the graph's import
from geogpt_qgis.agent.config import PROVIDER_OLLAMA, ModelConfig, ModelSetupError
from geogpt_qgis.toolbelt import network

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

# A model server that does not answer the connection within this time is down.
CONNECT_TIMEOUT = network.CONNECT_TIMEOUT

# A busy or failing server (these statuses) is asked again, at most this many tries in all.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
RETRY_ATTEMPTS = 3
# Waits before the 2nd and 3rd tries when the server does not say (Retry-After).
RETRY_BACKOFF_SECONDS = (1.0, 3.0)
# The longest Retry-After honoured; a server asking for more is not waited for (the user is told).
RETRY_AFTER_LIMIT = 30.0

T = TypeVar("T")


@dataclass(frozen=True)
class ModelInfo:
    """What a server says about a model (Ollama ``/api/show``; llama.cpp's ``/v1/models``).

    ``parameter_count`` (weights, e.g. 135_000_000) chooses the tool profile
    (``agent.profiles``); ``None`` where the server does not say.
    """

    name: str
    context_length: int | None
    supports_tools: bool | None
    supports_thinking: bool = False
    parameter_count: int | None = None


class ServerError(RuntimeError):
    """A model server could not be queried; the message is meant for the user.

    ``unreachable``: no answer came (refused, timed out, proxy failed); the cause says which.
    """

    def __init__(self, message: str, status_code: int | None = None, unreachable: bool = False) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.unreachable = unreachable


def _http_json(url: str, payload: dict[str, Any] | None, timeout: float, api_key: str | None = None) -> Any:
    """GET ``url`` (POST ``payload`` as JSON) and decode the JSON answer; any failure is a ``ServerError``."""
    if not url.startswith(("http://", "https://")):
        raise ServerError(f"{url!r} is not an http(s) URL.")
    try:
        import httpx
    except ImportError as exc:  # before the plugin's packages are installed
        raise ServerError(
            "GeoGPT's Python packages are not installed yet; install them (the button above the chat), "
            "then refresh the model list."
        ) from exc
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        with network.client(timeout, headers=headers) as http:
            response = http.get(url) if payload is None else http.post(url, json=payload)
    except httpx.TransportError as exc:  # refused, timed out, dropped, or the proxy failed
        via = network.proxy_for(url)
        where = f"{url} through the proxy {via}" if via else url
        raise ServerError(f"Cannot reach {where}: {_clip(str(exc) or type(exc).__name__)}", unreachable=True) from exc
    if response.status_code >= 400:
        detail = response.text[:300]
        raise ServerError(f"{url} answered HTTP {response.status_code}: {detail}", response.status_code)
    try:
        return json.loads(response.content or b"null")
    except json.JSONDecodeError as exc:
        raise ServerError(f"{url} did not answer with JSON; is this the right server URL?") from exc


def list_models(
    provider: str, base_url: str, api_key: str | None = None, timeout: float = CONNECT_TIMEOUT
) -> list[str]:
    """Model names the server offers (Ollama ``/api/tags``, OpenAI ``/models``), sorted."""
    base = base_url.rstrip("/")
    if provider == PROVIDER_OLLAMA:
        payload = _http_json(f"{base}/api/tags", None, timeout)
        names = [m.get("name") or m.get("model") for m in (payload or {}).get("models", [])]
    else:
        payload = _http_json(f"{base}/models", None, timeout, api_key)
        names = [m.get("id") for m in (payload or {}).get("data", [])]
    return sorted(n for n in names if n)


def ollama_model_info(base_url: str, model: str, timeout: float = CONNECT_TIMEOUT) -> ModelInfo:
    """Context length and tool support of an Ollama model, from ``/api/show``."""
    payload = _http_json(f"{base_url.rstrip('/')}/api/show", {"model": model}, timeout) or {}
    context_length = None
    for key, value in (payload.get("model_info") or {}).items():
        if key.endswith(".context_length") and isinstance(value, int):
            context_length = value
            break
    parameters = _ollama_parameter_count(payload)
    capabilities = payload.get("capabilities")
    if not isinstance(capabilities, list):  # an older Ollama: tool support unknown
        return ModelInfo(model, context_length, None, False, parameters)
    return ModelInfo(model, context_length, "tools" in capabilities, "thinking" in capabilities, parameters)


def _ollama_parameter_count(payload: dict[str, Any]) -> int | None:
    """The model's weights: ``model_info`` ``general.parameter_count``, else ``details.parameter_size`` ("3.2B")."""
    count = (payload.get("model_info") or {}).get("general.parameter_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    return parameter_size(str((payload.get("details") or {}).get("parameter_size") or ""))


_SIZE_UNITS = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def parameter_size(text: str) -> int | None:
    """``"3.2B"`` -> 3_200_000_000, ``"135M"`` -> 135_000_000; ``None`` for anything else."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMBT])\s*", text.upper())
    return round(float(match.group(1)) * _SIZE_UNITS[match.group(2)]) if match else None


def openai_model_info(
    base_url: str, model: str, api_key: str | None = None, timeout: float = CONNECT_TIMEOUT
) -> ModelInfo | None:
    """What an OpenAI-compatible server's ``/models`` says of ``model`` (``None``: not listed).

    llama.cpp's llama-server adds ``meta`` to each entry (``n_params``,
    ``n_ctx_train``); llama-cpp-python, vLLM, LM Studio and OpenAI do not: the
    size is then unknown.  Tool support is never said here (``None``).
    """
    payload = _http_json(f"{base_url.rstrip('/')}/models", None, timeout, api_key)
    entries = payload.get("data") if isinstance(payload, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and entry.get("id") == model:
            meta = entry.get("meta")
            meta = meta if isinstance(meta, dict) else {}
            return ModelInfo(model, _positive(meta.get("n_ctx_train")), None, False, _positive(meta.get("n_params")))
    return None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def effective_context(config: ModelConfig, info: ModelInfo | None) -> int:
    """The ``num_ctx`` to send: the model's real context length, capped by the setting."""
    if info and info.context_length:
        return min(config.context_limit, info.context_length)
    return config.context_limit


def create_chat_model(config: ModelConfig, num_ctx: int | None = None, thinking: bool = False) -> BaseChatModel:
    """Build the LangChain chat model for ``config`` (imports the provider package).

    ``thinking`` asks Ollama to return a thinking model's reasoning apart from
    the answer (only for models that report the capability: others refuse it).
    """
    config.validate()
    proxy = network.proxy_config()  # read once: QGIS's proxy, for every client of this model
    if config.provider == PROVIDER_OLLAMA:
        from langchain_ollama import ChatOllama

        return ChatOllama(
            model=config.model,
            base_url=config.base_url,
            temperature=config.temperature,
            num_ctx=num_ctx or config.context_limit,
            num_predict=config.max_tokens,  # a bound on every reply: a looping model stops there
            reasoning=True if thinking else None,
            # trust_env off: the shared transport applies QGIS's proxy (or the system's, where QGIS says so).
            client_kwargs={"timeout": network.timeout(config.timeout), "trust_env": False},
            # Tool-call arguments sent as a JSON string are decoded before the client's parser sees them.
            sync_client_kwargs={"transport": OllamaArgumentsTransport(network.transport(proxy=proxy))},
            async_client_kwargs={"transport": OllamaArgumentsTransport(network.async_transport(proxy=proxy))},
        )
    import openai
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    # openai's own Timeout: openai 3 runs on httpx2, whose clients misread an httpx.Timeout (a TypeError per request).
    timeout = openai.Timeout(config.timeout, connect=CONNECT_TIMEOUT)
    chat_class = ChatOpenAI if _host(config) == "api.openai.com" else _local_chat_openai()
    return chat_class(
        model=config.model,
        base_url=config.base_url,
        # Local OpenAI-compatible servers (LM Studio, vLLM) accept any key; the client insists on one.
        api_key=SecretStr(config.api_key or "not-needed"),
        temperature=config.temperature,
        timeout=timeout,
        max_retries=0,  # ``with_retries`` retries, the same way for both protocols
        stream_usage=True,
        **_length_bound(config),
        # Own HTTP clients (closed after each run by ``aclose_chat_model``) instead of
        # LangChain's process-wide cached ones, whose connections would outlive the
        # worker's event loop.
        http_client=openai.DefaultHttpxClient(
            timeout=timeout,
            trust_env=False,
            transport=StreamRepairTransport(network.transport(openai.DefaultHttpxClient, proxy)),
        ),
        http_async_client=openai.DefaultAsyncHttpxClient(
            timeout=timeout,
            trust_env=False,
            transport=StreamRepairTransport(network.async_transport(openai.DefaultAsyncHttpxClient, proxy)),
        ),
    )


def _length_bound(config: ModelConfig) -> dict[str, Any]:
    """The bound on a reply's tokens, under the name the server reads.

    OpenAI's own API takes ``max_completion_tokens`` (its reasoning models refuse
    ``max_tokens``), which is what LangChain sends for ``max_tokens``; llama.cpp's
    server, llama-cpp-python, LM Studio, vLLM and Ollama's ``/v1`` read
    ``max_tokens`` (llama-cpp-python ignores the other name, and would generate
    until the context is full).
    """
    if _host(config) == "api.openai.com":
        return {"max_tokens": config.max_tokens}
    return {"extra_body": {"max_tokens": config.max_tokens}}


def _host(config: ModelConfig) -> str:
    return (urllib.parse.urlsplit(config.base_url).hostname or "").lower()


@functools.cache
def _local_chat_openai() -> type:
    """``ChatOpenAI`` sending an assistant message without text as ``""`` rather than ``null``.

    LangChain sends ``"content": null`` beside tool calls, as OpenAI's API
    prefers; llama-cpp-python's server refuses the whole request with HTTP 500
    ("Input should be a valid string"), so every conversation there broke at
    the call after its first tool call.  The other local servers take ``""``.
    """
    from langchain_openai import ChatOpenAI

    class LocalServerChatOpenAI(ChatOpenAI):
        def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
            payload = super()._get_request_payload(input_, stop=stop, **kwargs)
            for message in payload.get("messages", []):
                if message.get("role") == "assistant" and message.get("content") is None:
                    message["content"] = ""
            return payload

    return LocalServerChatOpenAI


_CHAT_PATHS = ("/api/chat", "/chat/completions")


def _line_fixer(request: Any, response: Any) -> Callable[[bytes], bytes] | None:
    """What to apply to each line of this response, if anything: Ollama's chat stream, OpenAI's streamed chat.

    Chat requests ask for an uncompressed reply (``_uncompressed``); a server
    or proxy that compresses it anyway is passed on as it came.
    """
    if response.headers.get("content-encoding", "identity") != "identity":
        return None
    path = request.url.path
    if path.endswith("/api/chat"):
        return decode_tool_arguments
    if path.endswith("/chat/completions") and "text/event-stream" in response.headers.get("content-type", ""):
        return ToolCallStreamRepair()
    return None


def _uncompressed(request: Any) -> Any:
    """A chat request asking for its reply as plain bytes, which the line fixers can read."""
    if request.url.path.endswith(_CHAT_PATHS):
        request.headers["Accept-Encoding"] = "identity"
    return request


class _Lines:
    """A byte stream cut into lines, each fixed (newline kept) as it completes; the fixer's ``end`` closes it."""

    def __init__(self, fix: Callable[[bytes], bytes]) -> None:
        self.fix = fix
        self.rest = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self.rest += data
        if b"\n" not in data:  # a long line arriving in many pieces is split once, when it ends
            return []
        *lines, rest = bytes(self.rest).split(b"\n")
        self.rest = bytearray(rest)
        return [self.fix(line) + b"\n" for line in lines]

    def end(self) -> bytes:
        tail = self.fix(bytes(self.rest)) if self.rest else b""
        finish = getattr(self.fix, "end", None)
        events = finish() if callable(finish) else b""
        return tail + b"\n" + events if tail and events else tail + events


@functools.cache
def _transports(library: str) -> tuple[type, type]:  # noqa: C901 - ten one-line methods of four classes made here
    """The sync and async transport classes for ``library`` (``httpx``, or ``httpx2`` under the openai package).

    Made on first use: the HTTP library is imported only by a run.
    """
    httpx: Any = importlib.import_module(library)  # httpx or httpx2: the same names

    def wrapped(request: Any, response: Any, stream_class: Any) -> Any:
        fix = _line_fixer(request, response)
        if fix is None:
            return response
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=stream_class(response.stream, fix),
            extensions=response.extensions,
            request=request,
        )

    class Lines(httpx.SyncByteStream):
        def __init__(self, inner: Any, fix: Callable[[bytes], bytes]) -> None:
            self.inner, self.fix = inner, fix

        def __iter__(self) -> Iterator[bytes]:
            lines = _Lines(self.fix)
            for data in self.inner:
                yield from lines.feed(data)
            if last := lines.end():
                yield last

        def close(self) -> None:
            self.inner.close()

    class AsyncLines(httpx.AsyncByteStream):
        def __init__(self, inner: Any, fix: Callable[[bytes], bytes]) -> None:
            self.inner, self.fix = inner, fix

        async def __aiter__(self) -> AsyncIterator[bytes]:
            lines = _Lines(self.fix)
            async for data in self.inner:
                for line in lines.feed(data):
                    yield line
            if last := lines.end():
                yield last

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Transport(httpx.BaseTransport):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            return wrapped(request, self.inner.handle_request(_uncompressed(request)), Lines)

        def close(self) -> None:
            self.inner.close()

    class AsyncTransport(httpx.AsyncBaseTransport):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            return wrapped(request, await self.inner.handle_async_request(_uncompressed(request)), AsyncLines)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Transport, AsyncTransport


def StreamRepairTransport(inner: Any) -> Any:  # noqa: N802 - used like a class
    """``inner`` (an httpx transport, sync or async) with chat streams checked and repaired line by line.

    Below the client libraries, so every tool call is bounded before any of them
    parses it (``agent.call_arguments``).  Ollama's: arguments bounded, decoded
    and their texts wrapped (``decode_tool_arguments``); OpenAI's: arguments held
    back and passed on whole and bounded, ids and names a server repeats sent
    once (``ToolCallStreamRepair``).
    """
    library = next(
        (root for cls in type(inner).__mro__ if (root := cls.__module__.split(".")[0]).startswith("httpx")), "httpx"
    )
    sync, async_ = _transports(library)
    return async_(inner) if isinstance(inner, importlib.import_module(library).AsyncBaseTransport) else sync(inner)


OllamaArgumentsTransport = StreamRepairTransport


# -- retries ---------------------------------------------------------------------
class RetriesExhausted(RuntimeError):
    """A busy or failing server still failed after ``attempts`` tries; ``__cause__`` is the last failure."""

    def __init__(self, last: BaseException, attempts: int) -> None:
        super().__init__(f"{attempts} tries failed; the last: {last}")
        self.last = last
        self.attempts = attempts


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a failed request's ``Retry-After`` header asks for (seconds or an HTTP date), if any."""
    for item in _chain(exc):
        headers = getattr(getattr(item, "response", None), "headers", None)
        value = headers.get("retry-after") if headers is not None else None
        if not value:
            continue
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    return None


def retry_wait(exc: BaseException, attempt: int) -> float | None:
    """Seconds to wait before trying again after try number ``attempt`` failed with ``exc``; None: give up."""
    if _status_code(exc) not in RETRY_STATUSES or attempt >= RETRY_ATTEMPTS:
        return None
    asked = retry_after_seconds(exc)
    if asked is not None:
        return asked if asked <= RETRY_AFTER_LIMIT else None
    return RETRY_BACKOFF_SECONDS[min(attempt, len(RETRY_BACKOFF_SECONDS)) - 1]


async def with_retries(
    call: Callable[[], Awaitable[T]],
    on_retry: Callable[[str], None],
    retryable: Callable[[BaseException], bool] = lambda exc: True,
) -> T:
    """``await call()``, asked again while the server is busy or failing (``retry_wait``).

    ``on_retry`` gets a sentence for the user before each wait.  Raises the
    failure itself when it is not worth retrying, ``RetriesExhausted`` when the
    tries ran out.  Only failures before the answer starts are retried (an HTTP
    status comes before any token), so nothing the user saw is sent twice.
    """
    attempt = 1
    while True:
        try:
            return await call()
        except Exception as exc:
            wait = retry_wait(exc, attempt) if retryable(exc) else None
            if wait is None:
                if attempt > 1 and _status_code(exc) in RETRY_STATUSES:
                    raise RetriesExhausted(exc, attempt) from exc
                raise
            status = _status_code(exc)
            reason = "is busy" if status == 429 else "failed"
            when = f"in {wait:.0f} s" if wait >= 1 else "now"
            tries = f"try {attempt + 1} of {RETRY_ATTEMPTS}"
            on_retry(f"The model server {reason} (HTTP {status}); trying again {when} ({tries}).")
            await asyncio.sleep(wait)
            attempt += 1


async def aclose_chat_model(model: BaseChatModel) -> None:
    """Close the model's HTTP connections on the loop that opened them."""
    closers = []
    for owner, name in (
        (model, "root_async_client"),
        (model, "_async_client"),
        (model, "root_client"),
        (model, "_client"),
    ):
        client = getattr(owner, name, None)
        close = getattr(client, "close", None)
        if callable(close):
            closers.append(close)
    for close in closers:
        with contextlib.suppress(Exception):  # closing is best effort
            result = close()
            if hasattr(result, "__await__"):
                await result


def _reply_problem(exc: BaseException, config: ModelConfig, text: str) -> str | None:
    """What went wrong on the way (connection, time, a reply that cannot be read), or ``None``."""
    where = f"{config.base_url}"
    is_ollama = config.provider == PROVIDER_OLLAMA
    if _is_dropped(exc) and not isinstance(exc, ServerError):  # ServerError: a model-list query, not an answer
        return (
            f"The model server at {where} closed the connection in the middle of its answer, so the answer "
            "was cut off. The server may have crashed, restarted or run out of memory (its log says why). "
            "The conversation is kept up to the last finished step: send your message again."
        )
    if _is_timeout(exc) and not _is_connect_failure(exc):
        return (
            f"The model server at {where} did not answer within {config.timeout:g} s. "
            "The model may still be loading or the server is overloaded; try again, "
            "or raise the request timeout in the settings."
        )
    refused = network.untrusted_certificate(exc)
    if refused is not None:
        return f"The certificate of the model server at {where} is not trusted ({refused}). {network.CERTIFICATE_HINT}"
    if _is_connection_error(exc):
        proxy = network.proxy_for(config.base_url)
        if proxy is not None:  # the connection that failed may be the proxy's
            return (
                f"Cannot reach the model server at {where} through the proxy {proxy} (QGIS's network settings). "
                "Check that the proxy is running and can reach the server, or add the server to the proxy's "
                "exceptions (No proxy for)."
            )
        if is_ollama:
            return (
                f"Cannot reach the Ollama server at {where}. Is Ollama running? "
                "Start it (`ollama serve`) or correct the server URL."
            )
        return f"Cannot reach the model server at {where}. Check the URL and that the server is running."
    server_kind = "an Ollama server" if is_ollama else "an OpenAI-compatible API"
    if _unreadable(exc) is not None:
        return (
            f"The model server at {where} sent a reply that is not valid JSON, so it could not be read "
            f"({_clip(_unreadable(exc) or '', 80)!r}). Check that the URL points to {server_kind} and not "
            "to a proxy or a web page; if it does, send your message again."
        )
    if any(type(item).__name__ == "ValidationError" for item in _chain(exc)):  # the client's reply schema
        return (
            f"The model server at {where} sent a reply in a form GeoGPT cannot read "
            f"({_clip(text.splitlines()[0] if text else type(exc).__name__, 120)}). Check that the URL points to "
            f"{server_kind}; updating the server may help."
        )
    return None


def explain_model_error(exc: BaseException, config: ModelConfig) -> str:
    """Turn a provider exception into one clear, actionable sentence or two, in the user's words."""
    if isinstance(exc, ModelSetupError):
        return str(exc)
    attempts = 1
    if isinstance(exc, RetriesExhausted):
        attempts = exc.attempts
        exc = exc.last
    where = f"{config.base_url}"
    is_ollama = config.provider == PROVIDER_OLLAMA
    status = _status_code(exc)
    text = _error_text(exc)
    lowered = text.lower()
    problem = _reply_problem(exc, config, text)
    if problem:
        return problem
    if status == 404 or ("not found" in lowered and "model" in lowered):
        if is_ollama:
            return (
                f"The model '{config.model}' is not installed on the Ollama server at {where}. "
                f"Install it with `ollama pull {config.model}` or pick an installed model."
            )
        return f"The server at {where} has no model '{config.model}'. Pick one from its model list."
    if status in (401, 403):
        return (
            f"The server at {where} refused the API key (HTTP {status}). "
            "Enter a valid key in the model settings, or set OPENAI_API_KEY."
        )
    if status is None and "no generation chunks" in lowered:
        # The server answered 200 and ended the stream with nothing in it: llama-cpp-python's server does
        # that (without a word) for a prompt longer than its window, where other servers answer HTTP 400.
        return (
            f"The model server at {where} accepted the request but sent no answer at all. llama-cpp-python's "
            "server does this when the conversation is longer than its context window (--n_ctx): set the "
            "context limit (Settings > Options > GeoGPT, or --context-limit) to the server's context size or "
            "less, or start the server with a larger context. Otherwise the server's log says why."
        )
    if status == 400 and _CONTEXT_OVERFLOW.search(lowered):
        # llama.cpp and vLLM refuse a prompt longer than the window they were started with; the plugin's
        # context limit was larger than that window.
        return (
            f"The conversation does not fit in the model's context window. The server at {where} says: "
            f"{_clip(text, 200)} Set the context limit (Settings > Options > GeoGPT, or --context-limit) "
            "to the server's context size or less, or start the server with a larger context."
        )
    if "does not support tools" in lowered or ("tool" in lowered and status == 400):
        return (
            f"The model '{config.model}' cannot call tools, which GeoGPT needs. "
            "Choose a model with tool support (for example qwen3, llama3.1 or mistral-nemo)."
        )
    tries = f" {attempts} times in a row" if attempts > 1 else ""
    asked = retry_after_seconds(exc)
    wait = f" It asks to wait {asked:.0f} s before the next request." if asked is not None and asked >= 1 else ""
    if status == 429:
        return (
            f"The server at {where} is rate-limiting requests (HTTP 429: too many requests){tries}.{wait} "
            "Wait a moment and try again; a hosted service may need a higher quota."
        )
    if status is not None and status >= 500:
        return (
            f"The model server at {where} answered with an error (HTTP {status}): {_clip(text)}{tries}.{wait} "
            "The server may be overloaded or out of memory (its log says why): try again, or pick a smaller model."
        )
    if status is not None:
        return f"The model server at {where} answered with an error (HTTP {status}): {_clip(text)}"
    name = type(exc).__name__
    if name == "ResponseError":  # Ollama reported an error in the middle of its answer
        return f"The Ollama server at {where} stopped with an error: {_clip(text)}. Try again."
    return f"The model call failed ({name}): {_clip(text)}"


# How OpenAI-compatible servers word a prompt longer than their window (llama-cpp-python and vLLM:
# "maximum context length", code context_length_exceeded; llama.cpp's llama-server: "exceeds the
# available context size").
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|exceeds? (?:the )?(?:available )?context"
)


def _status_code(exc: BaseException) -> int | None:
    for attr in ("status_code", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _error_text(exc: BaseException) -> str:
    error = getattr(exc, "error", None)
    if isinstance(error, str) and error:
        return error
    body = getattr(exc, "body", None)  # the OpenAI client's decoded error: {"message": ...} or {"error": {...}}
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str) and message:
            return message
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    return str(exc)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _is_timeout(exc: BaseException) -> bool:
    for item in _chain(exc):
        if isinstance(item, (TimeoutError, socket.timeout)) or "Timeout" in type(item).__name__:
            return True
    return False


# httpx's errors once the connection was made: the server hung up or reset it while answering.
_DROPPED = ("RemoteProtocolError", "ReadError", "WriteError")


def _is_dropped(exc: BaseException) -> bool:
    """Whether the server hung up (or reset the connection) after accepting it, rather than refusing it."""
    for item in _chain(exc):
        if type(item).__name__ in _DROPPED or isinstance(item, (ConnectionResetError, ConnectionAbortedError)):
            return True
        if isinstance(item, BrokenPipeError):
            return True
    return False


def _is_connect_failure(exc: BaseException) -> bool:
    """Whether connecting itself failed (a timeout there means the server is not there)."""
    return any(type(item).__name__ in ("ConnectError", "ConnectTimeout") for item in _chain(exc))


def _unreadable(exc: BaseException) -> str | None:
    """The start of what the server sent, if the failure is a reply that is not JSON.

    Only the failure and its causes (``raise ... from``) count: a JSON error
    that was handled before another failure (``__context__``; a client tries
    ``json.loads`` first, and its fallback failed) says nothing about the reply.
    """
    current: BaseException | None = exc
    seen: list[BaseException] = []
    while current is not None and current not in seen:
        if isinstance(current, json.JSONDecodeError):
            return current.doc[:80]
        seen.append(current)
        current = current.__cause__
    return None


def _is_connection_error(exc: BaseException) -> bool:
    for item in _chain(exc):
        name = type(item).__name__
        if isinstance(item, ConnectionError) or name in ("ConnectError", "ConnectTimeout", "APIConnectionError"):
            return True
        if isinstance(item, OSError) and item.errno is not None:
            return True
    return False


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
