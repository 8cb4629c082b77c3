# ruff: noqa: N999  (named as in Qt and qgis.PyQt)
"""``qgis.PyQt.QtSql`` of QGIS 4: PyQt6's module as it is (test-only stand-in, see the package docstring)."""

from PyQt6.QtSql import *  # noqa: F403
