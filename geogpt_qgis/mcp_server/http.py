"""The MCP server over Streamable HTTP, on a thread of its own: bearer token, size limit, clean start and stop.

``uvicorn`` serves the SDK's Starlette app on its own asyncio loop in a
daemon thread; the socket is bound by ``start`` on the caller's thread, so a
port in use is reported at once.  In front of the app, ``BearerGate``
answers 401 to a request without the right token and 413 to one declaring a
body over the limit, before the MCP layer reads anything; the SDK enforces
the same limit on bodies sent without a length.  Tools touch QGIS only
through the tool context's main-thread bridge.

A GET (the standalone stream a client may open for messages the server sends
unasked) gets 405, which the standard allows: this server sends nothing
unasked (a call's progress goes on that call's own response).  Opened, the
stream stayed idle; the MCP Inspector sometimes opened it only after it had
closed its session and then never exited (3 of 20 runs at load 5; none of 32
once refused).
"""

from __future__ import annotations

import hmac
import json
import socket
import threading
from typing import TYPE_CHECKING, Any

from geogpt_qgis.mcp_server.binding import check_bind, server_url

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from geogpt_qgis.mcp_server.tools import McpTools

    Receive = Callable[[], Awaitable[dict[str, Any]]]
    Send = Callable[[dict[str, Any]], Awaitable[None]]

# The most bytes of one request body: a tool call's arguments are small (code and SQL are bounded far below).
MAX_REQUEST_BYTES = 1_000_000


class BearerGate:
    """ASGI middleware: nothing reaches the MCP app without ``Authorization: Bearer <token>`` and a sane size.

    A GET with the token is answered 405: no standalone stream (the module says why).
    """

    def __init__(self, app: Any, token: str, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if not hmac.compare_digest(headers.get(b"authorization", b""), self._expected):
            await _refuse(send, 401, "missing or wrong bearer token: copy it from QGIS (Settings > Options > GeoGPT)")
            return
        if scope.get("method") == "GET":
            await _refuse(
                send, 405, "this server sends nothing unasked: it offers no GET stream", [(b"allow", b"POST, DELETE")]
            )
            return
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.max_bytes:
            await _refuse(send, 413, f"the request is larger than this server accepts ({self.max_bytes:,} bytes)")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="GeoGPT for QGIS"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HttpServer:
    """One running Streamable HTTP server for ``tools``; ``stop`` ends it (calls under way are cancelled)."""

    def __init__(self, tools: McpTools, token: str, host: str, port: int, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.warning = check_bind(host, port)
        self.tools, self.host, self._token, self._max_bytes = tools, host.strip().strip("[]"), token, max_bytes
        self._port = port
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self.failure: BaseException | None = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def token(self) -> str:
        return self._token

    @property
    def url(self) -> str:
        return server_url(self.host, self._port)

    def start(self) -> None:
        """Bind the socket now (``OSError`` if the port is taken) and serve on a daemon thread."""
        import uvicorn

        from geogpt_qgis.mcp_server.server import build_server

        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._port))
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        self._port = sock.getsockname()[1]
        mcp_app = build_server(self.tools).streamable_http_app(host=self.host, max_request_body_size=self._max_bytes)
        app = BearerGate(mcp_app, self._token, self._max_bytes)
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, args=(sock,), name="geogpt-mcp-http", daemon=True)
        self._thread.start()

    def _run(self, sock: socket.socket) -> None:
        try:
            self._server.run(sockets=[sock])
        except BaseException as exc:  # noqa: BLE001 - kept for whoever asks why the server stopped
            self.failure = exc
        finally:
            sock.close()
            if self.tools.run_log is not None:  # its SQLite thread would keep QGIS from exiting
                import asyncio

                asyncio.run(self.tools.run_log.close())

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_started(self, timeout: float = 10.0) -> bool:
        """Whether uvicorn came up within ``timeout`` seconds."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._server is not None and self._server.started:
                return True
            if not self.running:
                return False
            time.sleep(0.02)
        return False

    def stop(self, timeout: float = 5.0) -> None:
        """Ask uvicorn to end and wait for its thread (calls under way are cancelled, their bridge jobs skipped)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
