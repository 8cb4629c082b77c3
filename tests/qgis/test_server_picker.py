"""The server/model picker (dock and options page): a late answer from a server the user left is dropped.

Two real model servers on 127.0.0.1: the first holds its model list back until
the test releases it, so its answer arrives after the user switched to the
second server and that one already answered.  The list shown must stay the
second server's.
"""

from __future__ import annotations

import threading
import time

import pytest
from qgis.PyQt.QtCore import QCoreApplication, QEventLoop

from tests.support.dock import close_dock, configure, open_dock
from tests.support.model_server import ScriptedModelServer
from tests.support.runs import wait_until

FIRST_MODELS = ("first-a:1b", "first-b:7b")
SECOND_MODELS = ("second:3b",)


def _listed(picker) -> list[str]:
    return [picker.model_combo.itemText(i) for i in range(picker.model_combo.count())]


def _background_queries_done() -> bool:
    return not any(t.name == "geogpt-background" and t.is_alive() for t in threading.enumerate())


def _deliver_late_answers() -> None:
    """Let every background query end, then hand their queued answers to the widgets."""
    wait_until(_background_queries_done, 120)
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)


@pytest.fixture
def servers():
    with ScriptedModelServer(models=FIRST_MODELS) as first, ScriptedModelServer(models=SECOND_MODELS) as second:
        first.list_gate = threading.Event()
        yield first, second
        first.list_gate.set()


def _switch_and_release(picker, first, second) -> None:
    wait_until(lambda: any(r.path == "/api/tags" for r in first.requests), 120)  # asked, held back
    picker.url_edit.setText(second.url)
    picker.url_edit.editingFinished.emit()
    wait_until(lambda: _listed(picker) == list(SECOND_MODELS), 120)
    first.list_gate.set()  # the first server answers now, late
    _deliver_late_answers()
    assert sum(r.path == "/api/tags" for r in first.requests) >= 1
    assert _listed(picker) == list(SECOND_MODELS)
    assert picker.model_combo.currentText() == "second:3b"


def test_the_dock_drops_a_late_model_list_from_the_server_it_left(qgis_iface, demo_project, tmp_path, servers):
    first, second = servers
    configure(first)
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    PlgOptionsManager.set_value("ollama_model", "")  # the list decides the model
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    try:
        _switch_and_release(dock.panel.model_bar, first, second)
        assert PlgOptionsManager.get_plg_settings().ollama_model == "second:3b"
        assert PlgOptionsManager.get_plg_settings().ollama_url == second.url
    finally:
        close_dock(dock)


def test_the_options_page_drops_a_late_model_list_from_the_server_it_left(make_page, servers):
    first, second = servers
    configure(first)
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    PlgOptionsManager.set_value("ollama_model", "")
    page = make_page()
    _switch_and_release(page.picker, first, second)
