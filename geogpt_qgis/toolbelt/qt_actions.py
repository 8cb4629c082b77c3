"""``QAction``, ``QActionGroup`` and ``QShortcut`` from where Qt 6 keeps them.

Qt 6 moved them from QtWidgets to QtGui.  ``qgis.PyQt.QtGui`` has them under Qt 6 (QGIS 4) and,
for plugins that serve both, under Qt 5 in later QGIS 3 releases (3.40 has them); QGIS 3.22's
``qgis.PyQt.QtGui`` is PyQt5's QtGui as it is, so there, and only there, they come from QtWidgets.
Every module imports them from here (tests/qgis/test_qt6_rules.py checks that).
"""

from __future__ import annotations

try:
    from qgis.PyQt.QtGui import QAction, QActionGroup, QShortcut
except ImportError:  # QGIS 3.22 (Qt 5): qgis.PyQt.QtGui does not re-export them
    from qgis.PyQt.QtWidgets import QAction, QActionGroup, QShortcut

__all__ = ["QAction", "QActionGroup", "QShortcut"]
