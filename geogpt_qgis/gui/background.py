"""Results of work done off the main thread, delivered on it: the dock's one way back from other threads.

``run_in_background`` runs a short blocking call (an HTTP request, the
keychain) on a daemon thread; ``FutureRelay`` hands over the outcome of a
``concurrent.futures.Future`` completed elsewhere (the agent's worker answering
questions about its store).  Both deliver through a queued Qt signal of an
object living on the main thread, and never make the main thread wait; the
opposite direction (a worker waiting for the main thread) is
``toolbelt.main_thread``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from qgis.PyQt.QtCore import QObject, pyqtBoundSignal, pyqtSignal


def _callable(callback: Callable[..., Any]) -> Callable[..., Any]:
    """A signal given as a callback is emitted: called, it would raise in a slot (and a bare PyQt app aborts)."""
    return callback.emit if isinstance(callback, pyqtBoundSignal) else callback


class _Relay(QObject):
    done = pyqtSignal(object, object)  # result, error


_live: set[_Relay] = set()


def run_in_background(work: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]) -> None:
    """Call ``work()`` on a daemon thread; ``on_done(result, error)`` runs later on the main thread.

    Pass a bound method of a widget as ``on_done``: if the widget is deleted
    first, PyQt drops the connection and the result with it.
    """
    relay = _Relay()  # created here, on the main thread, so delivery is queued to it
    _live.add(relay)
    relay.done.connect(on_done)
    relay.done.connect(lambda *_: _live.discard(relay))

    def target() -> None:
        try:
            result, error = work(), None
        except BaseException as exc:  # noqa: BLE001 - delivered to the callback
            result, error = None, exc
        relay.done.emit(result, error)

    threading.Thread(target=target, daemon=True, name="geogpt-background").start()


class LatestAnswers(QObject):
    """Background questions where only the newest answer of each kind counts.

    Each ``ask`` supersedes the earlier question of its kind, and ``forget``
    drops every question in flight (the user switched servers): an answer that
    arrives late, for a server or a question the widget has left, is dropped
    instead of overwriting what the newer answer showed.  A child of the widget
    it answers: deleted with it, so no answer reaches a deleted widget.
    """

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._asked: dict[str, tuple[object, Callable[[Any, BaseException | None], None]]] = {}

    def ask(self, kind: str, work: Callable[[], Any], on_answer: Callable[[Any, BaseException | None], None]) -> None:
        """Run ``work`` in the background; ``on_answer(result, error)`` on the main thread unless superseded."""
        token = object()
        self._asked[kind] = (token, _callable(on_answer))

        def tagged() -> tuple[str, object, Any, BaseException | None]:
            try:
                return kind, token, work(), None
            except Exception as exc:  # noqa: BLE001 - handed to on_answer
                return kind, token, None, exc

        run_in_background(tagged, self._arrived)

    def forget(self) -> None:
        """Drop the answers of every question in flight."""
        self._asked.clear()

    def _arrived(self, tagged: tuple[str, object, Any, BaseException | None], _error: BaseException | None) -> None:
        kind, token, result, error = tagged
        asked = self._asked.get(kind)
        if asked is None or asked[0] is not token:
            return  # superseded: a newer question, or another server since
        del self._asked[kind]
        asked[1](result, error)


log = logging.getLogger(__name__)


class FutureRelay(QObject):
    """``when_done(future, on_result, on_error)``: the callbacks run on this object's (main) thread.

    Make it a child of the widget it serves: deleted with it, so no outcome reaches a deleted widget.
    """

    _finished = pyqtSignal(object, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._finished.connect(self._deliver)

    def when_done(
        self,
        future: Future,
        on_result: Callable[[Any], None],
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        callbacks = (_callable(on_result), _callable(on_error) if on_error is not None else None)
        future.add_done_callback(lambda f: self._relay(f, callbacks))

    def _relay(self, future: Future, callbacks: tuple) -> None:
        with contextlib.suppress(RuntimeError):  # the widget (and this relay with it) is gone: nobody to tell
            self._finished.emit(future, callbacks)

    def _deliver(self, future: Future, callbacks: tuple) -> None:
        on_result, on_error = callbacks
        if future.cancelled():
            return
        error = future.exception()
        if error is None:
            on_result(future.result())
        elif on_error is not None:
            on_error(error)
        else:
            log.warning("background step failed: %s: %s", type(error).__name__, error)
