"""GeoGPT for QGIS: a language-model GIS analyst in a dock.

Only ``classFactory`` lives here, and it imports the plugin class lazily, so
that QGIS start-up pays for nothing but this module.  Before anything can
import LangGraph and friends, it puts the profile's private package folder
(where the first-run installer puts them) on ``sys.path``: a path entry, no import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qgis.gui import QgisInterface

    from geogpt_qgis.plugin import GeoGptPlugin


def classFactory(iface: QgisInterface) -> GeoGptPlugin:
    """Create the plugin for QGIS's plugin manager."""
    from geogpt_qgis.toolbelt.python_env import activate_profile_packages

    activate_profile_packages()
    from geogpt_qgis.plugin import GeoGptPlugin

    return GeoGptPlugin(iface)
