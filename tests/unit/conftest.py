"""tests/unit needs no QGIS: run without pytest-qgis (``make test-unit``), no ``qgis`` module may be imported.

With pytest-qgis on (``make test``, the whole suite) QGIS is loaded anyway and nothing is checked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


def _qgis_modules() -> list[str]:
    return sorted(name for name in sys.modules if name == "qgis" or name.startswith("qgis."))


@pytest.fixture(autouse=True)
def _no_qgis(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a unit test that imported QGIS (directly or through the module it tests), when QGIS is off."""
    without_qgis = request.config.pluginmanager.is_blocked("qgis")
    assert not (without_qgis and _qgis_modules()), f"QGIS was imported before this test: {_qgis_modules()[:5]}"
    yield
    assert not (without_qgis and _qgis_modules()), f"this unit test imported QGIS: {_qgis_modules()[:5]}"
