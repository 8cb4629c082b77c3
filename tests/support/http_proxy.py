"""A small forwarding HTTP proxy on 127.0.0.1 that records every request it carries.

Tests point QGIS's proxy settings (or the environment's) at it and check which
requests went through it.  It speaks plain HTTP only (absolute URLs, no
CONNECT): the test servers are all ``http://127.0.0.1``.  With ``login`` set
it wants that user and password (``Proxy-Authorization: Basic``) and answers
407 without them, as a real proxy does.
"""

from __future__ import annotations

import base64
import http.client
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# Headers that belong to one connection, not to the request: a proxy does not pass them on.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}


@dataclass(frozen=True)
class Carried:
    """One request the proxy was asked to carry: its method, absolute URL and proxy credentials header."""

    method: str
    url: str
    proxy_authorization: str | None


class RecordingProxy:
    """``with RecordingProxy() as proxy:`` serves on ``proxy.port``; ``proxy.carried`` lists the requests."""

    def __init__(self, login: tuple[str, str] | None = None) -> None:
        self.login = login
        self.carried: list[Carried] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-proxy", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def urls(self) -> list[str]:
        with self._lock:
            return [item.url for item in self.carried]

    def record(self, item: Carried) -> None:
        with self._lock:
            self.carried.append(item)

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    expected = None
    if proxy.login is not None:
        expected = "Basic " + base64.b64encode(":".join(proxy.login).encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:  # quiet
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            authorization = self.headers.get("Proxy-Authorization")
            proxy.record(Carried(self.command, self.path, authorization))
            target = urlsplit(self.path)
            if target.scheme != "http" or not target.hostname:
                self._answer(400, b"this test proxy carries absolute http:// URLs only")
                return
            if expected is not None and authorization != expected:
                self._answer(407, b"proxy login required", {"Proxy-Authenticate": 'Basic realm="test"'})
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            path = target.path or "/"
            if target.query:
                path += "?" + target.query
            upstream = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=60)
            try:
                upstream.request(self.command, path, body=body, headers=headers)
                reply = upstream.getresponse()
                data = reply.read()
                kept = {k: v for k, v in reply.getheaders() if k.lower() not in _HOP_BY_HOP}
                self._answer(reply.status, data, kept)
            except OSError as exc:
                self._answer(502, f"upstream failed: {exc}".encode())
            finally:
                upstream.close()

        def _answer(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _forward  # noqa: N815 - http.server's names

    return Handler
