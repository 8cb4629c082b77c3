"""GeoGPT for QGIS: a language-model GIS analyst in a dock.

Only ``classFactory`` lives here, and it imports the plugin class lazily, so
that QGIS start-up pays for nothing but this module.  Before anything can
import LangGraph and friends, it puts the profile's private package folder
(where the first-run installer puts them) on ``sys.path``: a path entry, no import.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qgis.gui import QgisInterface

    from geogpt_qgis.plugin import GeoGptPlugin


MINIMUM_PYTHON = (3, 11)


class PythonTooOld:
    """Stands in for the plugin on a QGIS whose Python is older than 3.11.

    The package needs 3.11 (``enum.StrEnum``, newer typing); QGIS 3.22 to 3.28
    on Windows ship Python 3.9.  Importing the plugin there would fail with a
    traceback in the plugin manager; this says why and what to do instead.
    This module must therefore keep to syntax that Python 3.9 parses.
    """

    def __init__(self, iface: Any) -> None:
        self.iface = iface

    def initGui(self) -> None:
        found = ".".join(str(part) for part in sys.version_info[:3])
        self.iface.messageBar().pushCritical(
            "GeoGPT",
            f"GeoGPT needs Python 3.11 or newer; this QGIS runs Python {found}. "
            "Install QGIS 3.34 or newer (its Python is 3.12).",
        )

    def unload(self) -> None:
        """Nothing was added."""


def classFactory(iface: QgisInterface) -> GeoGptPlugin | PythonTooOld:
    """Create the plugin for QGIS's plugin manager."""
    if sys.version_info < MINIMUM_PYTHON:
        return PythonTooOld(iface)
    from geogpt_qgis.toolbelt.python_env import activate_profile_packages

    activate_profile_packages()
    from geogpt_qgis.plugin import GeoGptPlugin

    return GeoGptPlugin(iface)
