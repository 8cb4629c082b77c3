"""The agent stack imported in the background once QGIS has started: never at start-up, never on the main thread.

The end-to-end checks run ``harness.first_answer_probe`` in a fresh QGIS
process, where nothing has imported LangGraph yet (this test process has).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from qgis.core import QgsApplication
from qgis.PyQt.QtCore import pyqtSignal

from geogpt_qgis import classFactory
from geogpt_qgis.agent import worker as agent_worker
from geogpt_qgis.gui.agent_preload import AgentPreload
from tests.support.iface import FaithfulIface
from tests.support.runs import wait_until

REPO = Path(__file__).resolve().parents[2]
PRELOAD_THREAD = "GeoGPT agent preload"
AGENT_PACKAGES = ["aiosqlite", "langchain_core", "langchain_ollama", "langchain_openai", "langgraph.graph"]


class StartingIface(FaithfulIface):
    """QGIS's interface while QGIS starts: it says when start-up is complete."""

    initializationCompleted = pyqtSignal()  # noqa: N815 - QGIS's name


@pytest.fixture
def starting_iface(qgis_app):
    iface = StartingIface()
    yield iface
    iface.mainWindow().deleteLater()


def probe(mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "harness.first_answer_probe", mode],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(lines[-1])


def test_after_start_up_the_stack_is_imported_on_a_background_thread_and_the_first_answer_comes():
    report = probe("preloaded")
    assert report["heavy_after_init"] == []  # initGui imported none of it
    assert report["preload_thread"] == PRELOAD_THREAD and report["preload_error"] is None
    # Every agent package was first imported by the preload's thread: not the main thread, not the agent's.
    assert report["importers"] == dict.fromkeys(AGENT_PACKAGES, PRELOAD_THREAD)
    assert report["main_thread"] not in report["importers"].values()
    assert report["loaded_after"] == AGENT_PACKAGES
    assert report["status"] == "finished"
    assert report["answer"] == "The district has 12 schools."
    assert report["first_event_seconds"] is not None and report["first_text_seconds"] is not None
    assert report["preload_longest_stall_ms"] is not None  # the heartbeat ran while the preload imported


def test_a_question_sent_while_the_stack_is_still_importing_is_answered():
    report = probe("during")
    assert report["preload_busy_at_send"] is True  # sent while the preload thread was importing
    assert report["status"] == "finished"
    assert report["answer"] == "The district has 12 schools."
    assert report["preload_error"] is None
    # The run waited for the preload rather than importing alongside it; nothing was imported on the main thread.
    assert report["importers"]["langgraph.graph"] == PRELOAD_THREAD
    assert report["main_thread"] not in report["importers"].values()


def test_without_the_preload_the_first_question_still_imports_the_stack_on_the_agent_thread():
    report = probe("cold")
    assert report["preload_thread"] is None and report["preload_started_after_unload"] is False
    assert report["status"] == "finished"
    assert report["answer"] == "The district has 12 schools."
    assert report["main_thread"] not in report["importers"].values()
    assert PRELOAD_THREAD not in report["importers"].values()


def test_the_timer_waits_for_qgis_to_finish_starting(starting_iface):
    preload = AgentPreload(starting_iface, delay_ms=60_000)
    assert not preload.armed  # QGIS still starting (its window not shown yet)
    starting_iface.initializationCompleted.emit()
    assert preload.armed
    preload.stop()
    assert not preload.armed
    starting_iface.initializationCompleted.emit()  # stopped: a second signal arms nothing
    assert not preload.armed


def test_nothing_is_armed_without_a_qgis_window(qgis_app):
    iface = FaithfulIface()  # hidden window, no start-up signal: a headless host
    try:
        assert not AgentPreload(iface).armed
        assert not AgentPreload(None).armed
    finally:
        iface.mainWindow().deleteLater()


def test_unloaded_before_the_timer_fires_the_timer_is_stopped(starting_iface, tmp_path, monkeypatch):
    monkeypatch.setattr(QgsApplication, "qgisSettingsDirPath", staticmethod(lambda: str(tmp_path) + "/"))
    starting_iface.mainWindow().show()  # the plugin enabled in a QGIS already on screen: armed at once
    plugin = classFactory(starting_iface)
    plugin.initGui()
    preload = plugin.agent_preload
    try:
        assert preload is not None and preload.armed
    finally:
        plugin.unload()
    assert not preload.armed and preload.thread_name is None


def test_missing_packages_start_no_import(starting_iface, monkeypatch):
    from geogpt_qgis.toolbelt import dependencies

    monkeypatch.setattr(dependencies, "missing_packages", lambda: ["langgraph"])
    preload = AgentPreload(starting_iface, delay_ms=0)
    preload._start()  # what the timer calls
    assert preload._thread is None and not preload.done.is_set()


def test_the_idle_timer_fills_qgis_measure_caches_once_on_the_main_thread(starting_iface, monkeypatch):
    from qgis.core import QgsEllipsoidUtils

    from geogpt_qgis.tools import measures

    warmed: list[str] = []
    monkeypatch.setattr(measures, "warm_measure_caches", lambda: warmed.append(threading.current_thread().name))
    preload = AgentPreload(starting_iface, delay_ms=0)
    preload._start()
    preload._start()  # a second timeout (a reload) fills nothing again
    assert warmed == [threading.main_thread().name]
    wait_until(preload.done.is_set, 60)
    monkeypatch.undo()
    measures.warm_measure_caches()  # the real one: what the first tool step measures on is there
    assert QgsEllipsoidUtils.ellipsoidParameters(measures.WGS84_ELLIPSOID).valid


def test_a_failed_import_is_kept_for_the_first_question_to_report(starting_iface, monkeypatch):
    def failing() -> None:
        raise ImportError("No module named 'langgraph'")

    monkeypatch.setattr(agent_worker, "preload_agent_stack", failing)
    preload = AgentPreload(starting_iface, delay_ms=0)
    preload._start()
    wait_until(preload.done.is_set, 60)
    assert isinstance(preload.error, ImportError) and preload.thread_name == PRELOAD_THREAD


def test_a_second_caller_waits_for_the_import_under_way_instead_of_importing_again(monkeypatch):
    gate = threading.Event()
    imports: list[str] = []
    seen_by_second: list[bool] = []

    def slow_import() -> None:
        imports.append(threading.current_thread().name)
        assert gate.wait(60)

    monkeypatch.setattr(agent_worker, "_preloaded", False)
    monkeypatch.setattr(agent_worker, "_import_agent_stack", slow_import)
    first = threading.Thread(target=agent_worker.preload_agent_stack, name="first")
    first.start()
    wait_until(lambda: imports == ["first"], 60)

    def second_caller() -> None:
        agent_worker.preload_agent_stack()
        seen_by_second.append(agent_worker._preloaded)

    second = threading.Thread(target=second_caller, name="second")
    second.start()
    assert agent_worker._PRELOAD_LOCK.locked()  # the first import holds it while the second caller arrives
    gate.set()
    first.join(60)
    second.join(60)
    assert imports == ["first"]  # imported once
    assert seen_by_second == [True]  # the second caller returned only once the import had ended
