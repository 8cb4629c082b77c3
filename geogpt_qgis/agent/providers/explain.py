"""A failed model call in the user's words: what happened, and what to do about it.

``explain_model_error`` words a server that cannot be reached, one that hangs
up in the middle of an answer, one that sends what is not JSON, one that says
"too many requests" or fails, a model that is missing or cannot call tools.
What kind of failure it was comes from the exception's type
(``providers.faults``), the same for both HTTP libraries; what the server said
from its status and its error text.
"""

from __future__ import annotations

import re

from geogpt_qgis.agent.config import PROVIDER_OLLAMA, ModelConfig, ModelSetupError
from geogpt_qgis.agent.providers.discovery import ServerError
from geogpt_qgis.agent.providers.faults import Fault, clip, error_text, fault_of, faults, status_code, unreadable
from geogpt_qgis.agent.providers.retries import RetriesExhausted, retry_after_seconds
from geogpt_qgis.toolbelt import network

# How OpenAI-compatible servers word a prompt longer than their window (llama-cpp-python and vLLM:
# "maximum context length", code context_length_exceeded; llama.cpp's llama-server: "exceeds the
# available context size").
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|exceeds? (?:the )?(?:available )?context"
)


def _reply_problem(exc: BaseException, config: ModelConfig, text: str) -> str | None:
    """What went wrong on the way (connection, time, a reply that cannot be read), or ``None``."""
    where = f"{config.base_url}"
    is_ollama = config.provider == PROVIDER_OLLAMA
    found = faults(exc)
    if Fault.DROPPED in found and not isinstance(exc, ServerError):  # ServerError: a model-list query, not an answer
        return (
            f"The model server at {where} closed the connection in the middle of its answer, so the answer "
            "was cut off. The server may have crashed, restarted or run out of memory (its log says why). "
            "The conversation is kept up to the last finished step: send your message again."
        )
    if Fault.TIMEOUT in found and Fault.CONNECT not in found:
        return (
            f"The model server at {where} did not answer within {config.timeout:g} s. "
            "The model may still be loading or the server is overloaded; try again, "
            "or raise the request timeout in the settings."
        )
    refused = network.untrusted_certificate(exc)
    if refused is not None:
        return f"The certificate of the model server at {where} is not trusted ({refused}). {network.CERTIFICATE_HINT}"
    if found & (Fault.CONNECT | Fault.CONNECTION):
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
    if unreadable(exc) is not None:
        return (
            f"The model server at {where} sent a reply that is not valid JSON, so it could not be read "
            f"({clip(unreadable(exc) or '', 80)!r}). Check that the URL points to {server_kind} and not "
            "to a proxy or a web page; if it does, send your message again."
        )
    if Fault.SCHEMA in found:  # the client's reply schema
        return (
            f"The model server at {where} sent a reply in a form GeoGPT cannot read "
            f"({clip(text.splitlines()[0] if text else type(exc).__name__, 120)}). Check that the URL points to "
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
    status = status_code(exc)
    text = error_text(exc)
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
            f"{clip(text, 200)} Set the context limit (Settings > Options > GeoGPT, or --context-limit) "
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
            f"The model server at {where} answered with an error (HTTP {status}): {clip(text)}{tries}.{wait} "
            "The server may be overloaded or out of memory (its log says why): try again, or pick a smaller model."
        )
    if status is not None:
        return f"The model server at {where} answered with an error (HTTP {status}): {clip(text)}"
    if Fault.STOPPED in fault_of(exc):  # Ollama reported an error in the middle of its answer
        return f"The Ollama server at {where} stopped with an error: {clip(text)}. Try again."
    return f"The model call failed ({type(exc).__name__}): {clip(text)}"


# How OpenAI-compatible servers word a prompt longer than their window (llama-cpp-python and vLLM:
# "maximum context length", code context_length_exceeded; llama.cpp's llama-server: "exceeds the
# available context size").
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|exceeds? (?:the )?(?:available )?context"
)
