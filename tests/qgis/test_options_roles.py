"""The options page warns when a chosen PostgreSQL connection's role could change data (checked in the background)."""

from __future__ import annotations

import pytest
from qgis.PyQt.QtCore import Qt

from geogpt_qgis.gui.options_page import OptionsPage
from geogpt_qgis.tools.postgis.privileges import write_powers
from tests.support.net import free_port
from tests.support.postgis import DSN, PARAMS, READER_PASSWORD, SUPER_PASSWORD, SUPER_USER, saved_connection
from tests.support.runs import wait_until

pytestmark = pytest.mark.postgis


def _choose_only(page: OptionsPage, wanted: set[str]) -> None:
    page.connections.all_connections.setChecked(False)
    for row in range(page.connections.connections_list.count()):
        item = page.connections.connections_list.item(row)
        item.setCheckState(Qt.CheckState.Checked if item.text() in wanted else Qt.CheckState.Unchecked)


def test_write_powers_of_the_test_roles():
    reader = DSN.replace(f"user={PARAMS['user']}", "user=geogpt_reader").replace(
        f"password={PARAMS['password']}", f"password={READER_PASSWORD}"
    )
    assert write_powers(reader) == ("geogpt_reader", [])
    role, powers = write_powers(DSN)  # owns the demo tables and the database
    assert role == PARAMS["user"]
    assert any(p.startswith("can insert, update or delete in") and "public." in p for p in powers)
    assert "can create schemas in the database" in powers  # it owns the database
    superuser = DSN.replace(f"user={PARAMS['user']}", f"user={SUPER_USER}").replace(
        f"password={PARAMS['password']}", f"password={SUPER_PASSWORD}"
    )
    assert write_powers(superuser)[1][0].startswith("is a superuser")


def test_the_page_warns_about_roles_that_can_write(make_page):
    with (
        saved_connection("h1-owner"),
        saved_connection("h1-reader", user="geogpt_reader", password=READER_PASSWORD),
        saved_connection("h1-super", user=SUPER_USER, password=SUPER_PASSWORD),
        saved_connection("h1-down", port=str(free_port())),
    ):
        page = make_page()
        _choose_only(page, {"h1-reader"})
        page.connections.check_connection_roles()
        wait_until(lambda: page.connections.chosen() == ["h1-reader"], 120)
        wait_until(lambda: not page.connections.roles_warning.isVisibleTo(page), 120)
        assert page.connections.roles_warning.text() == ""

        _choose_only(page, {"h1-owner", "h1-reader", "h1-super"})
        page.connections.check_connection_roles()
        wait_until(lambda: page.connections.roles_warning.isVisibleTo(page), 120)
        text = page.connections.roles_warning.text()
        assert "'h1-owner' connects as role 'geogpt', which can insert, update or delete" in text
        assert "'h1-super' connects as role 'geogpt_super', which is a superuser" in text
        assert "h1-reader" not in text
        assert "a role that may only SELECT is the safest choice" in text
        assert "password" not in text

        _choose_only(page, {"h1-down"})  # an unreachable server is reported, not fatal
        page.connections.check_connection_roles()
        wait_until(lambda: "Could not check the role of 'h1-down'" in page.connections.roles_warning.text(), 120)
