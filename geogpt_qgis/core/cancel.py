"""Cooperative cancellation shared by the agent, its tools and the Stop button."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from contextvars import ContextVar


class RunCancelled(Exception):
    """Raised inside a tool when the user pressed Stop."""


class CancelToken:
    """A thread-safe flag plus callbacks fired once on cancel.

    Tools poll ``raise_if_cancelled()`` in their loops; long native operations
    (a QgsFeedback, a database query) register a callback that aborts them.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Set the flag and fire the registered callbacks (each at most once)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            # A failing abort must not stop the others.
            with contextlib.suppress(Exception):
                callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Register ``callback``; return a function that unregisters it.

        If the token is already cancelled the callback runs at once.
        """
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._discard(callback)
        callback()
        return lambda: None

    def _discard(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise RunCancelled("stopped by the user")

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; return True early if cancelled."""
        return self._event.wait(timeout)


# The token of the run the current code belongs to.  asyncio tasks and
# ``asyncio.to_thread`` copy context variables, so a tool still running after
# its run was stopped keeps seeing its own (cancelled) token, never the token
# of the next run.
_NEVER_CANCELLED = CancelToken()
current_cancel_token: ContextVar[CancelToken] = ContextVar("geogpt_cancel_token", default=_NEVER_CANCELLED)

# The conversation (LangGraph thread) the running code belongs to; tools keep per-conversation state by it.
current_conversation: ContextVar[str] = ContextVar("geogpt_conversation", default="")
