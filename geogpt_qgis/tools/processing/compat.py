"""Enum values that moved between QGIS 3.22 and 4.x, read in a way that works on both.

QGIS 3.22 exposes plain ints and ``QgsProcessingAlgorithm.Flag``; later
versions use ``Qgis.ProcessingSourceType``/``Qgis.ProcessingAlgorithmFlag``
(Python enums under Qt 6).  The numeric values are stable, so comparisons go
through them.
"""

from __future__ import annotations

from typing import Any

from qgis.core import Qgis, QgsProcessingAlgorithm

# QgsProcessing.SourceType / Qgis.ProcessingSourceType values.
SOURCE_MAP_LAYER = -2
SOURCE_ANY_GEOMETRY = -1
SOURCE_POINT = 0
SOURCE_LINE = 1
SOURCE_POLYGON = 2
SOURCE_RASTER = 3
SOURCE_FILE = 4
SOURCE_VECTOR = 5  # any vector, with or without geometry

# QgsWkbTypes.GeometryType / Qgis.GeometryType values.
GEOMETRY_POINT, GEOMETRY_LINE, GEOMETRY_POLYGON = 0, 1, 2

SOURCE_TYPE_NAMES = {
    SOURCE_MAP_LAYER: "any layer",
    SOURCE_ANY_GEOMETRY: "any geometry",
    SOURCE_POINT: "point",
    SOURCE_LINE: "line",
    SOURCE_POLYGON: "polygon",
    SOURCE_RASTER: "raster",
    SOURCE_FILE: "file",
    SOURCE_VECTOR: "any vector (geometry optional)",
}


def enum_value(value: Any) -> int:
    """The integer behind a Qt/QGIS enum member or a plain int."""
    return int(getattr(value, "value", value))


def _flag(*names: str) -> int:
    for owner, name in ((Qgis, "ProcessingAlgorithmFlag"), (QgsProcessingAlgorithm, "Flag")):
        enum = getattr(owner, name, None)
        for member in names:
            if enum is not None and hasattr(enum, member):
                return enum_value(getattr(enum, member))
    raise AttributeError(names)


FLAG_NO_THREADING = _flag("NoThreading", "FlagNoThreading")
FLAG_DEPRECATED = _flag("Deprecated", "FlagDeprecated")
FLAG_HIDDEN = _flag("HideFromToolbox", "FlagHideFromToolbox")


def has_flag(algorithm: QgsProcessingAlgorithm, flag: int) -> bool:
    return bool(enum_value(algorithm.flags()) & flag)


def _parameter_flag(definition: Any, *members: str) -> bool:
    """Whether a parameter definition carries a flag (named differently in 3.22 and 4.x)."""
    flags = enum_value(definition.flags())
    for owner, name in ((Qgis, "ProcessingParameterFlag"), (type(definition), "Flag")):
        enum = getattr(owner, name, None)
        for member in members:
            if enum is not None and hasattr(enum, member):
                return bool(flags & enum_value(getattr(enum, member)))
    return False


def parameter_is_optional(definition: Any) -> bool:
    return _parameter_flag(definition, "Optional", "FlagOptional")


def parameter_is_advanced(definition: Any) -> bool:
    return _parameter_flag(definition, "Advanced", "FlagAdvanced")
