"""Dock and options polish (issue 22): a missing API key is a hint, not an error; the small dialogs say what they do.

Real model servers on 127.0.0.1 (tests/support/model_server.py), the real dock and options page.
"""

from __future__ import annotations

import pytest

from geogpt_qgis.gui.server_state import ServerStatus
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import close_dock, configure, open_dock
from tests.support.runs import wait_until

REMOTE = "https://models.example.invalid/v1"  # never asked: without a key there is no point


@pytest.fixture
def no_env_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_an_openai_server_without_a_key_gets_a_calm_hint_and_send_says_why(
    qgis_iface, demo_project, tmp_path, no_env_key
):
    PlgOptionsManager.set_value("provider", "openai")
    PlgOptionsManager.set_value("openai_base_url", REMOTE)
    PlgOptionsManager.set_value("openai_model", "gpt-x")
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    panel, card = dock.panel, dock.panel.first_run
    try:
        wait_until(lambda: panel.model_bar.state.status == ServerStatus.NEEDS_KEY, 10)
        hint = f"Enter the API key for {REMOTE}, or pick a local server."
        assert card.state_label.text() == hint
        assert card.state_label.property("status") == "checking"  # grey, not the red bold of a fault
        assert card.settings_button.isVisible()
        status = panel.model_bar.status_label
        assert status.text() == hint and status.styleSheet() == ""  # the dock's status line: no error colour
        assert not panel.send_button.isEnabled() and panel.send_button.toolTip() == hint
    finally:
        close_dock(dock)
        PlgOptionsManager.set_value("provider", "ollama")


def test_a_local_server_that_refuses_without_a_key_asks_for_one_and_is_ready_once_typed(
    make_page, model_server, no_env_key
):
    model_server.api_key = "sk-polish"
    configure(model_server, provider="openai")
    page = make_page()
    picker = page.picker
    wait_until(lambda: picker.state.status == ServerStatus.NEEDS_KEY, 10)
    url = model_server.url + "/v1"
    assert picker.model_status.text() == f"Enter the API key for {url}, or pick a local server."
    assert picker.model_status.styleSheet() == ""  # not red
    picker.key_edit.setText("sk-polish")
    picker.key_edit.editingFinished.emit()  # the key typed in the page's draft: the server is asked again with it
    wait_until(lambda: picker.state.status == ServerStatus.READY, 10)
    assert picker.model_status.text() == "" and picker.model_combo.count() == 2
