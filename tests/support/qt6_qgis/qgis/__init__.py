"""Only ``qgis.PyQt`` exists here: anything from ``qgis.core`` or ``qgis.gui`` fails to import, on purpose."""
