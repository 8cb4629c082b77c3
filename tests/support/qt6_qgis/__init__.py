"""A test-only stand-in for QGIS 4's ``qgis.PyQt`` package over PyQt6 from PyPI (see ``qgis/PyQt``).

Put this folder (not its parent) first on ``sys.path`` in a Python that has PyQt6 and no QGIS, and
``from qgis.PyQt.QtWidgets import ...`` resolves as it does in QGIS 4.
"""
