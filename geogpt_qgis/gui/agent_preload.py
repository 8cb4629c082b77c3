"""The agent stack imported in the background once QGIS has started and sat idle, so the first question need not wait.

LangChain, LangGraph and the model clients take 0.7 to 1.3 s to import, and
QGIS usually sits idle for minutes before the first question.  Start-up
imports none of them (a test holds it); instead a single-shot timer is armed
when QGIS has finished starting (``initializationCompleted``), or at once when
the plugin is enabled in a QGIS already on screen, and when it fires, QGIS's
event loop having run for ``PRELOAD_DELAY_MS``, a plain daemon thread imports
the stack (``agent.worker.preload_agent_stack``).  Just before, on the main
thread, the caches of QGIS that a first tool step would fill there are filled
(``tools.measures.warm_measure_caches``, under 0.1 s once).

Imports only: no Qt or QGIS object is made or touched off the main thread, and
the thread signals nothing back, so a plugin unloaded meanwhile leaves it
nothing to reach (``stop`` stops a timer that has not fired yet).  A question
sent while the thread still imports waits for it on the agent's thread (the
preload's lock), never on the main thread.  Nothing is armed without a QGIS
window (the command line and the MCP stdio server never call ``initGui``),
nor when the packages are missing (the dock offers to install them).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from qgis.PyQt.QtCore import QTimer

if TYPE_CHECKING:
    from qgis.gui import QgisInterface

log = logging.getLogger(__name__)

# How long QGIS's event loop runs after start-up before the import begins: start-up's own late work (the
# project named on the command line, other plugins' deferred set-up) goes first.
PRELOAD_DELAY_MS = 3000


class AgentPreload:
    """Arms the idle timer (main thread); its thread imports the agent stack once.

    ``done`` is set when the thread has ended (imported, or failed: ``error``);
    ``thread_name`` and ``seconds`` say where and how long, for the tests and ``make bench``.
    """

    def __init__(self, iface: QgisInterface | Any, delay_ms: int | None = None) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread_name: str | None = None
        self.seconds: float | None = None
        self._thread: threading.Thread | None = None
        self._timer = QTimer()
        self._timer.setSingleShot(True)
        self._timer.setInterval(PRELOAD_DELAY_MS if delay_ms is None else delay_ms)
        self._timer.timeout.connect(self._start)
        self._started_signal: Any = None
        window = iface.mainWindow() if iface is not None else None
        if window is not None and window.isVisible():  # enabled or reloaded in a running QGIS
            self._timer.start()
            return
        started = getattr(iface, "initializationCompleted", None)  # QGIS starting: after its last step
        if started is not None:
            started.connect(self._arm)
            self._started_signal = started

    @property
    def armed(self) -> bool:
        """Whether the timer is counting down (the thread has not started)."""
        return bool(self._timer.isActive())

    def _arm(self) -> None:
        self._disconnect()
        self._timer.start()

    def _start(self) -> None:
        """Main thread, QGIS idle for a moment: QGIS's measure caches are filled; the thread starts.

        The thread does not start when the packages are missing.
        """
        from geogpt_qgis.toolbelt.dependencies import missing_packages
        from geogpt_qgis.tools.measures import warm_measure_caches

        if self._thread is None:
            warm_measure_caches()  # here, not in the first tool call's main-thread step
        if self._thread is not None or missing_packages():
            return
        self._thread = threading.Thread(target=self._import, name="GeoGPT agent preload", daemon=True)
        self._thread.start()

    def _import(self) -> None:
        """On the preload thread: imports, nothing else (no Qt, no QGIS object, no signal)."""
        self.thread_name = threading.current_thread().name
        started = time.perf_counter()
        try:
            from geogpt_qgis.agent.worker import preload_agent_stack

            preload_agent_stack()
        except Exception as exc:  # noqa: BLE001 - the first question imports again and reports it in the dock
            self.error = exc
            log.warning("importing the agent stack in the background failed: %s", exc)
        finally:
            self.seconds = time.perf_counter() - started
            self.done.set()

    def _disconnect(self) -> None:
        if self._started_signal is not None:
            with contextlib.suppress(TypeError):  # already disconnected
                self._started_signal.disconnect(self._arm)
            self._started_signal = None

    def stop(self) -> None:
        """Unload: the timer will not fire; a thread already importing ends on its own (it holds nothing of ours)."""
        self._timer.stop()
        self._disconnect()
