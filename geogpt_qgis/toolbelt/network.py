"""One HTTP configuration for every request the plugin sends: model servers and OGC API servers alike.

httpx is the one client (the model packages bring it).  It is imported when
the first request is made, on a worker thread, never at QGIS start-up.  What
every client made here shares:

- QGIS's proxy (Settings > Options > Network), read from QGIS's settings when
  the client is made (each thread its own ``QgsSettings``: QSettings is
  reentrant) and applied to each request by QGIS's own rules
  (``core.proxy``); proxy credentials kept in QGIS's authentication database
  are read on the main thread, where the authentication manager belongs.
- One TLS context: the system's certificate authorities and those QGIS trusts
  (``ssl_context``), made once, when the first client is made.
- The plugin's user agent, ahead of the library's own.
- A bound on connecting; the caller gives the read time-out.

pip, run by the dependency installer, gets the same proxy through its
environment (``proxy_environment``).  Whatever needs the main thread (the
stored login, the authorities) is read when a client is made, on the
caller's thread, never on a helper thread the main thread may be waiting for.

Clients set ``trust_env=False``: the environment's proxy variables are
applied by the routing transport when QGIS says "the system's proxy", never
around it.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from geogpt_qgis.__about__ import VERSION
from geogpt_qgis.core.proxy import DIRECT, SYSTEM, ProxyConfig, proxy_from_settings

if TYPE_CHECKING:
    import ssl

    import httpx

USER_AGENT = f"GeoGPT-QGIS/{VERSION}"
# A server that does not take the connection within this time is not there.
CONNECT_TIMEOUT = 5.0
# Seconds the main thread gets to hand over the proxy's stored credentials (it may ask for the master password).
CREDENTIALS_TIMEOUT = 120.0


def proxy_config() -> ProxyConfig:
    """QGIS's proxy as the user set it now, with its login (no proxy outside QGIS, e.g. plain Python)."""
    config = _settings_proxy()
    if config.authcfg and config.url is not None:
        user, password = _stored_credentials(config.authcfg)
        config = config.with_credentials(user, password)
    return config


def proxy_for(url: str) -> str | None:
    """The proxy a request for ``url`` takes now (without its password), for messages; ``None``: none.

    Never asks for the stored login, so it is safe on the main thread.
    """
    route = _settings_proxy().route(url)
    if route == SYSTEM:
        parts = urlsplit(url)
        route = _system_route(parts.scheme, parts.hostname or "")
    return None if route == DIRECT else ProxyConfig(route).describe()


def _settings_proxy() -> ProxyConfig:
    """QGIS's proxy settings, without the login kept in the authentication database."""
    try:
        from qgis.core import QgsSettings
        from qgis.PyQt.QtCore import QCoreApplication
    except ImportError:
        return ProxyConfig()
    if QCoreApplication.instance() is None:
        return ProxyConfig()
    settings = QgsSettings()
    return proxy_from_settings(lambda key: settings.value(f"proxy/{key}"))


def untrusted_certificate(exc: BaseException) -> str | None:
    """Why the server's certificate was refused, if that is what ``exc`` (or what caused it) is; else ``None``."""
    import ssl

    seen: set[int] = set()
    item: BaseException | None = exc
    while item is not None and id(item) not in seen:
        if isinstance(item, ssl.SSLCertVerificationError):
            return item.verify_message or str(item)
        seen.add(id(item))
        item = item.__cause__ or item.__context__
    return None


CERTIFICATE_HINT = (
    "If your organisation signs its own certificates, add its authority in QGIS "
    "(Settings > Options > Authentication > Certificate Manager) and start QGIS again."
)


def proxy_environment(url: str, proxy: ProxyConfig | None = None) -> dict[str, str]:
    """Variables that give a child process (pip) QGIS's proxy for ``url``; empty where QGIS says the system's.

    pip takes one proxy for everything, from the environment (never its
    command line, which other users of the machine can read).
    """
    route = (proxy if proxy is not None else proxy_config()).route(url)
    if route == SYSTEM:
        return {}  # the child inherits the system's settings
    if route == DIRECT:
        return {"no_proxy": "*", "NO_PROXY": "*"}
    return dict.fromkeys(("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"), route)


