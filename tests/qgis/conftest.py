"""Fixtures for tests in real QGIS: an agent worker with its own store, a recorder of its events, the dock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.dock import close_dock, configure, open_dock
from tests.support.qgis_fixtures import *  # noqa: F403 - the QGIS fixtures (pytest finds them by name)
from tests.support.runs import RunRecorder


@pytest.fixture
def worker(tool_ctx, tmp_path) -> Iterator:
    """An agent worker on the demo project, keeping conversations in a fresh store."""
    from geogpt_qgis.agent.conversation import Conversation

    created = Conversation(tool_ctx, store_path=tmp_path / "store.sqlite")
    yield created
    created.shutdown()


@pytest.fixture
def recorder(worker) -> RunRecorder:
    return RunRecorder(worker)


@pytest.fixture
def panel(qgis_iface, demo_project, tmp_path, model_server) -> Iterator:
    """The chat panel of a shown dock; ``panel.statuses`` collects how runs ended."""
    configure(model_server)
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    yield dock.panel
    close_dock(dock)


@pytest.fixture
def make_page(qgis_iface) -> Iterator:
    """Build options pages as QGIS's options dialog does (through the factory); delete them afterwards."""
    from geogpt_qgis.gui.options_factory import GeoGptOptionsFactory

    pages: list = []

    def make():
        page = GeoGptOptionsFactory(qgis_iface).createWidget(None)
        page.show()
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.deleteLater()
