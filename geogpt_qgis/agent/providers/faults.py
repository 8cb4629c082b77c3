"""What kind of failure a model call met, read from the exception's type and its causes.

The two HTTP libraries under the chat clients raise different classes with the
same names: langchain-ollama uses httpx, openai 3 its fork httpx2 (each with
httpcore or httpcore2 below it).  ``FAULT_TYPES`` maps the exception types of
all of them, and of openai, pydantic and ollama, to one ``Fault`` vocabulary;
``faults`` reads an exception and its causes against it.  A library is looked
up only if it was imported: one that never ran raised nothing, and reading an
error never imports a client.
"""

from __future__ import annotations

import enum
import json
import sys
from typing import Any


class Fault(enum.Flag):
    """What went wrong on the way to an answer; a failure may be several (a connect timeout: TIMEOUT | CONNECT)."""

    NONE = 0
    TIMEOUT = enum.auto()  # no answer in time: connecting, reading, writing, waiting for a pooled connection
    CONNECT = enum.auto()  # connecting itself failed: refused, no route, or timed out
    CONNECTION = enum.auto()  # a connection failed somewhere (the client or the OS says so)
    DROPPED = enum.auto()  # the server hung up, or reset the connection, after accepting it
    SCHEMA = enum.auto()  # the reply did not fit the client's schema (pydantic's validation)
    STOPPED = enum.auto()  # Ollama reported an error in the middle of its answer


# The same names in httpx, in httpx2 (openai 3's fork), and in httpcore / httpcore2 below them.
HTTP_LIBRARIES = ("httpx", "httpx2", "httpcore", "httpcore2")
_HTTP_FAULTS = (
    ("TimeoutException", Fault.TIMEOUT),  # ConnectTimeout, ReadTimeout, WriteTimeout, PoolTimeout
    ("ConnectTimeout", Fault.CONNECT),
    ("ConnectError", Fault.CONNECT),
    ("RemoteProtocolError", Fault.DROPPED),  # once the connection was made: the server hung up or reset it
    ("ReadError", Fault.DROPPED),
    ("WriteError", Fault.DROPPED),
)

# (module, class) -> what an exception of that class (or a subclass) means; the one mapping.
FAULT_TYPES: tuple[tuple[str, str, Fault], ...] = (
    ("builtins", "TimeoutError", Fault.TIMEOUT),  # socket.timeout and asyncio's are this class
    ("builtins", "ConnectionResetError", Fault.DROPPED),
    ("builtins", "ConnectionAbortedError", Fault.DROPPED),
    ("builtins", "BrokenPipeError", Fault.DROPPED),
    ("builtins", "ConnectionError", Fault.CONNECTION),  # ollama's client raises it when connecting fails
    *((library, name, fault) for library in HTTP_LIBRARIES for name, fault in _HTTP_FAULTS),
    ("openai", "APITimeoutError", Fault.TIMEOUT),
    ("openai", "APIConnectionError", Fault.CONNECTION),
    ("pydantic_core", "ValidationError", Fault.SCHEMA),  # pydantic's (v2) ValidationError is this class
    ("pydantic.v1", "ValidationError", Fault.SCHEMA),
    ("ollama", "ResponseError", Fault.STOPPED),
)


def _types() -> list[tuple[type, Fault]]:
    """``FAULT_TYPES`` resolved in the libraries imported so far."""
    resolved = []
    for module_name, name, fault in FAULT_TYPES:
        module = sys.modules.get(module_name)
        cls = getattr(module, name, None) if module is not None else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            resolved.append((cls, fault))
    return resolved


def fault_of(exc: BaseException, types: list[tuple[type, Fault]] | None = None) -> Fault:
    """What ``exc`` itself (not its causes) is."""
    found = Fault.NONE
    for cls, fault in _types() if types is None else types:
        if isinstance(exc, cls):
            found |= fault
    if isinstance(exc, OSError) and exc.errno is not None:  # the OS failed the connection (refused, no route...)
        found |= Fault.CONNECTION
    return found


def faults(exc: BaseException) -> Fault:
    """What ``exc`` and everything that led to it (causes and contexts) are."""
    types = _types()
    found = Fault.NONE
    for item in chain(exc):
        found |= fault_of(item, types)
    return found


def chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what led to it: each cause (``raise ... from``), else the exception being handled."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def status_code(exc: BaseException) -> int | None:
    """The HTTP status a failed request got, if the failure carries one (httpx, openai and ollama errors do)."""
    for attr in ("status_code", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def error_text(exc: BaseException) -> str:
    """What the server said: Ollama's ``error``, the OpenAI client's decoded body, else the exception's text."""
    error = getattr(exc, "error", None)
    if isinstance(error, str) and error:
        return error
    body: Any = getattr(exc, "body", None)  # the OpenAI client's decoded error: {"message": ...} or {"error": {...}}
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str) and message:
            return message
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    return str(exc)


def unreadable(exc: BaseException) -> str | None:
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


def clip(text: str, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis says where it was cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
