"""Model providers: build the chat model, ask the server what it has, explain failures.

Server discovery (model lists, context length, tool support) uses the standard
library's HTTP client, so the dock can fill its model list without importing
LangChain.  ``create_chat_model`` imports langchain-ollama or langchain-openai
only when called.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from geogpt_qgis.agent.config import PROVIDER_OLLAMA, ModelConfig, ModelSetupError

if TYPE_CHECKING:
    import ssl

    from langchain_core.language_models import BaseChatModel

# A model server that does not answer the connection within this time is down.
CONNECT_TIMEOUT = 5.0


@dataclass(frozen=True)
class ModelInfo:
    """What an Ollama server says about a model (``/api/show``)."""

    name: str
    context_length: int | None
    supports_tools: bool | None
    supports_thinking: bool = False


class ServerError(RuntimeError):
    """A model server could not be queried; the message is meant for the user."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def _http_json(url: str, payload: dict[str, Any] | None, timeout: float, api_key: str | None = None) -> Any:
    headers = {"Accept": "application/json"}
    data = None
    if payload is not None:
        data = json.dumps(payload).encode()
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if not url.startswith(("http://", "https://")):
        raise ServerError(f"{url!r} is not an http(s) URL.")
    request = urllib.request.Request(url, data=data, headers=headers)  # noqa: S310 - http(s) checked above
    try:
        # Scheme checked above: only http(s) reaches urlopen.
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310  # nosec B310
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300]
        raise ServerError(f"{url} answered HTTP {exc.code}: {detail}", exc.code) from exc
    except (TimeoutError, urllib.error.URLError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ServerError(f"Cannot reach {url}: {reason}") from exc
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
    capabilities = payload.get("capabilities")
    known = isinstance(capabilities, list)
    supports_tools = ("tools" in capabilities) if known else None
    return ModelInfo(model, context_length, supports_tools, known and "thinking" in capabilities)


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
    import httpx

    if config.provider == PROVIDER_OLLAMA:
        from langchain_ollama import ChatOllama

        return ChatOllama(
            model=config.model,
            base_url=config.base_url,
            temperature=config.temperature,
            num_ctx=num_ctx or config.context_limit,
            reasoning=True if thinking else None,
            client_kwargs={
                "timeout": httpx.Timeout(config.timeout, connect=CONNECT_TIMEOUT),
                "verify": shared_ssl_context(),
            },
        )
    import openai
    from langchain_openai import ChatOpenAI

    timeout = httpx.Timeout(config.timeout, connect=CONNECT_TIMEOUT)
    return ChatOpenAI(
        model=config.model,
        base_url=config.base_url,
        # Local OpenAI-compatible servers (LM Studio, vLLM) accept any key; the client insists on one.
        api_key=config.api_key or "not-needed",
        temperature=config.temperature,
        timeout=timeout,
        max_retries=1,
        stream_usage=True,
        # Own HTTP clients (closed after each run by ``aclose_chat_model``) instead of
        # LangChain's process-wide cached ones, whose connections would outlive the
        # worker's event loop.
        http_client=openai.DefaultHttpxClient(timeout=timeout, verify=shared_ssl_context()),
        http_async_client=openai.DefaultAsyncHttpxClient(timeout=timeout, verify=shared_ssl_context()),
    )


@functools.lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every model client: loading the system's certificates costs ~40 ms each time."""
    import ssl

    return ssl.create_default_context()


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


def explain_model_error(exc: BaseException, config: ModelConfig) -> str:
    """Turn a provider exception into one clear, actionable sentence or two."""
    if isinstance(exc, ModelSetupError):
        return str(exc)
    where = f"{config.base_url}"
    is_ollama = config.provider == PROVIDER_OLLAMA
    name = type(exc).__name__
    status = _status_code(exc)
    text = _error_text(exc)
    if _is_timeout(exc):
        return (
            f"The model server at {where} did not answer within {config.timeout:g} s. "
            "The model may still be loading or the server is overloaded; try again, "
            "or raise the request timeout in the settings."
        )
    if _is_connection_error(exc):
        if is_ollama:
            return (
                f"Cannot reach the Ollama server at {where}. Is Ollama running? "
                "Start it (`ollama serve`) or correct the server URL."
            )
        return f"Cannot reach the model server at {where}. Check the URL and that the server is running."
    lowered = text.lower()
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
    if "does not support tools" in lowered or ("tool" in lowered and status == 400):
        return (
            f"The model '{config.model}' cannot call tools, which GeoGPT needs. "
            "Choose a model with tool support (for example qwen3, llama3.1 or mistral-nemo)."
        )
    if status == 429:
        return f"The server at {where} is rate-limiting requests (HTTP 429). Wait a moment and try again."
    if status is not None:
        return f"The model server at {where} answered with an error (HTTP {status}): {_clip(text)}"
    return f"The model call failed ({name}): {_clip(text)}"


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


def _is_connection_error(exc: BaseException) -> bool:
    for item in _chain(exc):
        name = type(item).__name__
        if isinstance(item, ConnectionError) or name in ("ConnectError", "APIConnectionError", "RemoteProtocolError"):
            return True
        if isinstance(item, OSError) and item.errno is not None:
            return True
    return False


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
