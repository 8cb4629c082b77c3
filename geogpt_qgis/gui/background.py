"""Run a short blocking call (an HTTP request) off the main thread, deliver the result on it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from qgis.PyQt.QtCore import QObject, pyqtSignal


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
