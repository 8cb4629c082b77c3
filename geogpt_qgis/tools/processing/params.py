"""Check and convert the model's parameter values before an algorithm runs (main thread).

Every problem comes back as a ``ToolError`` the model can act on: unknown
parameter (the valid names), missing required value, invalid enum value (the
allowed ones), unknown layer or field (the closest names), a layer of the
wrong geometry type.  Distances on layers in a geographic CRS are never
applied as degrees: the layer is scheduled for reprojection to a local UTM
zone, and the model is told.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsExpression,
    QgsMapLayer,
    QgsProcessing,
    QgsProcessingAlgorithm,
    QgsProject,
    QgsRasterLayer,
    QgsUnitTypes,
    QgsVectorLayer,
)

from geogpt_qgis.core.artifacts import LayerRef
from geogpt_qgis.core.fuzzy import closest_names, did_you_mean
from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layers import geometry_label, ordered_layers
from geogpt_qgis.tools.processing.compat import (
    DISTANCE_METERS,
    DISTANCE_UNKNOWN,
    GEOMETRY_LINE,
    GEOMETRY_POINT,
    GEOMETRY_POLYGON,
    NUMBER_INTEGER,
    SOURCE_ANY_GEOMETRY,
    SOURCE_LINE,
    SOURCE_MAP_LAYER,
    SOURCE_POINT,
    SOURCE_POLYGON,
    SOURCE_RASTER,
    SOURCE_TYPE_NAMES,
    SOURCE_VECTOR,
    enum_value,
    parameter_is_optional,
)
from geogpt_qgis.tools.processing.crs import utm_crs_for_layer
from geogpt_qgis.tools.processing.curves import coarse_note, curve_parameter
from geogpt_qgis.tools.processing.describe import made_outputs, parameter_type_label
from geogpt_qgis.tools.processing.raster_checks import check_raster_inputs
from geogpt_qgis.tools.safety.algorithms import TEMPORARY_WORDS, is_temporary_destination
from geogpt_qgis.tools.thread_guard import assert_main_thread

TEMPORARY_OUTPUT: str = QgsProcessing.TEMPORARY_OUTPUT
LAYER_TYPES = {"source", "vector", "raster", "layer", "mesh", "pointcloud"}
VECTOR_FILE_TYPES = {"source", "vector"}  # file inputs opened (OGR) to learn their CRS for the distance rules

_GDAL_ELLIPSE_GRIDS = ("gridaverage", "griddatametrics", "gridinversedistance", "gridnearestneighbor")
# Parameters QGIS types "number" (no parent layer) that are linear distances in the CRS units of
# the named input layer: (algorithm id, parameter) -> that input.  They follow the same rules as
# "distance" parameters.  Every entry exists in QGIS 3.22, 3.40 and 3.44 (tests/qgis/test_distance_units.py).
LINEAR_NUMBERS: dict[tuple[str, str], str] = {
    ("native:taperedbuffer", "START_WIDTH"): "INPUT",
    ("native:taperedbuffer", "END_WIDTH"): "INPUT",
    ("native:wedgebuffers", "OUTER_RADIUS"): "INPUT",
    ("native:wedgebuffers", "INNER_RADIUS"): "INPUT",
    # GDAL grid search radii, in the point layer's georeferenced units (0 = no limit).
    **{(f"gdal:{grid}", radius): "INPUT" for grid in _GDAL_ELLIPSE_GRIDS for radius in ("RADIUS_1", "RADIUS_2")},
    ("gdal:gridinversedistancenearestneighbor", "RADIUS"): "INPUT",
    ("gdal:gridlinear", "RADIUS"): "INPUT",
}


@dataclass
class Reprojection:
    """A geographic-CRS input that must be reprojected before a distance can mean metres."""

    parameter: str
    layer_id: str
    layer_name: str
    target: QgsCoordinateReferenceSystem


@dataclass
class PreparedParameters:
    """Values ready for QGIS, plus what the model should be told about them."""

    values: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    input_names: dict[str, str] = field(default_factory=dict)  # parameter -> layer name, for output naming
    input_layers: list[str] = field(default_factory=list)  # names of every project layer the call reads
    input_refs: list[LayerRef] = field(default_factory=list)  # the same layers, by name and id (the artifact)
    reprojections: list[Reprojection] = field(default_factory=list)
    destinations: list[str] = field(default_factory=list)


def resolve_parameters(
    algorithm: QgsProcessingAlgorithm, raw: dict[str, Any], project: QgsProject, approved: bool = False
) -> PreparedParameters:
    """Validate ``raw`` against the algorithm's parameters and convert the values for QGIS.

    ``approved``: the user approved this call (file outputs); what needs approval is decided
    by ``tools/safety/algorithms.py`` before this runs.
    """
    assert_main_thread("processing parameters were resolved against the project")
    definitions = {d.name(): d for d in algorithm.parameterDefinitions()}
    raw = _canonical_names(algorithm, raw or {}, definitions)
    prepared = PreparedParameters(values={})
    resolved_layers: dict[str, QgsMapLayer | None] = {}
    files: dict[str, str] = {}  # layer parameter -> file path given instead of a project layer
    made = {d.name() for d in made_outputs(algorithm)}
    for name, definition in definitions.items():
        kind = definition.type()
        value = raw.get(name)
        if definition.isDestination():
            if value is None and name not in made:
                continue  # an optional extra output (FAIL_OUTPUT, NON_MATCHING...): only when asked for
            prepared.values[name] = _destination(definition, value, approved)
            prepared.destinations.append(name)
            continue
        if value is None or (isinstance(value, str) and not value.strip() and kind not in ("string", "expression")):
            if not parameter_is_optional(definition) and _no_default(definition):
                raise ToolError(
                    f"missing required parameter {name} ({parameter_type_label(definition, algorithm)}: "
                    f"{definition.description()}) for {algorithm.id()}"
                )
            continue
        if kind in LAYER_TYPES:
            layer_value, layer = _layer_value(value, definition, project, name)
            prepared.values[name] = layer_value
            resolved_layers[name] = layer
            if layer is not None:
                prepared.input_names[name] = layer.name()
                prepared.input_layers.append(layer.name())
                prepared.input_refs.append(LayerRef.of(layer))
            elif kind in VECTOR_FILE_TYPES:
                files[name] = layer_value
        elif kind == "multilayer":
            items = value if isinstance(value, list) else [value]
            converted = [_layer_value(item, definition, project, name) for item in items]
            prepared.values[name] = [v for v, _ in converted]
            names = [layer.name() for _, layer in converted if layer is not None]
            prepared.input_layers += names
            prepared.input_refs += [LayerRef.of(layer) for _, layer in converted if layer is not None]
            if names:
                prepared.input_names[name] = "_".join(names[:2])
        else:
            units = _units_reader(algorithm.id(), definition, raw, project)
            prepared.values[name] = _scalar_value(algorithm, definition, value, project, units)
    _check_fields(algorithm, definitions, prepared, resolved_layers)
    _accurate_curves(algorithm, definitions, prepared)
    _plan_reprojections(algorithm.id(), definitions, prepared, resolved_layers, files)
    check_raster_inputs(algorithm, prepared.values, resolved_layers)
    return prepared


def check_before_approval(algorithm: QgsProcessingAlgorithm, raw: dict[str, Any], project: QgsProject) -> None:
    """The raster checks no approval can change, before the user is asked to approve the call (main thread).

    A call that will fail whatever the user decides (a class label where its
    code goes, a band out of range, a raster for a vector input, a slope on a
    geographic DEM) raises its ``ToolError`` here, so the model gets the error
    and the user is never shown a card for it.  Only the layers and text of
    the call are read; outputs and everything else wait for the run.
    """
    definitions = {d.name(): d for d in algorithm.parameterDefinitions()}
    try:
        raw = _canonical_names(algorithm, raw or {}, definitions)
    except ToolError:
        return  # reported when the call runs
    values: dict[str, Any] = {}
    layers: dict[str, QgsMapLayer | None] = {}
    for name, definition in definitions.items():
        value = raw.get(name)
        if value is None or definition.isDestination():
            continue
        if definition.type() in LAYER_TYPES:
            try:
                values[name], layers[name] = _layer_value(value, definition, project, name)
            except ToolError:
                continue  # reported when the call runs
        else:
            values[name] = value
    check_raster_inputs(algorithm, values, layers)


def _accurate_curves(
    algorithm: QgsProcessingAlgorithm, definitions: dict[str, Any], prepared: PreparedParameters
) -> None:
    """Arcs drawn finely enough for areas within 0.1% when the model left it to us; a note when it chose coarser."""
    for name in definitions:
        parameter = curve_parameter(algorithm.id(), name)
        if parameter is None:
            continue
        if name not in prepared.values:
            accurate = parameter.accurate
            prepared.values[name] = int(accurate) if float(accurate).is_integer() else accurate
            continue
        note = coarse_note(algorithm.id(), name, float(prepared.values[name]))
        if note:
            prepared.notes.append(note)


def _canonical_names(
    algorithm: QgsProcessingAlgorithm, raw: dict[str, Any], definitions: dict[str, Any]
) -> dict[str, Any]:
    """Accept parameter names in any case; reject unknown ones with the valid names."""
    by_lower = {name.lower(): name for name in definitions}
    canonical: dict[str, Any] = {}
    for key, value in raw.items():
        name = key if key in definitions else by_lower.get(str(key).lower())
        if name is None:
            close = closest_names(str(key), list(definitions), 2)
            hint = f" Did you mean {' or '.join(close)}?" if close else ""
            inputs = [n for n, d in definitions.items() if not d.isDestination()]
            raise ToolError(f"{algorithm.id()} has no parameter {key!r}.{hint} Its parameters: {', '.join(inputs)}.")
        canonical[name] = value
    return canonical


def _no_default(definition: Any) -> bool:
    default = definition.defaultValue()
    return default is None or (hasattr(default, "isNull") and default.isNull())


def _destination(definition: Any, value: Any, approved: bool) -> str:
    if value is None or (isinstance(value, str) and value.strip().lower() in TEMPORARY_WORDS):
        return TEMPORARY_OUTPUT
    if not isinstance(value, str):
        raise ToolError(f"{definition.name()} takes a file path (or leave it out for a temporary layer)")
    temporary = is_temporary_destination(value)
    if temporary or approved:
        if not temporary:
            Path(value).expanduser().parent.mkdir(parents=True, exist_ok=True)
        return str(Path(value).expanduser())
    raise ToolError(f"{definition.name()}: writing {value!r} needs the user's approval")


def _find_project_layer(value: str, project: QgsProject) -> QgsMapLayer | None:
    layers = ordered_layers(project)
    for layer in layers:
        if layer.id() == value:
            return layer
    for exact in (True, False):
        matches = [
            candidate
            for candidate in layers
            if (candidate.name() == value if exact else candidate.name().casefold() == value.casefold())
        ]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            ids = ", ".join(match.id() for match in matches)
            raise ToolError(f"several layers are named {value!r} (ids: {ids}); pass the layer id instead")
    return None


def _layer_value(value: Any, definition: Any, project: QgsProject, name: str) -> tuple[str, QgsMapLayer | None]:
    """A layer parameter value: project layer (by name or id) -> its id; an existing file path -> the path."""
    if not isinstance(value, str):
        raise ToolError(f"{name} takes a layer name or id (or a file path), not {value!r}")
    text = value.strip()
    layer = _find_project_layer(text, project)
    if layer is None:
        if _is_file(text):
            return text, None
        names = [candidate.name() for candidate in ordered_layers(project)]
        raise ToolError(f"{name}: " + did_you_mean(text, names, "layer"))
    _check_layer_type(layer, definition, name)
    return layer.id(), layer


def _is_file(text: str) -> bool:
    return Path(text.split("|", 1)[0]).is_file()


def _open_vector_file(path: str) -> QgsVectorLayer | None:
    """A file input opened through OGR (main thread) to read its CRS and extent; ``None`` when it is not one."""
    assert_main_thread("a file input was opened to read its CRS")
    layer = QgsVectorLayer(path, Path(path.split("|", 1)[0]).stem, "ogr")
    return layer if layer.isValid() and layer.isSpatial() else None


def _accepted_types(definition: Any) -> list[int]:
    if definition.type() == "raster":
        return [SOURCE_RASTER]
    if hasattr(definition, "dataTypes"):
        return [enum_value(t) for t in definition.dataTypes()]
    if hasattr(definition, "layerType"):
        return [enum_value(definition.layerType())]
    return []


def layer_fits(layer: QgsMapLayer, definition: Any) -> bool:
    """Whether ``layer`` is of a kind (vector or raster, geometry type) the parameter ``definition`` accepts.

    A feature source that lists no data types (native:buffer's INPUT) takes any vector layer, never a raster.
    """
    if definition.type() in ("source", "vector") and not isinstance(layer, QgsVectorLayer):
        return False
    try:
        _check_layer_type(layer, definition, definition.name())
    except ToolError:
        return False
    return True


def _check_layer_type(layer: QgsMapLayer, definition: Any, name: str) -> None:
    accepted = _accepted_types(definition)
    if not accepted or SOURCE_MAP_LAYER in accepted:
        return
    if isinstance(layer, QgsRasterLayer):
        if SOURCE_RASTER in accepted:
            return
        raise ToolError(f"{name} needs a vector layer; {layer.name()!r} is a raster layer")
    if not isinstance(layer, QgsVectorLayer):
        raise ToolError(f"{name} needs a {_wanted(accepted)} layer; {layer.name()!r} is not one")
    if SOURCE_VECTOR in accepted or (SOURCE_ANY_GEOMETRY in accepted and layer.isSpatial()):
        return
    if accepted == [SOURCE_RASTER]:
        raise ToolError(f"{name} needs a raster layer; {layer.name()!r} is a vector layer")
    geometry = enum_value(layer.geometryType())
    wanted = {SOURCE_POINT: GEOMETRY_POINT, SOURCE_LINE: GEOMETRY_LINE, SOURCE_POLYGON: GEOMETRY_POLYGON}
    if any(wanted.get(t) == geometry for t in accepted):
        return
    raise ToolError(f"{name} needs a {_wanted(accepted)} layer; {layer.name()!r} is a {geometry_label(layer)} layer")


def _wanted(accepted: list[int]) -> str:
    return " or ".join(SOURCE_TYPE_NAMES.get(t, str(t)) for t in accepted)


_LENGTH_UNITS = {
    "m": 1.0, "meter": 1.0, "meters": 1.0, "metre": 1.0, "metres": 1.0,
    "km": 1000.0, "kilometer": 1000.0, "kilometers": 1000.0, "kilometre": 1000.0, "kilometres": 1000.0,
    "cm": 0.01, "ft": 0.3048, "foot": 0.3048, "feet": 0.3048, "yd": 0.9144, "yard": 0.9144, "yards": 0.9144,
    "mi": 1609.344, "mile": 1609.344, "miles": 1609.344,
}  # fmt: skip
_NUMBER_WITH_UNIT = re.compile(r"^\s*(-?[\d.,]*\d)\s*([a-zA-Z°]*)\s*$")
_GROUPED = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")  # 1,000 or 12,500.5: commas group thousands
_PLAIN = re.compile(r"^-?\d+(?:\.\d+)?$")


@dataclass(frozen=True)
class DistanceUnits:
    """What a distance number means on its input layer: the unit's name and the metres in one unit.

    ``metres`` is ``None`` when the CRS does not say (a custom CRS without units).
    """

    name: str
    metres: float | None
    crs: str = ""  # the layer's CRS, for the message


METRES = DistanceUnits("metres", 1.0)


def crs_distance_units(crs: QgsCoordinateReferenceSystem) -> DistanceUnits:
    """The units a distance is applied in on a layer in ``crs``: metres after a geographic layer's reprojection."""
    if not crs.isValid() or crs.isGeographic():
        return METRES  # geographic layers are reprojected to UTM first; no CRS: QGIS's own default
    unit = crs.mapUnits()
    label = crs.authid() or crs.description()
    if unit == DISTANCE_METERS:
        return METRES
    if unit == DISTANCE_UNKNOWN:
        return DistanceUnits("map units", None, label)
    return DistanceUnits(QgsUnitTypes.toString(unit), QgsUnitTypes.fromUnitToUnitFactor(unit, DISTANCE_METERS), label)


def _distance_parent(algorithm_id: str, definition: Any) -> str:
    """The input layer whose CRS units a linear parameter is in, or ``""`` for any other parameter."""
    if definition.type() == "distance":
        return str(definition.parentParameterName() or "")
    return LINEAR_NUMBERS.get((algorithm_id, definition.name()), "")


def _units_reader(
    algorithm_id: str, definition: Any, raw: dict[str, Any], project: QgsProject
) -> Callable[[], DistanceUnits] | None:
    """For a linear parameter, how to learn its units (read only when its value needs explaining)."""
    parent = _distance_parent(algorithm_id, definition)
    if parent:
        return lambda: _parent_units(raw.get(parent), project)
    return (lambda: METRES) if definition.type() == "distance" else None


def _parent_units(value: Any, project: QgsProject) -> DistanceUnits:
    """The units of the layer named by ``value`` (a project layer or a vector file), metres when unknown."""
    if not isinstance(value, str):
        return METRES
    try:
        layer: QgsMapLayer | None = _find_project_layer(value.strip(), project)
    except ToolError:
        return METRES  # an ambiguous name is reported for the layer parameter itself
    if layer is None and _is_file(value.strip()):
        layer = _open_vector_file(value.strip())
    return crs_distance_units(layer.crs()) if layer is not None else METRES


def _plain(value: float) -> str:
    """A number as the model should send it back: plain decimal, no exponent, no thousands commas."""
    return plain_number(value, grouping=False)


def _amount(name: str, text: str) -> float:
    """The number in ``text``: commas only as thousands separators (1,000), never as a decimal comma."""
    if _GROUPED.match(text):
        return float(text.replace(",", ""))
    if _PLAIN.match(text):
        return float(text)
    raise ToolError(
        f"{name}: {text!r} is not a plain number (is the comma a decimal comma or a thousands separator?); "
        "give digits with a point for decimals, e.g. 1000 or 2.5"
    )


def _not_a_number(name: str, value: Any, units: DistanceUnits | None) -> str:
    """Why ``value`` is not a number, naming the number to send instead when a unit was written out.

    ``units`` is set for linear distances: the units QGIS applies them in (metres
    for a layer in degrees, which is reprojected to a metric CRS first; feet on a
    CRS in feet), so "1 km" means DISTANCE=1000 on a metric layer.
    """
    if units is None:
        match = _NUMBER_WITH_UNIT.match(str(value))
        if match and not match.group(2) and "," in match.group(1):
            return f"{name} takes a number, not {value!r}: give {name}={_plain(_amount(name, match.group(1)))}"
        return f"{name} takes a number, not {value!r}"
    where = f" (the units of {units.crs})" if units.crs else ""
    match = _NUMBER_WITH_UNIT.match(str(value))
    if match:
        amount, unit = _amount(name, match.group(1)), match.group(2).lower()
        if unit in ("°", "deg", "degree", "degrees"):
            return f"{name} takes {units.name}{where}, not degrees: layers in degrees are reprojected first"
        if unit in _LENGTH_UNITS and units.metres:
            converted = _plain(float(f"{amount * _LENGTH_UNITS[unit] / units.metres:.10g}"))
            return f"{name} takes a plain number in {units.name}{where}, not {value!r}: give {name}={converted}"
        if not unit:
            return f"{name} takes a plain number in {units.name}{where}, not {value!r}: give {name}={_plain(amount)}"
    return f"{name} takes a plain number in {units.name}{where}, not {value!r}, e.g. {name}=500"


def _scalar_value(
    algorithm: QgsProcessingAlgorithm,
    definition: Any,
    value: Any,
    project: QgsProject,
    units: Callable[[], DistanceUnits] | None = None,
) -> Any:
    name, kind = definition.name(), definition.type()
    if kind == "enum":
        return _enum_value(definition, value)
    if kind in ("number", "distance", "duration", "scale"):
        return _number_value(definition, value, units)
    if kind == "boolean":
        return _boolean_value(name, value)
    if kind == "expression":
        parsed = QgsExpression(str(value))
        if parsed.hasParserError():
            raise ToolError(f"{name}: invalid expression: {' '.join(parsed.parserErrorString().split())}")
        return str(value)
    if kind == "crs":
        layer = _find_project_layer(str(value), project)
        if layer is not None:
            return layer.crs().authid() or layer.crs().toWkt()
        crs = QgsCoordinateReferenceSystem(str(value))
        if not crs.isValid():
            raise ToolError(f"{name}: {value!r} is not a CRS; use an authority id like EPSG:4326 or a layer name")
        return crs.authid() or str(value)
    if kind == "extent":
        layer = _find_project_layer(str(value), project) if isinstance(value, str) else None
        return layer.id() if layer is not None else value
    if kind == "field":
        if definition.allowMultiple():
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            return [str(v) for v in value]
        return value if isinstance(value, str) else str(value)
    return value


def _number_value(definition: Any, value: Any, units: Callable[[], DistanceUnits] | None = None) -> float | int:
    name, kind = definition.name(), definition.type()
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ToolError(_not_a_number(name, value, units() if units else None)) from None
    if kind != "number":
        return number
    if number < definition.minimum() or number > definition.maximum():
        low, high = definition.minimum(), definition.maximum()
        raise ToolError(f"{name} must be between {_plain(low)} and {_plain(high)}, not {_plain(number)}")
    if enum_value(definition.dataType()) == NUMBER_INTEGER:
        if not number.is_integer():
            raise ToolError(f"{name} takes a whole number, not {value!r}")
        return int(number)
    return number


def _boolean_value(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "yes", "1"):
        return True
    if str(value).strip().lower() in ("false", "no", "0"):
        return False
    raise ToolError(f"{name} takes true or false, not {value!r}")


def _enum_value(definition: Any, value: Any) -> int | list[int]:
    options = definition.options()
    choices = ", ".join(f"{i}={o}" for i, o in enumerate(options))

    def one(item: Any) -> int:
        if isinstance(item, bool):
            raise ToolError(f"{definition.name()}: {item!r} is not one of {choices}")
        if isinstance(item, (int, float)) and float(item).is_integer() and 0 <= int(item) < len(options):
            return int(item)
        text = str(item).strip()
        if text.isdigit() and int(text) < len(options):
            return int(text)
        lowered = [o.casefold() for o in options]
        if text.casefold() in lowered:
            return lowered.index(text.casefold())
        partial = [i for i, o in enumerate(lowered) if text.casefold() and text.casefold() in o]
        if len(partial) == 1:
            return partial[0]
        raise ToolError(f"{definition.name()}: {item!r} is not one of {choices}")

    if definition.allowMultiple():
        items = value if isinstance(value, list) else [value]
        return [one(item) for item in items]
    if isinstance(value, list):
        if len(value) != 1:
            raise ToolError(f"{definition.name()} takes one value of {choices}, not a list")
        value = value[0]
    return one(value)


def _check_fields(
    algorithm: QgsProcessingAlgorithm,
    definitions: dict[str, Any],
    prepared: PreparedParameters,
    layers: dict[str, QgsMapLayer | None],
) -> None:
    for name, definition in definitions.items():
        if definition.type() != "field" or name not in prepared.values:
            continue
        parent = layers.get(definition.parentLayerParameterName())
        if not isinstance(parent, QgsVectorLayer):
            continue
        names = parent.fields().names()
        value = prepared.values[name]
        for field_name in value if isinstance(value, list) else [value]:
            if field_name not in names:
                raise ToolError(f"{name}: " + did_you_mean(field_name, names, f"field in {parent.name()!r}"))


def _plan_reprojections(
    algorithm_id: str,
    definitions: dict[str, Any],
    prepared: PreparedParameters,
    layers: dict[str, QgsMapLayer | None],
    files: dict[str, str],
) -> None:
    """Distances on geographic layers: reproject the layer to its UTM zone first, and say so.

    A vector file given by path is opened (main thread) to read its CRS and
    reprojected like a project layer; linear parameters QGIS types "number"
    (``LINEAR_NUMBERS``) count as distances.
    """
    told: set[str] = set()  # inputs whose non-metre units were named
    for name, definition in definitions.items():
        parent_name = _distance_parent(algorithm_id, definition)
        if not parent_name or name not in prepared.values or not prepared.values[name]:
            continue
        if any(r.parameter == parent_name for r in prepared.reprojections):
            continue
        layer = layers.get(parent_name)
        path = files.get(parent_name) if layer is None else None
        if path is not None:
            layer = _open_vector_file(path)
        if layer is None or not layer.crs().isValid():
            continue
        if not layer.crs().isGeographic():
            units = crs_distance_units(layer.crs())
            if units != METRES and parent_name not in told:
                told.add(parent_name)
                prepared.notes.append(f"{name} is in {units.name}, the units of {layer.name()!r} ({units.crs}).")
            continue
        target, description = utm_crs_for_layer(layer)
        source = path if path is not None else layer.id()
        prepared.reprojections.append(Reprojection(parent_name, source, layer.name(), target))
        prepared.notes.append(
            f"{layer.name()!r} is in {layer.crs().authid()} (degrees), so {name}={_plain(prepared.values[name])} would "
            f"be degrees; it was reprojected to {target.authid()} ({description}) first, so {name} is in metres "
            "and the result is in that CRS."
        )
