"""Ports on 127.0.0.1 for tests."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
