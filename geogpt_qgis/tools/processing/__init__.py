"""Processing tools: find, describe and run any QGIS processing algorithm."""
