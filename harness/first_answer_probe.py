"""The first answer after QGIS starts: how long after Send its first event comes, in a fresh QGIS process.

    python -m harness.first_answer_probe MODE

The plugin is loaded as QGIS loads it (``classFactory``, ``initGui``, the main
window shown, then ``initializationCompleted``), with a temporary profile and
the scripted model server, and the first question is sent through the dock:

- ``preloaded``: once the background import of the agent stack
  (``gui.agent_preload``) has ended, as after QGIS sat idle for a moment;
- ``during``: as soon as that import has begun (the run waits for it on the agent's thread);
- ``cold``: at once, before any preload (what the first question paid before it existed).

Prints one JSON line: seconds from Send to the run's first event and to its
first text, how the run ended and its text, the heavy modules imported right
after ``initGui`` (none expected), and which thread imported each agent
package (recorded by a finder on ``sys.meta_path``, before anything imports them).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib.machinery import ModuleSpec, PathFinder
from typing import Any

MODES = ("preloaded", "during", "cold")
WATCHED = ("aiosqlite", "langchain_core", "langchain_ollama", "langchain_openai", "langgraph.graph")
ANSWER = "The district has 12 schools."
PRELOAD_DELAY_MS = 200  # the plugin waits 3 s of QGIS idling; the probe need not


class ImportRecorder:
    """A finder for the watched packages that notes the thread executing each (a mere ``find_spec`` is no import)."""

    def __init__(self) -> None:
        self.threads: dict[str, str] = {}

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name not in WATCHED:
            return None
        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _NotingLoader(spec.loader, lambda: self.threads.setdefault(name, _thread_name()))
        return spec


class _NotingLoader:
    """A package's own loader, which first notes who executes the package."""

    def __init__(self, loader: Any, note: Callable[[], object]) -> None:
        self._loader = loader
        self._note = note

    def create_module(self, spec: ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._note()
        self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def _thread_name() -> str:
    return threading.current_thread().name


class _Heartbeat:
    """A 5 ms timer on the main thread: the longest gap between its ticks is the longest main-thread stall."""

    def __init__(self) -> None:
        from qgis.PyQt.QtCore import QTimer

        self.ticks: list[float] = []
        self._timer = QTimer()
        self._timer.setInterval(5)
        self._timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def __enter__(self) -> _Heartbeat:
        self.ticks.append(time.perf_counter())
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.stop()
        self.ticks.append(time.perf_counter())

    def seconds(self) -> float:
        return self.ticks[-1] - self.ticks[0]

    def longest_stall_ms(self) -> float | None:
        gaps = [b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False)]
        return round(max(gaps) * 1000, 1) if gaps else None


def main(mode: str) -> None:
    if mode not in MODES:
        raise SystemExit(f"mode: one of {', '.join(MODES)}")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    recorder = ImportRecorder()
    sys.meta_path.insert(0, recorder)
    with tempfile.TemporaryDirectory() as profile:
        # Settings of its own (model server, dock, the last conversation, which the dock would reopen at once),
        # set before Qt reads where they live; the store goes in the profile.
        os.environ["XDG_CONFIG_HOME"] = os.environ["XDG_DATA_HOME"] = profile
        from qgis.core import QgsApplication

        app = QgsApplication([], True, profile, "desktop")
        app.initQgis()
        try:
            print(json.dumps(_probe(mode, recorder)))
        finally:
            app.exitQgis()


def _probe(mode: str, recorder: ImportRecorder) -> dict[str, Any]:
    import qgis.utils  # noqa: F401 - loaded by QGIS before any plugin
    from qgis.PyQt.QtCore import QCoreApplication, QEvent, pyqtSignal

    from geogpt_qgis.gui import agent_preload
    from geogpt_qgis.tools.processing.catalog import ensure_processing
    from harness.iface import FaithfulIface
    from harness.model_server import ScriptedModelServer, Turn
    from harness.runs import wait_until

    class StartingIface(FaithfulIface):
        """QGIS's interface as a plugin meets it while QGIS starts: it says when start-up is complete."""

        initializationCompleted = pyqtSignal()  # noqa: N815 - QGIS's name

    ensure_processing()  # QGIS desktop loads Processing before plugins
    agent_preload.PRELOAD_DELAY_MS = PRELOAD_DELAY_MS
    with ScriptedModelServer() as server:
        from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

        PlgOptionsManager.set_value("provider", "ollama")
        PlgOptionsManager.set_value("ollama_url", server.url)
        PlgOptionsManager.set_value("ollama_model", "qwen3:8b")
        PlgOptionsManager.set_value("dock_visible", True)
        server.script([Turn(text=ANSWER)])
        iface = StartingIface()
        import geogpt_qgis

        plugin = geogpt_qgis.classFactory(iface)
        plugin.initGui()
        heavy_after_init = sorted(name for name in WATCHED if name in sys.modules)
        iface.mainWindow().show()  # the dock shows with it and builds its chat panel
        preload = plugin.agent_preload
        assert preload is not None and plugin.dock is not None
        stalls: dict[str, float | None] = {}
        if mode != "cold":
            if mode == "preloaded":  # the main thread's longest stall with nothing running, then during the preload
                with _Heartbeat() as idle:
                    wait_until(lambda: idle.seconds() >= 1.0, 60)
                stalls["idle"] = idle.longest_stall_ms()
            iface.initializationCompleted.emit()  # QGIS's last start-up step: the idle timer starts
            if mode == "preloaded":
                with _Heartbeat() as during:
                    wait_until(preload.done.is_set, 300)
                stalls["preload"] = during.longest_stall_ms()
            else:
                wait_until(lambda: preload.thread_name is not None, 60)
        panel = plugin.dock.panel
        first: dict[str, float] = {}
        statuses: list[str] = []

        def on_event(_run_id: int, event: Any) -> None:
            now = time.perf_counter()
            first.setdefault("event", now)
            if type(event).__name__ == "TextDelta":
                first.setdefault("text", now)

        panel.conversation.event.connect(on_event)
        panel.run_finished.connect(statuses.append)
        preload_busy_at_send = preload.thread_name is not None and not preload.done.is_set()
        sent = time.perf_counter()
        panel.runs.send("How many schools are in the district?")
        wait_until(lambda: bool(statuses), 300)
        from geogpt_qgis.gui.markdown_view import MarkdownView

        answer = "".join(w.source_text for w in panel.chat.items() if isinstance(w, MarkdownView))
        report = {
            "mode": mode,
            "first_event_seconds": round(first["event"] - sent, 4) if "event" in first else None,
            "first_text_seconds": round(first["text"] - sent, 4) if "text" in first else None,
            "status": statuses[0],
            "answer": answer,
            "heavy_after_init": heavy_after_init,
            "preload_thread": preload.thread_name,
            "preload_seconds": preload.seconds,
            "preload_error": repr(preload.error) if preload.error else None,
            "preload_busy_at_send": preload_busy_at_send,
            "idle_longest_stall_ms": stalls.get("idle"),
            "preload_longest_stall_ms": stalls.get("preload"),
            "importers": dict(recorder.threads),
            "main_thread": threading.main_thread().name,
            "loaded_after": sorted(name for name in WATCHED if name in sys.modules),
        }
        plugin.unload()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        if mode == "cold":  # the timer was never armed: nothing may start after the unload either
            report["preload_started_after_unload"] = preload.thread_name is not None
        iface.mainWindow().deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return report


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "preloaded")
