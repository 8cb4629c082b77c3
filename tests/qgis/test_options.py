"""The GeoGPT page in Settings > Options: saving and loading, the model list, tool support, the connection test."""

from __future__ import annotations

from qgis.PyQt.QtCore import Qt

from geogpt_qgis.gui.settings_events import settings_events
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import configure
from tests.support.net import free_port, silent_server
from tests.support.postgis import saved_connection
from tests.support.runs import wait_until


def _choose(combo, data: str) -> None:
    combo.setCurrentIndex(combo.findData(data))


def test_the_page_saves_every_setting_and_shows_them_again(make_page, model_server):
    configure(model_server)
    with saved_connection("geogpt-options-a"), saved_connection("geogpt-options-b"):
        page = make_page()
        assert page.picker.provider() == "ollama" and page.picker.url_edit.text() == model_server.url
        assert page.connections.all_connections.isChecked() and not page.connections.connections_list.isEnabled()
        names = [
            page.connections.connections_list.item(i).text() for i in range(page.connections.connections_list.count())
        ]
        assert {"geogpt-options-a", "geogpt-options-b"} <= set(names)

        page.picker.model_combo.setEditText("llama3.2:3b")
        _choose(page.picker.provider_combo, "openai")
        assert page.picker.url_edit.text() == "https://api.openai.com/v1"  # each provider keeps its own URL and model
        page.picker.url_edit.setText("http://127.0.0.1:9/v1/")
        page.picker.url_edit.editingFinished.emit()
        page.picker.model_combo.setEditText("gpt-4.1-mini")
        page.temperature_spin.setValue(0.35)
        page.context_spin.setValue(16384)
        _choose(page.policy_combo, "never")
        page.ogc_edit.setPlainText("City data = https://example.org/ogcapi\nhttps://demo.pygeoapi.io/master")
        page.connections.all_connections.setChecked(False)
        for row in range(page.connections.connections_list.count()):
            item = page.connections.connections_list.item(row)
            wanted = item.text() == "geogpt-options-b"
            item.setCheckState(Qt.CheckState.Checked if wanted else Qt.CheckState.Unchecked)
        page.debug_check.setChecked(True)
        before = PlgOptionsManager.get_plg_settings()
        assert before.provider == "ollama"  # nothing is written before apply()

        told: list[bool] = []

        def listen() -> None:
            told.append(True)

        settings_events().changed.connect(listen)
        try:
            page.apply()
        finally:
            settings_events().changed.disconnect(listen)
        assert told == [True]
        s = PlgOptionsManager.get_plg_settings()
        assert (s.provider, s.openai_base_url, s.openai_model) == ("openai", "http://127.0.0.1:9/v1", "gpt-4.1-mini")
        assert (s.ollama_url, s.ollama_model) == (model_server.url, "llama3.2:3b")
        assert (s.temperature, s.context_limit, s.approval_policy) == (0.35, 16384, "never")
        assert s.ogc_servers == "City data = https://example.org/ogcapi\nhttps://demo.pygeoapi.io/master"
        assert s.postgis_connections == "geogpt-options-b"
        assert s.debug_mode is True

        again = make_page()
        assert again.picker.provider() == "openai" and again.picker.url_edit.text() == "http://127.0.0.1:9/v1"
        assert again.picker.model_combo.currentText() == "gpt-4.1-mini"
        assert (again.temperature_spin.value(), again.context_spin.value()) == (0.35, 16384)
        assert again.policy_combo.currentData() == "never" and again.debug_check.isChecked()
        assert again.ogc_edit.toPlainText() == s.ogc_servers
        assert not again.connections.all_connections.isChecked() and again.connections.setting() == "geogpt-options-b"
        _choose(again.picker.provider_combo, "ollama")
        assert (
            again.picker.url_edit.text() == model_server.url and again.picker.model_combo.currentText() == "llama3.2:3b"
        )
        again.connections.all_connections.setChecked(True)
        again.apply()
        assert PlgOptionsManager.get_plg_settings().postgis_connections == "*"
        assert PlgOptionsManager.get_plg_settings().provider == "ollama"


def test_broken_ogc_lines_are_pointed_out(make_page):
    page = make_page()
    page.ogc_edit.setPlainText("Good = https://example.org/ogc\n# a comment\nBad = ftp://example.org/x")
    assert page.ogc_status.text() == "Line 3: 'ftp://example.org/x' is not an http(s) URL."
    page.ogc_edit.setPlainText("https://example.org/ogc")
    assert page.ogc_status.isHidden()


