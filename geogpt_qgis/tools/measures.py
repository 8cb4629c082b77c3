"""What a measure in an expression is: its unit and method, and the ellipsoid a project without one measures on.

``$area``, ``$length`` and ``$perimeter`` measure on the project's ellipsoid in
the project's units; ``area()``, ``length()``, ``perimeter()`` and
``distance()`` measure planar, in the layer CRS's own units.  A project
without an ellipsoid (a new headless project, the CLI, the MCP server) makes
``$area`` planar too, and QGIS then scales square degrees by 111,320² or takes
Web Mercator's inflated metres as square metres, with nothing said.  So:

- ``measuring_ellipsoid`` gives the ellipsoid to measure on: the project's, else
  the layer datum's, else WGS 84; tools set it where they evaluate expressions
  (``ellipsoid_scope`` for an expression context, ``use_ellipsoid`` for a
  processing context), so ``$area`` is always ellipsoidal;
- ``expression_figures`` names the unit and method of every measure an
  expression makes (``core.figures``), with a warning for planar measures that
  are not what they look like (in degrees, on Web Mercator, in feet).

Main thread for what touches a project or a context; the rest is pure reads of CRSs.
"""

from __future__ import annotations

import json
from functools import lru_cache

from qgis.core import (
    Qgis,
    QgsCoordinateReferenceSystem,
    QgsEllipsoidUtils,
    QgsExpression,
    QgsExpressionContextScope,
    QgsExpressionContextUtils,
    QgsExpressionNode,
    QgsExpressionNodeFunction,
    QgsFields,
    QgsMapLayer,
    QgsProcessingContext,
    QgsProject,
    QgsUnitTypes,
    QgsVectorLayer,
)
from qgis.PyQt import sip

from geogpt_qgis.core.figures import Figure
from geogpt_qgis.tools.processing.compat import DISTANCE_METERS, enum_member
from geogpt_qgis.tools.safety.expression_size import children

WGS84_ELLIPSOID = "EPSG:7030"
UNITS_PROPERTY = "geogpt/field_units"  # a layer's custom property: {field: {"unit": ..., "method": ..., ...}}
ELLIPSOIDAL_AREA = frozenset({"$area"})
ELLIPSOIDAL_LENGTH = frozenset({"$length", "$perimeter"})
PLANAR_AREA = frozenset({"area"})
PLANAR_LENGTH = frozenset({"length", "perimeter", "distance", "length3D"})
MEASURES = ELLIPSOIDAL_AREA | ELLIPSOIDAL_LENGTH | PLANAR_AREA | PLANAR_LENGTH
ORIGIN_EXPRESSION = enum_member((Qgis, "FieldOrigin", "Expression"), (QgsFields, "FieldOrigin", "OriginExpression"))
# Functions whose value keeps its first argument's unit (an aggregate of areas is an area).
KEEP_UNIT = frozenset(
    {"round", "abs", "coalesce", "to_real", "sum", "mean", "median", "minimum", "maximum", "aggregate"}
)
TAKE_AREA_INSTEAD = "$area measures it on the ellipsoid in m²"
TAKE_LENGTH_INSTEAD = "$length measures it on the ellipsoid in m"


def warm_measure_caches() -> None:
    """Fill, on the main thread while QGIS is idle, the caches a tool's first step would otherwise fill there.

    The first ellipsoid asked for opens QGIS's ellipsoid table (30-55 ms) and the first global expression
    scope reads QGIS's variables (15-30 ms); a first ``run_algorithm`` paid both in its main-thread plan, a
    90-130 ms stall (``make bench``).  The ellipsoid is built on the main thread, which QGIS 3.22 requires
    (``layers.ellipsoid_made_here``).
    """
    QgsEllipsoidUtils.ellipsoidParameters(WGS84_ELLIPSOID)
    QgsExpressionContextUtils.globalScope()


def has_ellipsoid(name: str) -> bool:
    return bool(name) and name.strip().upper() != "NONE"


def measuring_ellipsoid(project_ellipsoid: str, crs: QgsCoordinateReferenceSystem | None) -> str:
    """The project's ellipsoid; without one, the CRS's datum's; else WGS 84."""
    if has_ellipsoid(project_ellipsoid):
        return project_ellipsoid
    acronym = crs.ellipsoidAcronym() if crs is not None and crs.isValid() else ""
    return acronym if has_ellipsoid(acronym) else WGS84_ELLIPSOID


