"""Child process: an agent thread that is still ending when its owner is deleted (``python -m`` this module).

Exits 0 when the process survives and the thread is released once it ended;
Qt aborts the process (exit -6) when a running QThread is destroyed.
"""

from __future__ import annotations

import asyncio
import sys
import time

from qgis.core import QgsApplication
from qgis.PyQt.QtCore import QCoreApplication, QEvent, QObject

from geogpt_qgis.agent import worker as worker_module


def held() -> set:
    """The workers kept until their thread ends."""
    return set(getattr(worker_module, "_DRAINING", ()))


def main() -> int:
    app = QgsApplication([], False)
    app.initQgis()
    owner = QObject()
    agent = worker_module.AgentWorker(owner)

    async def slow_closer() -> None:
        await asyncio.sleep(1.5)  # a closer (a store, a connection) slower than shutdown waits

    agent.at_exit(slow_closer)
    agent.call(lambda: asyncio.sleep(0)).result(10)
    agent.shutdown(timeout_ms=50)
    still_running = agent.isRunning()
    owner.deleteLater()
    del agent
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # as the event loop deletes it
    deadline = time.monotonic() + 30
    while held() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    app.processEvents()
    print(f"still running after shutdown: {still_running}; held: {len(held())}")
    return 0 if still_running and not held() else 1


if __name__ == "__main__":
    sys.exit(main())
