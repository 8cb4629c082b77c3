# ruff: noqa: N999  (named as in Qt and qgis.PyQt)
"""``qgis.PyQt.QtXml`` of QGIS 4: PyQt6's module as it is (test-only stand-in, see the package docstring)."""

from PyQt6.QtXml import *  # noqa: F403
