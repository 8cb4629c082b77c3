"""Where the in-plugin MCP server may listen: loopback by default, another address only when typed out.

Qt-free.  The server answers anyone who can reach it and holds the token, so
it listens on 127.0.0.1 unless the user types the exact address of one of
this machine's interfaces; a wildcard (``0.0.0.0``, ``::``) or a host name
is refused, because it would open the server on every network at once, and
an explicit address is accepted with a warning to show.
"""

from __future__ import annotations

import ipaddress

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765


class BindRefused(ValueError):
    """An address the server will not listen on; the message says what to type instead."""


def check_bind(host: str, port: int) -> str | None:
    """``None`` for a loopback address, a warning for an explicit other one; ``BindRefused`` otherwise."""
    if not 1 <= port <= 65535 and port != 0:
        raise BindRefused(f"port {port} is not a TCP port; use one from 1024 to 65535, e.g. {DEFAULT_PORT}")
    text = host.strip()
    if text.lower() == "localhost":
        return None
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        raise BindRefused(
            f"{host!r} is not an IP address: type the address of the network interface to listen on "
            f"(e.g. 192.168.1.20), or {LOOPBACK} to stay on this machine"
        ) from None
    if address.is_loopback:
        return None
    if address.is_unspecified:
        raise BindRefused(
            f"{text} would listen on every network at once; type the one interface address you mean, "
            f"or {LOOPBACK} to stay on this machine"
        )
    return (
        f"The MCP server listens on {text}:{port}: anyone on that network who has the token can read this "
        "project's data and ask for changes. Use it only on a network you trust."
    )


def server_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"
