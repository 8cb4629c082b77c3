"""Chat streams checked and repaired line by line, in the HTTP transport below the client libraries.

Tool calls are bounded and made safe as they arrive, before langchain-ollama or
the openai client parses them (``agent.call_arguments``): arguments too long or
too deep become a tool error with the size and the bound; Ollama arguments
that are not JSON become invalid tool calls, which the model is asked to send
again, as on the OpenAI protocol.  The transport classes are made on first use
for the library of the transport they wrap: httpx (langchain-ollama) or httpx2
(openai 3), which have the same names.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from geogpt_qgis.agent.call_arguments import ToolCallStreamRepair, decode_tool_arguments

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

    class Lines(httpx.SyncByteStream):  # type: ignore[misc]  # the library is chosen at run time: Any
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

    class AsyncLines(httpx.AsyncByteStream):  # type: ignore[misc]  # as Lines
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

    class Transport(httpx.BaseTransport):  # type: ignore[misc]  # as Lines
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            return wrapped(request, self.inner.handle_request(_uncompressed(request)), Lines)

        def close(self) -> None:
            self.inner.close()

    class AsyncTransport(httpx.AsyncBaseTransport):  # type: ignore[misc]  # as Lines
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