@lru_cache(maxsize=64)
def ellipsoid_name(acronym: str) -> str:
    """``WGS 84`` for ``EPSG:7030``; a custom ellipsoid (``PARAMETER:a:b``) as it is."""
    for definition in QgsEllipsoidUtils.definitions():
        if definition.acronym == acronym:
            return definition.description.split(" (")[0] or acronym
    return acronym


def ellipsoid_scope(ellipsoid: str) -> QgsExpressionContextScope:
    """A scope to append last: ``$area``/``$length`` measure on ``ellipsoid`` in m²/m (QGIS reads these variables)."""
    scope = QgsExpressionContextScope("geogpt measures")
    scope.setVariable("project_ellipsoid", ellipsoid, True)
    scope.setVariable("project_distance_units", QgsUnitTypes.encodeUnit(DISTANCE_METERS), True)
    scope.setVariable("project_area_units", QgsUnitTypes.encodeUnit(QgsUnitTypes.distanceToAreaUnit(DISTANCE_METERS)))
    return scope


def use_ellipsoid(context: QgsProcessingContext, project: QgsProject, crs: QgsCoordinateReferenceSystem | None) -> str:
    """Measure on an ellipsoid in ``context`` when the project has none (main thread); returns the ellipsoid."""
    if has_ellipsoid(context.ellipsoid()):
        kept: str = context.ellipsoid()
        return kept
    ellipsoid = measuring_ellipsoid(project.ellipsoid(), crs)
    QgsEllipsoidUtils.ellipsoidParameters(ellipsoid)  # built here, on the main thread (see layers.ellipsoid_made_here)
    context.setEllipsoid(ellipsoid)
    context.setDistanceUnit(DISTANCE_METERS)
    context.setAreaUnit(QgsUnitTypes.distanceToAreaUnit(DISTANCE_METERS))
    expressions = context.expressionContext()
    expressions.appendScope(ellipsoid_scope(ellipsoid))
    context.setExpressionContext(expressions)
    return ellipsoid


def ellipsoidal_method(ellipsoid: str) -> str:
    return f"ellipsoidal on {ellipsoid_name(ellipsoid)}"


def crs_name(crs: QgsCoordinateReferenceSystem) -> str:
    return crs.authid() or crs.description() or "a custom CRS"


def linear_unit(crs: QgsCoordinateReferenceSystem) -> tuple[str, float]:
    """The CRS's axis unit (``US survey foot``) and metres per unit, by pyproj (QGIS 3.22 reads US feet as feet)."""
    try:
        from pyproj import CRS
        from pyproj.exceptions import CRSError

        axis = CRS.from_wkt(crs.toWkt()).axis_info
        if axis and axis[0].unit_conversion_factor > 0:
            return axis[0].unit_name, float(axis[0].unit_conversion_factor)
    except (ImportError, CRSError, ValueError):
        pass
    units = crs.mapUnits()
    return QgsUnitTypes.toString(units), float(QgsUnitTypes.fromUnitToUnitFactor(units, DISTANCE_METERS) or 0.0)


def planar_figure(what: str, crs: QgsCoordinateReferenceSystem, area: bool) -> Figure:
    """A planar measure in ``crs``'s units, warned when it is not a true area or length in those units."""
    method = f"planar in {crs_name(crs)}"
    instead = TAKE_AREA_INSTEAD if area else TAKE_LENGTH_INSTEAD
    if not crs.isValid():
        return Figure(
            what, None, "layer units (no CRS)", "planar", f"Not a known unit: the layer has no CRS; {instead}"
        )
    if crs.isGeographic():
        unit = "square degrees" if area else "degrees"
        return Figure(what, None, unit, method, f"Not a true {'area' if area else 'length'}: {instead}")
    name, metres = linear_unit(crs)
    if crs.projectionAcronym() == "merc":
        unit = "m²" if area else "m"
        warning = f"Web Mercator inflates {'areas' if area else 'lengths'} away from the equator; {instead}"
        return Figure(what, None, unit, method, warning)
    if abs(metres - 1.0) < 1e-12:
        return Figure(what, None, "m²" if area else "m", method)
    short = _short_unit(name)
    if area:
        factor = metres * metres
        return Figure(what, None, f"{short}²", method, f"Not m²: 1 {short}² ({name}) = {factor:.9g} m²; {instead}")
    return Figure(what, None, short, method, f"Not metres: 1 {short} ({name}) = {metres:.9g} m; {instead}")


def _short_unit(name: str) -> str:
    lowered = name.lower()
    if "us survey" in lowered:
        return "ftUS"
    if "foot" in lowered or "feet" in lowered:
        return "ft"
    return name


