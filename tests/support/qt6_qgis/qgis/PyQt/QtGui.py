# ruff: noqa: N999  (named as in Qt and qgis.PyQt)
"""``qgis.PyQt.QtGui`` of QGIS 4: PyQt6's QtGui, which holds QAction, QActionGroup and QShortcut in Qt 6."""

from PyQt6.QtGui import *  # noqa: F403
