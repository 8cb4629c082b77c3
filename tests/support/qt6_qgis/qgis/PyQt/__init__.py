"""A stand-in for QGIS 4's ``qgis.PyQt``, for tests only: Qt 6 builds of QGIS are not installable here.

QGIS 4 is built on Qt 6 only, and no Qt 6 QGIS can be installed on this Debian release, so the
Qt 6 smoke test (tests/qgis/test_qt6_smoke.py) runs the plugin's widgets on PyQt6 from PyPI
through this package instead.  Each module maps ``qgis.PyQt.<Module>`` to ``PyQt6.<Module>`` the
way QGIS 4's own ``qgis.PyQt`` does, including what QGIS adds for plugins written for both Qt
versions: ``QAction``, ``QActionGroup`` and ``QShortcut`` (QtGui in Qt 6) are also reachable from
``qgis.PyQt.QtWidgets``, and ``QLayout.setMargin`` exists.  Nothing else of QGIS is here.
"""
