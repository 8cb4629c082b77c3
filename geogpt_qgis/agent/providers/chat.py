"""The LangChain chat model for a model configuration, and closing its connections after a run.

``create_chat_model`` imports langchain-ollama or langchain-openai only when
called.  Both clients run on the plugin's one HTTP configuration
(``toolbelt.network``: QGIS's proxy, TLS, user agent) under the stream-repair
transport (``providers.transports``); every request bounds the reply's length;
the clients' own retries are off (``providers.retries`` retries, the same way
for both protocols).
"""

from __future__ import annotations

import contextlib
import functools
import urllib.parse
from typing import TYPE_CHECKING, Any

from geogpt_qgis.agent.config import PROVIDER_OLLAMA, ModelConfig
from geogpt_qgis.agent.providers.discovery import CONNECT_TIMEOUT
from geogpt_qgis.agent.providers.transports import StreamRepairTransport
from geogpt_qgis.toolbelt import network

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_openai import ChatOpenAI


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
            sync_client_kwargs={"transport": StreamRepairTransport(network.transport(proxy=proxy))},
            async_client_kwargs={"transport": StreamRepairTransport(network.async_transport(proxy=proxy))},
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
def _local_chat_openai() -> type[ChatOpenAI]:
    """``ChatOpenAI`` sending an assistant message without text as ``""`` rather than ``null``.

    LangChain sends ``"content": null`` beside tool calls, as OpenAI's API
    prefers; llama-cpp-python's server refuses the whole request with HTTP 500
    ("Input should be a valid string"), so every conversation there broke at
    the call after its first tool call.  The other local servers take ``""``.
    """
    from langchain_openai import ChatOpenAI

    class LocalServerChatOpenAI(ChatOpenAI):
        def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
            payload = super()._get_request_payload(input_, stop=stop, **kwargs)
            for message in payload.get("messages", []):
                if message.get("role") == "assistant" and message.get("content") is None:
                    message["content"] = ""
            return payload

    return LocalServerChatOpenAI


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
