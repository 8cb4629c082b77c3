"""Fixtures for tests in real QGIS: an agent worker with its own store, a recorder of its events, the dock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.dock import close_dock, configure, open_dock
from tests.support.qgis_fixtures import *  # noqa: F403 - the QGIS fixtures (pytest finds them by name)
from tests.support.runs import RunRecorder


@pytest.fixture(scope="session")
def agent_stack(qgis_app) -> None:
    """The agent's imports (LangChain, LangGraph), paid once in set-up rather than in a test's first run.

    A run's first step imports them on the agent's thread: 2 s of CPU, and 9.3 s of wall time at load 13 on
    2 cores, enough to overrun a test's bounded wait for its first answer when the machine is busy.
    """
    from geogpt_qgis.agent.worker import preload_agent_stack

    preload_agent_stack()


@pytest.fixture
def worker(tool_ctx, tmp_path, agent_stack) -> Iterator:
    """An agent worker on the demo project, keeping conversations in a fresh store."""
    from geogpt_qgis.agent.conversation import Conversation

    created = Conversation(tool_ctx, store_path=tmp_path / "store.sqlite")
    yield created
    created.shutdown()


@pytest.fixture
def recorder(worker) -> RunRecorder:
    return RunRecorder(worker)


@pytest.fixture
def panel(qgis_iface, demo_project, tmp_path, model_server, agent_stack) -> Iterator:
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
