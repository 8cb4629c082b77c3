"""Desktop tests start QGIS itself; the in-process QGIS fixtures stay on for them as for tests/qgis."""

from tests.support.qgis_fixtures import *  # noqa: F403 - the QGIS fixtures (pytest finds them by name)
