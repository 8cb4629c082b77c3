"""Enum values that moved between QGIS 3.22 and 4.x, read in a way that works on both.

QGIS 3.22 exposes ``QgsProcessing.SourceType``, ``QgsUnitTypes.DistanceUnit``
and ``QgsProcessingAlgorithm.Flag``; later versions move them to scoped enums
on ``Qgis`` (Python enums under Qt 6), and some members change value.  So
every member is found by name here, in one place, and compared as a member
(or through the integer of a member found by name, for flag masks and table
keys), never through a number written in the code.
"""

from __future__ import annotations

from typing import Any

from qgis.core import (
    Qgis,
    QgsProcessing,
    QgsProcessingAlgorithm,
    QgsProcessingParameterNumber,
    QgsUnitTypes,
    QgsWkbTypes,
)


def enum_member(*places: tuple[Any, str, str]) -> Any:
    """The first enum member found among ``(owner, enum name, member name)`` places, newest first.

    Members are compared as members, never as integers: their values move
    between versions (``Qgis.DistanceUnit.Unknown`` is not 9 on 3.40, where
    ``QgsUnitTypes.DistanceUnknownUnit`` was).
    """
    for owner, enum_name, member in places:
        enum = getattr(owner, enum_name, None)
        if enum is not None and hasattr(enum, member):
            return getattr(enum, member)
    raise AttributeError(places)


# Qgis.DistanceUnit (3.30+) / QgsUnitTypes.DistanceUnit (3.22).
DISTANCE_UNKNOWN = enum_member((Qgis, "DistanceUnit", "Unknown"), (QgsUnitTypes, "DistanceUnit", "DistanceUnknownUnit"))
DISTANCE_METERS = enum_member((Qgis, "DistanceUnit", "Meters"), (QgsUnitTypes, "DistanceUnit", "DistanceMeters"))


def enum_value(value: Any) -> int:
    """The integer behind a Qt/QGIS enum member or a plain int."""
    return int(getattr(value, "value", value))


def _source(member: str) -> int:
    return enum_value(
        enum_member((Qgis, "ProcessingSourceType", member), (QgsProcessing, "SourceType", f"Type{member}"))
    )


def _geometry(member: str) -> int:
    return enum_value(enum_member((Qgis, "GeometryType", member), (QgsWkbTypes, "GeometryType", f"{member}Geometry")))


# Qgis.ProcessingSourceType (3.36+) / QgsProcessing.SourceType (3.22), read by member name.  Their
# integers key the tables below and match what parameter definitions report through ``enum_value``.
SOURCE_MAP_LAYER = _source("MapLayer")
SOURCE_ANY_GEOMETRY = _source("VectorAnyGeometry")
SOURCE_POINT = _source("VectorPoint")
SOURCE_LINE = _source("VectorLine")
SOURCE_POLYGON = _source("VectorPolygon")
SOURCE_RASTER = _source("Raster")
SOURCE_FILE = _source("File")
SOURCE_VECTOR = _source("Vector")  # any vector, with or without geometry

# Qgis.GeometryType (3.30+) / QgsWkbTypes.GeometryType (3.22).
GEOMETRY_POINT, GEOMETRY_LINE, GEOMETRY_POLYGON = _geometry("Point"), _geometry("Line"), _geometry("Polygon")

# Qgis.ProcessingNumberParameterType (3.36+) / QgsProcessingParameterNumber.Type (3.22).
NUMBER_INTEGER = enum_value(
    enum_member((Qgis, "ProcessingNumberParameterType", "Integer"), (QgsProcessingParameterNumber, "Type", "Integer"))
)

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
