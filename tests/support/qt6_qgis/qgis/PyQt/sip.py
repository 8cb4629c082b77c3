"""``qgis.PyQt.sip`` of QGIS 4: PyQt6's own sip module (test-only stand-in, see the package docstring)."""

from PyQt6.sip import *  # noqa: F403
