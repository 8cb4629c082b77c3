"""gui/background.py: answers from other threads reach the main thread; a signal given as the callback is emitted.

A signal called as a function raises "native Qt signal is not callable" inside
a queued delivery, and a PyQt application without an exception hook aborts.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future

from qgis.PyQt.QtCore import QObject, pyqtSignal

from geogpt_qgis.gui.background import FutureRelay, LatestAnswers, run_in_background
from tests.support.runs import wait_until


class Receiver(QObject):
    answered = pyqtSignal(object, object)
    result = pyqtSignal(object)
    failed = pyqtSignal(object)


def _no_errors_while(check) -> list[BaseException]:
    errors: list[BaseException] = []
    previous = sys.excepthook
    sys.excepthook = lambda _type, value, _tb: errors.append(value)
    try:
        check()
    finally:
        sys.excepthook = previous
    return errors


def test_a_signal_can_take_the_answers_of_every_helper(qgis_app):
    receiver = Receiver()
    got: list[tuple] = []
    receiver.answered.connect(lambda result, error: got.append(("answer", result, error)))
    receiver.result.connect(lambda result: got.append(("result", result)))
    receiver.failed.connect(lambda error: got.append(("failed", str(error))))
    answers = LatestAnswers(receiver)
    relay = FutureRelay(receiver)

    def check() -> None:
        answers.ask("kind", lambda: 41 + 1, receiver.answered)
        run_in_background(lambda: "direct", receiver.answered)
        done, broken = Future(), Future()
        relay.when_done(done, receiver.result, receiver.failed)
        relay.when_done(broken, receiver.result, receiver.failed)
        threading.Thread(target=lambda: (done.set_result("ok"), broken.set_exception(ValueError("bad")))).start()
        wait_until(lambda: len(got) == 4, 120)

    assert _no_errors_while(check) == []
    assert sorted(got, key=str) == sorted(
        [("answer", 42, None), ("answer", "direct", None), ("result", "ok"), ("failed", "bad")], key=str
    )


def test_a_superseded_answer_is_dropped(qgis_app):
    receiver = Receiver()
    got: list = []
    receiver.answered.connect(lambda result, _error: got.append(result))
    answers = LatestAnswers(receiver)
    gate, finished = threading.Event(), threading.Event()

    def old() -> str:
        gate.wait(5)
        finished.set()
        return "old"

    def check() -> None:
        answers.ask("models", old, receiver.answered)
        answers.ask("models", lambda: "new", receiver.answered)
        wait_until(lambda: got == ["new"], 120)
        gate.set()
        wait_until(finished.is_set, 120)
        settle = time.monotonic() + 0.3  # the old answer's delivery comes and goes
        wait_until(lambda: time.monotonic() > settle, 5)

    assert _no_errors_while(check) == []
    assert got == ["new"]
