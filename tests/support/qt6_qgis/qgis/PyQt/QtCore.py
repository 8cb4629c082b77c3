# ruff: noqa: N999  (named as in Qt and qgis.PyQt)
"""``qgis.PyQt.QtCore`` of QGIS 4: PyQt6's module as it is (test-only stand-in, see the package docstring)."""

from PyQt6.QtCore import *  # noqa: F403