def _stored_credentials(authcfg: str) -> tuple[str, str]:
    """The proxy's user and password from the authentication configuration ``authcfg`` (main thread)."""
    from geogpt_qgis.toolbelt.main_thread import call_on_main_thread

    def read() -> tuple[str, str]:
        from qgis.core import QgsApplication
        from qgis.PyQt.QtNetwork import QNetworkProxy

        manager = QgsApplication.authManager()
        proxy = QNetworkProxy()
        if manager is None or manager.isDisabled() or not manager.updateNetworkProxy(proxy, authcfg):
            return "", ""
        return proxy.user(), proxy.password()

    try:
        return call_on_main_thread(read, timeout=CREDENTIALS_TIMEOUT)
    except TimeoutError:
        return "", ""  # the proxy will ask for them (HTTP 407), and the user is told


_context: ssl.SSLContext | None = None
_context_lock = threading.Lock()


def ssl_context() -> ssl.SSLContext:
    """One TLS context for every client, made once per QGIS session (loading certificates costs ~40 ms).

    It trusts the system's certificate authorities and those QGIS trusts
    (Settings > Options > Authentication > Certificate Manager: a company's
    root, say), read from the authentication manager on the main thread.  An
    authority added later counts from the next QGIS start.
    """
    global _context  # one per process
    if _context is None:
        import ssl

        context = ssl.create_default_context()
        known = set(context.get_ca_certs(binary_form=True))
        added = [der for der in _qgis_authorities() if der not in known]  # not under the lock: it waits for main
        if added:
            context.load_verify_locations(cadata=b"".join(added))
        with _context_lock:
            if _context is None:
                _context = context
    return _context


def _qgis_authorities() -> list[bytes]:
    """The certificate authorities QGIS trusts (DER), none outside QGIS or with its manager disabled.

    They include the system's, which the context has already: only the others
    are loaded (loading holds the interpreter, ~0.6 ms a certificate).
    """
    try:
        from qgis.PyQt.QtCore import QCoreApplication
    except ImportError:
        return []
    if QCoreApplication.instance() is None:
        return []
    from geogpt_qgis.toolbelt.main_thread import call_on_main_thread

    def read() -> list[bytes]:
        from qgis.core import QgsApplication

        manager = QgsApplication.authManager()
        if manager is None or manager.isDisabled():
            return []
        return [bytes(cert.toDer()) for cert in manager.trustedCaCertsCache()]

    try:
        return call_on_main_thread(read, timeout=CREDENTIALS_TIMEOUT)
    except TimeoutError:
        return []


def timeout(read: float, connect: float = CONNECT_TIMEOUT) -> httpx.Timeout:
    """``read`` seconds for an answer, at most ``connect`` (and never more than ``read``) to connect."""
    import httpx

    return httpx.Timeout(read, connect=min(read, connect))


def transport(for_client: type | None = None, proxy: ProxyConfig | None = None) -> Any:
    """A transport for clients made elsewhere (the model packages): QGIS's proxy, TLS and user agent.

    ``for_client`` is the client class it will serve when that is not
    ``httpx.Client``: the openai package runs on httpx2, httpx's successor
    with the same interface, whose clients take only httpx2 transports (so
    the type is ``Any``: an ``httpx`` or an ``httpx2`` transport).
    """
    return _router_classes(_library(for_client))[0](proxy if proxy is not None else proxy_config())


def async_transport(for_client: type | None = None, proxy: ProxyConfig | None = None) -> Any:
    """The asynchronous ``transport``."""
    return _router_classes(_library(for_client))[1](proxy if proxy is not None else proxy_config())


