"""Ports on 127.0.0.1 for tests."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def free_port() -> int:
    """A port nothing listens on right now (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def silent_server() -> Iterator[str]:
    """A URL whose server accepts connections and never answers (for time-outs)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def hanging_up_server() -> Iterator[str]:
    """A URL whose server reads one request, then closes the connection without a word."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)

        def serve() -> None:
            connection, _ = sock.accept()
            with connection:
                connection.recv(65536)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        thread.join(5)
