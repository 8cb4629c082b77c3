"""Which proxy a request takes, by the rules QGIS applies to its own requests (Qt-free).

QGIS keeps the proxy the user set (Settings > Options > Network) under
``proxy/`` in its settings; 3.22 and 3.40 read the same keys
(``QgsNetworkAccessManager::setupDefaultProxyAndCache``): ``proxyEnabled``,
``proxyType`` (``DefaultProxy``, ``HttpProxy``, ``HttpCachingProxy``,
``Socks5Proxy``, ``FtpCachingProxy``), ``proxyHost``, ``proxyPort``,
``proxyUser``, ``proxyPassword``, ``authcfg`` (credentials kept in the
authentication database), ``noProxyUrls`` and ``proxyExcludedUrls``.

QGIS's rules, kept here: a URL that starts with an entry of ``noProxyUrls``
goes direct; one that starts with an entry of ``proxyExcludedUrls`` takes the
system's proxy (QGIS keeps that list for compatibility, with that meaning);
any other URL takes the proxy.  ``DefaultProxy`` means the system's proxy for
every URL, and with the proxy off requests take the system's proxy too, as
QGIS's own do (on Linux: the ``http_proxy``/``no_proxy`` environment).  Loopback
addresses get no exception: QGIS sends them through its proxy unless they are
listed, so ``http://localhost`` belongs in the no-proxy list when a local model
server sits behind a proxy that cannot reach it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

# Routes a request can take besides a proxy URL.
DIRECT = "direct"
SYSTEM = "system"

# QGIS's proxy types that carry HTTP, and the scheme each is reached with.
_SCHEMES = {"HttpProxy": "http", "HttpCachingProxy": "http", "Socks5Proxy": "socks5"}


@dataclass(frozen=True)
class ProxyConfig:
    """QGIS's proxy: ``url`` (``None``: the system's), and the URL prefixes that go direct or to the system's."""

    url: str | None = None
    no_proxy: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    authcfg: str = ""  # credentials to take from QGIS's authentication database (``with_credentials``)

    def route(self, url: str) -> str:
        """``DIRECT``, ``SYSTEM`` or the proxy URL that a request for ``url`` goes through."""
        if any(url.startswith(prefix) for prefix in self.no_proxy):
            return DIRECT
        if self.url is None or any(url.startswith(prefix) for prefix in self.excluded):
            return SYSTEM
        return self.url

    def with_credentials(self, user: str, password: str) -> ProxyConfig:
        """The same proxy, logged in as ``user`` (from the authentication database)."""
        if self.url is None or not user:
            return self
        scheme, _, rest = self.url.partition("://")
        address = rest.rpartition("@")[2]
        return ProxyConfig(f"{scheme}://{_userinfo(user, password)}@{address}", self.no_proxy, self.excluded)

    def describe(self) -> str:
        """The proxy without its password, for messages and logs."""
        if self.url is None:
            return "the system's proxy settings"
        scheme, _, rest = self.url.partition("://")
        return f"{scheme}://{rest.rpartition('@')[2]}"


def proxy_from_settings(value: Callable[[str], object]) -> ProxyConfig:
    """The proxy described by QGIS's settings; ``value(key)`` is the setting ``proxy/<key>`` (``None`` if unset)."""
    if not _flag(value("proxyEnabled")):
        return ProxyConfig()
    no_proxy = _prefixes(value("noProxyUrls"))
    excluded = _prefixes(value("proxyExcludedUrls"))
    authcfg = str(value("authcfg") or "").strip()
    scheme = _SCHEMES.get(str(value("proxyType") or ""))
    host = str(value("proxyHost") or "").strip()
    if scheme is None or not host:  # DefaultProxy (the system's), an FTP-only proxy, or no host
        return ProxyConfig(None, no_proxy, excluded)
    port = _port(value("proxyPort"))
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    address = f"{host}:{port}" if port else host
    user = str(value("proxyUser") or "")
    login = f"{_userinfo(user, str(value('proxyPassword') or ''))}@" if user else ""
    return ProxyConfig(f"{scheme}://{login}{address}", no_proxy, excluded, authcfg)


def _userinfo(user: str, password: str) -> str:
    return quote(user, safe="") + (":" + quote(password, safe="") if password else "")


def _flag(raw: object) -> bool:
    if isinstance(raw, str):
        return raw.strip().lower() in ("true", "1", "yes")
    return bool(raw)


def _port(raw: object) -> int:
    """QGIS stores the port as text (``toString().toInt()``): anything else counts as no port."""
    try:
        port = int(str(raw).strip())
    except ValueError:
        return 0
    return port if 0 < port < 65536 else 0


def _prefixes(raw: object) -> tuple[str, ...]:
    """A settings list (QSettings gives a list, one string for a single entry, or ``None``), empty entries dropped.

    QGIS drops empty entries too: an empty prefix would match every URL.
    """
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, (list, tuple)) else []
    return tuple(item.strip() for item in items if isinstance(item, str) and item.strip())