def client(
    read_timeout: float, connect_timeout: float = CONNECT_TIMEOUT, headers: dict[str, str] | None = None, **options: Any
) -> httpx.Client:
    """A client with the shared configuration; ``options`` go to ``httpx.Client`` (e.g. ``follow_redirects``)."""
    import httpx

    return httpx.Client(
        timeout=timeout(read_timeout, connect_timeout),
        headers={"User-Agent": USER_AGENT, **(headers or {})},
        transport=transport(),
        trust_env=False,
        **options,
    )


def _library(client_class: type | None) -> str:
    """The httpx-like package (``httpx`` or ``httpx2``) whose ``Client`` ``client_class`` is or extends."""
    if client_class is None:
        return "httpx"
    for cls in client_class.__mro__:
        root = cls.__module__.split(".")[0]
        if cls.__name__ in ("Client", "AsyncClient") and root.startswith("httpx"):
            return root
    raise TypeError(f"{client_class.__name__} is not an httpx client")


# -- routing each request by QGIS's rules -------------------------------------------------------
def _system_route(scheme: str, host: str) -> str:
    """``DIRECT`` or the proxy URL the system's settings give for ``scheme://host`` (the environment on Linux)."""
    import urllib.request

    proxies = urllib.request.getproxies()
    chosen = proxies.get(scheme) or proxies.get("all")
    if not chosen or urllib.request.proxy_bypass(host):
        return DIRECT
    return chosen if "://" in chosen else f"http://{chosen}"


def _stamp(request: httpx.Request) -> None:
    """Put the plugin's name ahead of the library's in the user agent."""
    agent = request.headers.get("User-Agent", "")
    if not agent.startswith(USER_AGENT):
        request.headers["User-Agent"] = f"{USER_AGENT} {agent}".strip()


class _Routes:
    """The transports a client's requests may take (one per route, made on first use), chosen per request."""

    def __init__(self, library: Any, proxy: ProxyConfig, make: Callable[[str | None], Any]) -> None:
        self.library = library
        self.proxy = proxy
        self._make = make
        self._made: dict[str, Any] = {}
        self._lock = threading.Lock()

    def pick(self, request: httpx.Request) -> Any:
        _stamp(request)
        route = self.proxy.route(str(request.url))
        if route == SYSTEM:
            route = _system_route(request.url.scheme, request.url.host)
        with self._lock:
            made = self._made.get(route)
            if made is None:
                try:
                    made = self._make(None if route == DIRECT else route)
                except ImportError:  # a SOCKS proxy without the socksio package
                    raise self.library.ProxyError(
                        f"the proxy {route.rpartition('@')[2]} is a SOCKS proxy, which needs the Python package "
                        "socksio: install it, or set an HTTP proxy in QGIS's network settings",
                        request=request,
                    ) from None
                self._made[route] = made
            return made

    def all(self) -> list[Any]:
        with self._lock:
            return list(self._made.values())


@functools.cache
def _router_classes(library: str) -> tuple[type, type]:
    """The sync and async routing transports of ``library`` (made on first use: httpx is imported only then)."""
    lib = importlib.import_module(library)
    sync_base: Any = lib.BaseTransport
    async_base: Any = lib.AsyncBaseTransport

    class Router(sync_base):  # type: ignore[misc]  # the library is chosen at run time, so its base is Any
        def __init__(self, proxy: ProxyConfig) -> None:
            tls = ssl_context()  # here, on the caller's thread: requests may run where the main thread cannot answer
            self.routes = _Routes(lib, proxy, lambda url: lib.HTTPTransport(verify=tls, proxy=url))

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response: httpx.Response = self.routes.pick(request).handle_request(request)
            return response

        def close(self) -> None:
            for made in self.routes.all():
                made.close()

    class AsyncRouter(async_base):  # type: ignore[misc]  # as Router
        def __init__(self, proxy: ProxyConfig) -> None:
            tls = ssl_context()
            self.routes = _Routes(lib, proxy, lambda url: lib.AsyncHTTPTransport(verify=tls, proxy=url))

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response: httpx.Response = await self.routes.pick(request).handle_async_request(request)
            return response

        async def aclose(self) -> None:
            for made in self.routes.all():
                await made.aclose()

    return Router, AsyncRouter
