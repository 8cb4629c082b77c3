"""The trap suite: questions on data with a defect that changes the answer, each with a clean twin.

How it works, and how to add traps: see ``tests/traps/harness.py`` (its docstring is the manual).
Each test gets ``trap_session``: a bare project (no CRS, no ellipsoid: as the CLI and the headless
MCP server start; ``GEOGPT_TRAPS_PROJECT=desktop`` gives QGIS desktop's new-project CRS and
ellipsoid) and the tools as the MCP server serves them, with every approval granted (the
``--approval trust`` policy), so a question fails only on its figures. At the end the suite prints
its two figures and writes them to ``evals/traps.json`` (or ``$GEOGPT_TRAPS_JSON``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.qgis_fixtures import *  # noqa: F403 - the QGIS fixtures (pytest finds them by name)
from tests.traps.harness import OUTCOMES, Session, summary, summary_line

RESULTS = Path(__file__).resolve().parents[2] / "evals" / "traps.json"
# GEOGPT_TRAPS_PROJECT=desktop: the same questions in a project as QGIS desktop starts one (CRS and ellipsoid set).
PROJECT_KIND = os.environ.get("GEOGPT_TRAPS_PROJECT", "bare")


@pytest.fixture(scope="session")
def trap_tools(qgis_app, processing_algorithms) -> Iterator:
    """``McpTools`` over ``QgsProject.instance()``, approving every gated call (``--approval trust``)."""
    from qgis.core import QgsProject

    from geogpt_qgis.mcp_server.stdio import approve_everything
    from geogpt_qgis.mcp_server.tools import McpTools
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools.base import ToolContext

    bridge = MainThreadBridge()
    yield McpTools(ToolContext(project=QgsProject.instance(), bridge=bridge), approve_everything)
    bridge.close()


@pytest.fixture
def trap_session(trap_tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """A bare project (cleared: no layers, no CRS, no ellipsoid) and the tools; cleared again afterwards."""
    from qgis.core import QgsProject

    project = QgsProject.instance()
    project.clear()
    if PROJECT_KIND == "desktop":  # as QGIS desktop starts a new project: CRS EPSG:4326, ellipsoid WGS 84
        from qgis.core import QgsCoordinateReferenceSystem

        project.setCrs(QgsCoordinateReferenceSystem("EPSG:4326"))
        project.setEllipsoid("EPSG:7030")
    # A folder whose name says nothing: the test's own name in a path ("..._overlapping_...") would read as a warning.
    yield Session(trap_tools, project, tmp_path_factory.mktemp("data"))
    project.clear()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not OUTCOMES:
        return
    path = Path(os.environ.get("GEOGPT_TRAPS_JSON") or RESULTS)
    path.parent.mkdir(parents=True, exist_ok=True)
    figures = summary(OUTCOMES)
    if PROJECT_KIND == "desktop":
        figures["project"] = (
            "desktop default (CRS EPSG:4326, ellipsoid WGS 84), tools called as the MCP server calls them"
        )
    path.write_text(json.dumps(figures, indent=1, default=str) + "\n", encoding="utf-8")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if OUTCOMES:
        terminalreporter.write_sep("=", "trap suite")
        terminalreporter.write_line(summary_line(summary(OUTCOMES)))
        path = os.environ.get("GEOGPT_TRAPS_JSON") or RESULTS
        terminalreporter.write_line(f"written to {path}")
