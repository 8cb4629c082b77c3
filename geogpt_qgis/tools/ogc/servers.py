"""Which OGC API Features servers the agent may talk to: those in the settings, and URLs the user typed.

The model never reaches a server on its own initiative: a server is either
configured (Settings > GeoGPT, one per line, ``Name = URL`` or just a URL) or
its URL appears in one of the user's own messages in this conversation.  That
keeps a prompt-injected instruction from sending project data to a host of
its choosing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from geogpt_qgis.core.fuzzy import closest_names
from geogpt_qgis.tools.base import ToolError

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+", re.IGNORECASE)
# Path endings that point inside a server; the landing page is what is left.
_INNER = re.compile(r"/(collections(/.*)?|conformance|openapi)/?$", re.IGNORECASE)


@dataclass(frozen=True)
class OgcServer:
    """A server by the name the user knows it by and the URL of its landing page."""

    name: str
    url: str


def landing_url(url: str) -> str:
    """``https://x.org/ogc/collections/roads/items?f=json`` -> ``https://x.org/ogc`` (no query, no slash)."""
    parts = urlsplit(url.strip().rstrip(".,;:"))
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ToolError(f"{url!r} is not an http(s) URL")
    path = _INNER.sub("", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme.lower(), parts.netloc, path.rstrip("/"), "", ""))


def parse_servers(text: str) -> list[OgcServer]:
    """The servers of the setting: one per line (or separated by ``;``), ``Name = URL`` or a bare URL."""
    servers: list[OgcServer] = []
    for entry in re.split(r"[\n;]", text or ""):
        entry = entry.strip()
        if not entry or entry.startswith("#"):
            continue
        name, _, url = entry.rpartition("=") if "=" in entry.split("://")[0] else ("", "", entry)
        try:
            url = landing_url(url)
        except ToolError:
            continue  # the options page validates; a broken line here is skipped, not fatal
        servers.append(OgcServer(name.strip() or urlsplit(url).netloc, url))
    return servers


def urls_in(text: str) -> list[str]:
    """The landing URLs of every http(s) link in ``text``."""
    found = []
    for match in _URL.findall(text or ""):
        try:
            found.append(landing_url(match))
        except ToolError:
            continue
    return list(dict.fromkeys(found))


class ServerDirectory:
    """Resolve what the model names (a configured name, a URL, or nothing) to a server it may use."""

    def __init__(self, configured: list[OgcServer], mentioned: list[str]) -> None:
        self.configured = configured
        self.mentioned = [url for url in mentioned if url not in {s.url for s in configured}]

    def all(self) -> list[OgcServer]:
        return [*self.configured, *(OgcServer(urlsplit(url).netloc, url) for url in self.mentioned)]

    def describe(self) -> str:
        servers = self.all()
        if not servers:
            return "No OGC API Features server is configured; the user can give one's URL in the chat."
        return "OGC API Features servers: " + "; ".join(f"{s.name!r} ({s.url})" for s in servers)

    def resolve(self, server: str) -> OgcServer:
        servers = self.all()
        wanted = (server or "").strip()
        if not wanted:
            if len(servers) == 1:
                return servers[0]
            if not servers:
                raise ToolError("no OGC API Features server is configured; ask the user for the server's URL")
            raise ToolError("name the server: " + ", ".join(repr(s.name) for s in servers))
        if "://" in wanted:
            url = landing_url(wanted)
            for candidate in servers:
                if candidate.url == url:
                    return candidate
            raise ToolError(
                f"{url} is neither configured nor given by the user in this conversation; "
                "ask the user to paste the server's URL, or to add it in GeoGPT's settings"
            )
        for candidate in servers:
            if candidate.name.lower() == wanted.lower():
                return candidate
        close = closest_names(wanted, [s.name for s in servers])
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else self.describe()
        raise ToolError(f"no OGC API server named {wanted!r}; {hint}")
