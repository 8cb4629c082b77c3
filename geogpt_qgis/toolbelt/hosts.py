"""Whether a server address is on this machine or its network: such servers (Ollama, LM Studio, vLLM) often need no key.

Shared by both front ends: the command line refuses to start without a key
for a remote server, the dock's server picker shows a hint instead of asking it.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_local_server(url: str) -> bool:
    """Whether ``url`` points at this machine or the local network (where servers often need no key)."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local