def expression_figures(
    text: str, what: str, crs: QgsCoordinateReferenceSystem, ellipsoid: str, aggregate: str = ""
) -> list[Figure]:
    """The unit and method of each measure in ``text`` (evaluated on a layer in ``crs``, on ``ellipsoid``).

    ``aggregate`` names a statistic over it (``sum``); a count carries no unit.
    """
    if aggregate.lower() in ("count", "count_distinct", "count_missing", "concatenate", "array_agg"):
        return []
    parsed = QgsExpression(text)
    if parsed.hasParserError():
        return []
    names = set(parsed.referencedFunctions()) & MEASURES
    if "length" in names and not parsed.needsGeometry():
        names.discard("length")  # length('text'): characters
    figures = []
    for name in sorted(names):
        label = f"{what}: {name}()" if not name.startswith("$") else f"{what}: {name}"
        if name in ELLIPSOIDAL_AREA:
            figures.append(Figure(label, None, "m²", ellipsoidal_method(ellipsoid)))
        elif name in ELLIPSOIDAL_LENGTH:
            figures.append(Figure(label, None, "m", ellipsoidal_method(ellipsoid)))
        else:
            figures.append(planar_figure(label, crs, name in PLANAR_AREA))
    return figures


def whole_measure(text: str) -> bool:
    """Whether ``text``'s value *is* a measure (``$area``, ``round($area, 1)``), not one derived from it.

    ``"population" / ($area / 1000000)`` uses ``$area`` but is people per km²: its field gets no unit.
    """
    parsed = QgsExpression(text)
    node = parsed.rootNode() if not parsed.hasParserError() else None
    while node is not None and node.nodeType() == QgsExpressionNode.NodeType.ntFunction:
        kids = children(node) or []
        name = QgsExpression.Functions()[sip.cast(node, QgsExpressionNodeFunction).fnIndex()].name()
        if name in MEASURES:
            return True
        if name not in KEEP_UNIT or not kids:
            return False
        node = kids[0]
    return False


def field_units(layer: QgsMapLayer) -> dict[str, Figure]:
    """The fields of ``layer`` whose unit is known: recorded when a tool wrote them, or from expression fields."""
    known: dict[str, Figure] = {}
    raw = layer.customProperty(UNITS_PROPERTY, "")
    try:
        stored = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        stored = {}
    if isinstance(stored, dict):
        for name, data in stored.items():
            figure = Figure.from_dict(data)
            if figure is not None:
                known[str(name)] = figure
    if not isinstance(layer, QgsVectorLayer):
        return known
    project = layer.project() or QgsProject.instance()
    ellipsoid = project.ellipsoid() if project is not None else ""
    for index, field in enumerate(layer.fields()):
        if layer.fields().fieldOrigin(index) != ORIGIN_EXPRESSION or field.name() in known:
            continue
        # QGIS measures an expression field on the project's ellipsoid, or planar without one.
        text = layer.expressionField(index)
        found = expression_figures(text, f"field {field.name()!r}", layer.crs(), ellipsoid or "NONE")
        if found and whole_measure(text):
            known[field.name()] = _bare_project(found[0], layer.crs()) if not has_ellipsoid(ellipsoid) else found[0]
    return known


def _bare_project(figure: Figure, crs: QgsCoordinateReferenceSystem) -> Figure:
    """``$area`` in a project without an ellipsoid: planar in the layer's CRS, converted to m² by QGIS."""
    if not figure.method.startswith("ellipsoidal"):
        return figure
    warning = ""
    if crs.isGeographic():
        warning = "QGIS scaled degrees to metres (the project has no ellipsoid): not a true measure"
    elif crs.projectionAcronym() == "merc":
        warning = "Web Mercator inflates measures away from the equator (the project has no ellipsoid)"
    return Figure(figure.what, None, figure.unit, f"planar in {crs_name(crs)} (the project has no ellipsoid)", warning)


def record_field_units(layer: QgsMapLayer, units: dict[str, Figure]) -> None:
    """Remember the unit and method of fields a tool wrote (saved with the project; main thread)."""
    if not units:
        return
    known = {name: figure.to_dict() for name, figure in field_units(layer).items()}
    known.update({name: figure.to_dict() for name, figure in units.items()})
    layer.setCustomProperty(UNITS_PROPERTY, json.dumps(known, ensure_ascii=False))


def header_with_unit(name: str, figure: Figure | None) -> str:
    """``area (m², ellipsoidal on WGS 84)`` for a column whose unit is known."""
    return f"{name} ({figure.basis})" if figure is not None else name