def test_the_model_list_comes_from_the_server_with_a_warning_for_models_without_tools(make_page, model_server):
    configure(model_server)
    model_server.capabilities = ("completion",)  # /api/show: this model cannot call tools
    page = make_page()
    wait_until(lambda: page.picker.model_combo.count() == 2, 120)
    assert [page.picker.model_combo.itemText(i) for i in range(2)] == ["llama3.2:3b", "qwen3:8b"]
    assert page.picker.model_combo.currentText() == "qwen3:8b"
    wait_until(lambda: "cannot call tools" in page.picker.model_status.text(), 120)
    assert page.picker.model_status.text() == (
        "This model cannot call tools natively; GeoGPT asks it for guided tool calls (Tool calls: Auto or Guided)."
    )
    shows = [r.body.get("model") for r in model_server.requests if r.path == "/api/show"]
    assert shows[-1] == "qwen3:8b"
    model_server.capabilities = ("completion", "tools")
    page.picker.model_combo.setCurrentIndex(0)  # llama3.2:3b, checked after a short pause in typing
    wait_until(lambda: page.picker.model_status.text() == "✓ This model can call tools.", 120)
    assert [r.body.get("model") for r in model_server.requests if r.path == "/api/show"][-1] == "llama3.2:3b"


def test_the_connection_test_reports_success_or_what_to_fix(make_page, model_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    configure(model_server)
    page = make_page()
    page.picker.test_connection()
    wait_until(lambda: page.picker.test_label.text().startswith("Connected"), 120)
    assert page.picker.test_label.text() == "Connected: 2 models available."

    dead = f"http://127.0.0.1:{free_port()}"
    page.picker.url_edit.setText(dead)
    page.picker.test_connection()
    wait_until(lambda: page.picker.test_label.text().startswith("Connection failed"), 120)
    assert page.picker.test_label.text() == (  # the command shown as code, not between backticks
        f"Connection failed: Cannot reach the Ollama server at {dead}. Is Ollama running? "
        "Start it (<code>ollama serve</code>) or correct the server URL."
    )
    assert PlgOptionsManager.get_plg_settings().ollama_url == model_server.url  # testing saves nothing

    with silent_server() as silent:
        page.picker.url_edit.setText(silent)
        page.picker.test_connection()
        wait_until(lambda: page.picker.test_label.text().startswith("Connection failed"), 120)
    assert page.picker.test_label.text().startswith(
        f"Connection failed: The model server at {silent} did not answer within"
    )

    # An OpenAI-compatible server that wants a key: refused without one, connected with the key typed.
    model_server.api_key = "sk-test-options"
    _choose(page.picker.provider_combo, "openai")
    page.picker.url_edit.setText(model_server.url + "/v1")
    page.picker.test_connection()
    wait_until(lambda: page.picker.test_label.text().startswith("Connection failed"), 120)
    # No key typed, stored or in $OPENAI_API_KEY: the refusal asks for one.
    assert f"Enter the API key for {model_server.url}/v1" in page.picker.test_label.text()
    page.picker.key_edit.setText("sk-wrong")
    page.picker.test_connection()
    wait_until(lambda: "refused the API key (HTTP 401)" in page.picker.test_label.text(), 120)
    page.picker.key_edit.setText("sk-test-options")
    page.picker.test_connection()
    wait_until(lambda: page.picker.test_label.text().startswith("Connected"), 120)
    assert page.picker.test_label.text() == "Connected: 2 models available."
    page.picker.url_edit.setText(model_server.url)  # the OpenAI API lives under /v1
    page.picker.test_connection()
    wait_until(lambda: page.picker.test_label.text().startswith("Connection failed"), 120)
    assert "has no model list there (HTTP 404)" in page.picker.test_label.text()


def test_the_dock_follows_what_the_options_page_saved(panel, model_server, make_page):
    bar = panel.model_bar
    assert bar.provider_combo.currentData() == "ollama"
    page = make_page()
    wait_until(lambda: page.picker.model_combo.count() == 2, 120)
    page.picker.model_combo.setEditText("llama3.2:3b")
    _choose(page.policy_combo, "never")
    page.apply()
    assert bar.model_combo.currentText() == "llama3.2:3b"
    assert panel.policy.currentData() == "never"

    _choose(page.picker.provider_combo, "openai")
    page.picker.url_edit.setText(model_server.url + "/v1")
    page.picker.model_combo.setEditText("qwen3:8b")
    page.apply()
    assert bar.provider_combo.currentData() == "openai"
    assert bar.url_edit.text() == model_server.url + "/v1" and bar.model_combo.currentText() == "qwen3:8b"
    assert not bar.key_edit.isHidden()
    config = bar.current_config()
    assert (config.provider, config.base_url, config.model) == ("openai", model_server.url + "/v1", "qwen3:8b")
    wait_until(lambda: any(r.path == "/v1/models" for r in model_server.requests), 120)  # the bar reloaded its list
