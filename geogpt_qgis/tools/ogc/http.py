"""JSON over HTTP for the OGC API tools: time-outs, Stop, and errors phrased so the model can act on them.

Requests run on a small pool of helper threads while the tool's thread
waits, watching the run's cancel token: Stop returns at once even while a
slow server has not sent its first byte (the abandoned request ends at its
time-out).  The client is the plugin's one HTTP configuration
(``toolbelt.network``: QGIS's proxy, TLS, user agent), as for the model servers.
"""

from __future__ import annotations

import concurrent.futures
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.toolbelt import network
from geogpt_qgis.tools.base import ToolError

ACCEPT = "application/geo+json, application/json;q=0.9, application/schema+json;q=0.8"
MAX_BYTES = 256 * 1024 * 1024  # one page of features; a server that sends more is refused
_POLL_SECONDS = 0.05
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="geogpt-ogc")


@dataclass
class Response:
    """A decoded answer: status, JSON body (``None`` if not JSON), content type, and the server's error text."""

    url: str
    status: int
    body: Any
    content_type: str
    text: str

    def server_message(self) -> str:
        """The server's own explanation of an error (OGC exception ``description``, RFC 7807 ``detail``...)."""
        if isinstance(self.body, dict):
            for key in ("description", "detail", "message", "title", "code"):
                value = self.body.get(key)
                if isinstance(value, str) and value.strip():
                    return value.strip()
        return " ".join(self.text.split())[:300] or f"HTTP {self.status}"


class OgcHttp:
    """One client per tool call (its connections are reused across pages)."""

    def __init__(self, timeout: float, cancel: CancelToken) -> None:
        self.timeout = timeout
        self.cancel = cancel
        self._client = network.client(timeout, connect_timeout=10.0, headers={"Accept": ACCEPT}, follow_redirects=True)

    def __enter__(self) -> OgcHttp:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._client.close()

    def get(self, url: str, params: dict[str, Any] | None = None) -> Response:
        """GET ``url``; raises ``ToolError`` for an unreachable server or a time-out, ``RunCancelled`` on Stop."""
        self.cancel.raise_if_cancelled()
        future = _POOL.submit(self._fetch, url, params)
        while True:
            try:
                return future.result(timeout=_POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                if self.cancel.cancelled:
                    future.cancel()
                    raise RunCancelled("stopped by the user") from None

    def get_json(self, url: str, params: dict[str, Any] | None = None, what: str = "") -> Response:
        """GET a JSON document; any error status becomes a ``ToolError`` carrying the server's message."""
        response = self.get(url, params)
        if response.status >= 400:
            raise ToolError(f"{what or url} failed (HTTP {response.status}): {response.server_message()}")
        if response.body is None:
            raise ToolError(
                f"{url} did not answer with JSON (got {response.content_type or 'no content type'}); "
                "is this an OGC API Features server?"
            )
        return response

    def _fetch(self, url: str, params: dict[str, Any] | None) -> Response:
        import httpx

        host = urlsplit(url).netloc
        try:
            with self._client.stream("GET", url, params=_with_json_format(params)) as reply:
                chunks, size = [], 0
                for chunk in reply.iter_bytes():
                    if self.cancel.cancelled:
                        raise RunCancelled("stopped by the user")
                    size += len(chunk)
                    if size > MAX_BYTES:
                        too_big = f"{host} sent more than {MAX_BYTES // 2**20} MB in one page"
                        raise ToolError(too_big + "; use a smaller limit")
                    chunks.append(chunk)
                raw = b"".join(chunks)
                content_type = reply.headers.get("content-type", "")
                final_url, status = str(reply.url), reply.status_code
        except httpx.TimeoutException:
            raise ToolError(
                f"{host} did not answer within {self.timeout:g} s; try a smaller limit or a bounding box, "
                "or raise the time-out in GeoGPT's settings"
            ) from None
        except httpx.ConnectError as exc:
            refused = network.untrusted_certificate(exc)
            if refused is not None:
                raise ToolError(
                    f"{host}'s certificate is not trusted ({refused}); tell the user: {network.CERTIFICATE_HINT}"
                ) from None
            via = network.proxy_for(url)
            if via is not None:  # the connection that failed may be the proxy's
                raise ToolError(
                    f"cannot reach {host} through the proxy {via} set in QGIS's network settings: {_reason(exc)}. "
                    "Tell the user to check the proxy."
                ) from None
            raise ToolError(f"cannot reach {host}: {_reason(exc)}. Check the URL and that the server is up.") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"the request to {host} failed: {_reason(exc)}") from None
        text = raw.decode("utf-8", errors="replace")
        try:
            body = json.loads(text) if text.strip() else None
        except ValueError:
            body = None
        return Response(final_url, status, body, content_type.split(";")[0].strip(), text)


def _with_json_format(params: dict[str, Any] | None) -> dict[str, Any] | None:
    """Ask for JSON explicitly (``f=json``) unless the URL's own parameters are being followed."""
    if params is None:
        return None
    return {"f": "json", **{k: v for k, v in params.items() if v not in (None, "")}}


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    if "name or service not known" in text.lower() or "nodename nor servname" in text.lower():
        return "unknown host name"
    return text
