# ruff: noqa: N999  (named as in Qt and qgis.PyQt)
"""``qgis.PyQt.QtWidgets`` of QGIS 4: PyQt6's QtWidgets plus what QGIS adds to it for Qt 5 plugins.

QGIS 4 also exports QAction, QActionGroup and QShortcut here (they moved to QtGui in Qt 6) and
patches ``QLayout.setMargin`` back in; this stand-in does the same, so a plugin that imports them
from QtWidgets works here exactly as it would in QGIS 4.
"""

from PyQt6.QtGui import QAction, QActionGroup, QShortcut
from PyQt6.QtWidgets import *  # noqa: F403
from PyQt6.QtWidgets import QLayout

__all__ = ["QAction", "QActionGroup", "QShortcut"]  # besides everything PyQt6.QtWidgets exports

QLayout.setMargin = lambda self, margin: self.setContentsMargins(margin, margin, margin, margin)
