"""The MCP group of Settings > Options > GeoGPT: address checks, and what a client needs from the running server."""

from __future__ import annotations

import json

import pytest
from qgis.PyQt.QtWidgets import QApplication

from tests.support.runs import wait_until


@pytest.fixture
def service(demo_project, qgis_iface):
    from geogpt_qgis.gui.background import run_in_background
    from geogpt_qgis.mcp_server.service import McpService

    created = McpService(qgis_iface, run_in_background=run_in_background)
    created.register()
    yield created
    created.shutdown()


def test_the_address_is_checked_as_typed(make_page, service):
    box = make_page().mcp_box
    assert not box.enable_check.isChecked()  # off by default
    box.host_edit.setText("0.0.0.0")  # noqa: S104 - the address being refused
    assert "Refused" in box.bind_note.text() and "127.0.0.1" in box.bind_note.text()
    box.host_edit.setText("192.168.1.20")
    assert "anyone on that network" in box.bind_note.text()
    box.host_edit.setText("127.0.0.1")
    assert box.bind_note.text() == ""
    assert "off" in box.status.text() and not box.copy_token.isEnabled()


def test_ok_starts_the_server_and_the_page_shows_url_token_and_config(make_page, service):
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    page = make_page()
    box = page.mcp_box
    box.enable_check.setChecked(True)
    box.port_spin.setValue(18765 + (id(box) % 1000))
    try:
        page.apply()
        wait_until(lambda: service.state.running or bool(service.state.error), 30)
        assert service.state.running, service.state.error
        assert PlgOptionsManager.get_plg_settings().mcp_enabled
        assert box.url_edit.text() == service.state.url == f"http://127.0.0.1:{box.port_spin.value()}/mcp"
        assert box.token_edit.text() == service.state.token
        config = json.loads(box.config_edit.toPlainText())["mcpServers"]["geogpt-qgis"]
        assert config == {
            "type": "http",
            "url": service.state.url,
            "headers": {"Authorization": f"Bearer {service.state.token}"},
        }
        box.copy_token.click()
        assert QApplication.clipboard().text() == service.state.token
        running = service.state
        page.apply()  # OK again with nothing changed: the server is not restarted
        assert service.state is running
    finally:
        PlgOptionsManager.set_value("mcp_enabled", False)
        service.stop()


def test_the_docks_menu_switches_the_server_on_and_off(qgis_iface, demo_project, service, tmp_path):
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from tests.support.dock import close_dock, open_dock

    PlgOptionsManager.set_value("mcp_port", 19765 + (id(service) % 1000))
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    bar = dock.panel.conversation_bar
    try:
        bar.menu.aboutToShow.emit()
        assert not bar.mcp_action.isChecked() and not service.state.running  # off by default
        bar.mcp_action.trigger()
        wait_until(lambda: service.state.running or bool(service.state.error), 30)
        assert service.state.running, service.state.error
        assert PlgOptionsManager.get_plg_settings().mcp_enabled
        bar.mcp_action.trigger()
        wait_until(lambda: not service.state.running, 30)
        assert not PlgOptionsManager.get_plg_settings().mcp_enabled
        # Switched on in the options page meanwhile: the menu shows it when it opens, and starts nothing itself.
        PlgOptionsManager.set_value("mcp_enabled", True)
        bar.menu.aboutToShow.emit()
        assert bar.mcp_action.isChecked() and not service.state.running
    finally:
        PlgOptionsManager.set_value("mcp_enabled", False)
        service.stop()
        close_dock(dock)
