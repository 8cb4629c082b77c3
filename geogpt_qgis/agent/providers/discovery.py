"""What a model server offers: its models, their context length, size and tool support.

Uses the plugin's one HTTP configuration (``toolbelt.network``: QGIS's proxy,
TLS, user agent), as the chat clients do, so the dock can fill its model list
without importing LangChain.  Any failure is a ``ServerError`` worded for the user.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.agent.config import PROVIDER_OLLAMA, ModelConfig
from geogpt_qgis.agent.providers.faults import clip
from geogpt_qgis.toolbelt import network

# A model server that does not answer the connection within this time is down.
CONNECT_TIMEOUT = network.CONNECT_TIMEOUT


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
        raise ServerError(f"Cannot reach {where}: {clip(str(exc) or type(exc).__name__)}", unreachable=True) from exc
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
