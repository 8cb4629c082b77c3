"""Fixtures that need QGIS in the test process (pytest-qgis): Processing, settings, the demo project, the bridge.

Imported by the conftest files of ``tests/qgis`` and ``tests/desktop``; ``tests/unit`` runs without them, and
without QGIS (``make test-unit``: ``pytest tests/unit -p no:qgis``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = [  # what the conftest files of tests/qgis and tests/desktop import
    "_clean_qgis_settings",
    "_main_thread_discipline",
    "bridge",
    "demo_project",
    "ogc_server",
    "processing_algorithms",
    "tool_ctx",
]


@pytest.fixture(scope="session", autouse=True)
def processing_algorithms(qgis_app) -> int:
    """QGIS Processing loaded once, as in QGIS desktop, so every test sees the same tool families."""
    from geogpt_qgis.tools.processing.catalog import ensure_processing

    return ensure_processing()


@pytest.fixture(autouse=True)
def _clean_qgis_settings(qgis_app) -> Iterator[None]:
    """Each test starts with default plugin settings."""
    from qgis.core import QgsSettings

    settings = QgsSettings()
    settings.remove("geogpt_qgis")
    yield
    settings.remove("geogpt_qgis")


@pytest.fixture(autouse=True)
def _main_thread_discipline() -> Iterator[None]:
    """Fail any test in which the plugin made a layer or provider, or touched the project, off the main thread.

    The guard raises where it happens too, but a tool may turn that into an error message; this catches it.
    """
    from geogpt_qgis.tools.thread_guard import take_violations

    take_violations()
    yield
    found = take_violations()
    assert not found, "QGIS work off the main thread:\n" + "\n".join(found)


@pytest.fixture(scope="session")
def ogc_server(qgis_app, tmp_path_factory):
    """pygeoapi on 127.0.0.1 serving the demo town (PostGIS collections and one GeoJSON file)."""
    from tests.support.demo import GPKG, ensure_demo
    from tests.support.ogc_server import running_ogc_server

    ensure_demo()
    with running_ogc_server(tmp_path_factory.mktemp("ogc"), GPKG) as server:
        yield server


@pytest.fixture
def demo_project(qgis_app, tmp_path: Path):
    """The demo town, copied to a temporary folder and open in ``QgsProject.instance()``."""
    from qgis.core import QgsProject

    from tests.support.demo import copy_demo

    path = copy_demo(tmp_path / "demo")
    project = QgsProject.instance()
    project.clear()
    assert project.read(str(path)), project.error()
    yield project
    _stop_rendering()
    project.clear()


def _stop_rendering() -> None:
    """Let every map canvas finish drawing before the project's layers go.

    A canvas drawing on its own thread while ``project.clear()`` deleted the
    layers crashed QGIS 3.44 (a label layer read after it was freed, in
    ``QgsMapRendererJob::participatingLabelLayers``), once in a CI run; QGIS
    itself stops drawing before it closes a project.
    """
    from qgis.gui import QgsMapCanvas
    from qgis.PyQt.QtWidgets import QApplication

    for widget in QApplication.allWidgets():
        if isinstance(widget, QgsMapCanvas):
            widget.stopRendering()
            widget.waitWhileRendering()


@pytest.fixture
def bridge(qgis_app):
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge

    created = MainThreadBridge()
    yield created
    created.close()


@pytest.fixture
def tool_ctx(demo_project, bridge, qgis_iface):
    from geogpt_qgis.tools.base import ToolContext

    return ToolContext(project=demo_project, bridge=bridge, iface=qgis_iface)
