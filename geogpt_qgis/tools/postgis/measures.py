"""The unit and method of a SQL result's measure columns (ST_Area, ST_Length, ST_Perimeter, ST_Distance).

PostGIS measures a geometry planar, in the units of its SRID (square degrees
for EPSG:4326), and a geography on the WGS 84 spheroid in metres.  A bare
``ST_Area(geom)`` column looks like m² whatever it is.  So each select item
that is such a measure (or one wrapped in a function that keeps its unit:
``round``, ``sum``...) gets a figure: read from the parsed statement (a cast to
geography, the spheroid variants) and, for a plain geometry column, from the
SRID ``geometry_columns`` declares for it.  Worker thread; CRS units from pyproj.
"""

from __future__ import annotations

from typing import Any

from geogpt_qgis.core.figures import Figure
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.database import Database

AREAS = frozenset({"st_area", "st_area2d"})
LENGTHS = frozenset({"st_length", "st_length2d", "st_perimeter", "st_perimeter2d", "st_distance", "st_3dlength"})
SPHEROIDAL = frozenset({"st_distancesphere", "st_distancespheroid", "st_lengthspheroid"})
KEEP_UNIT = frozenset({"round", "abs", "sum", "avg", "min", "max", "coalesce", "trunc"})
SPHEROID = "ellipsoidal on the WGS 84 spheroid (geography)"


def measure_figures(db: Database, tree: Any, columns: list[str], tables: list[str]) -> list[Figure]:
    """A figure per result column that is a PostGIS measure (``columns``: the result's names, in order)."""
    targets = list(getattr(tree, "targetList", None) or [])
    if len(targets) != len(columns) or any(_is_star(t.val) for t in targets):
        return []  # a * expands to columns we cannot line up with the select items
    figures = []
    for target, column in zip(targets, columns, strict=True):
        call = _measure_call(target.val)
        if call is not None:
            figures.append(_figure(db, call, column, tables))
    return figures


def _name(call: Any) -> str:
    return str(call.funcname[-1].sval).lower() if getattr(call, "funcname", None) else ""


def _is_star(node: Any) -> bool:
    fields: Any = getattr(node, "fields", None) or ()
    return bool(fields) and type(fields[-1]).__name__ == "A_Star"


def _measure_call(node: Any) -> Any:
    """The measure function call ``node`` is, or wraps in unit-keeping functions only; else ``None``."""
    while type(node).__name__ == "FuncCall":
        name = _name(node)
        if name in AREAS | LENGTHS | SPHEROIDAL:
            return node
        args = list(node.args or [])
        if name not in KEEP_UNIT or not args:
            return None
        node = args[0]
    return None


def _figure(db: Database, call: Any, column: str, tables: list[str]) -> Figure:
    name = _name(call)
    area = name in AREAS
    what = f"column {column!r} ({name})"
    args = list(call.args or [])
    if name in SPHEROIDAL or any(_geography_cast(a) for a in args):
        return Figure(what, None, "m²" if area else "m", SPHEROID)
    srid, kind = _declared(db, args[0] if args else None, tables)
    if kind == "geography":
        return Figure(what, None, "m²" if area else "m", SPHEROID)
    instead = f"{name}(geom::geography) gives {'m²' if area else 'm'} on the spheroid"
    if not srid:
        return Figure(what, None, "SRID units", "planar in the geometry's SRID", f"Units unknown here; {instead}")
    unit, metres, geographic = _srid_unit(srid)
    method = f"planar in EPSG:{srid}"
    if geographic:
        return Figure(what, None, "square degrees" if area else "degrees", method, f"Not a true measure: {instead}")
    if abs(metres - 1.0) < 1e-12:
        return Figure(what, None, "m²" if area else "m", method)
    if metres <= 0:
        return Figure(what, None, "SRID units", method, f"Units of EPSG:{srid} unknown here; {instead}")
    shown = f"{unit}²" if area else unit
    factor = metres * metres if area else metres
    return Figure(what, None, shown, method, f"Not metres: 1 {shown} = {factor:.9g} {'m²' if area else 'm'}")


def _geography_cast(node: Any) -> bool:
    if type(node).__name__ != "TypeCast":
        return False
    names = getattr(node.typeName, "names", None) or []
    return bool(names) and str(names[-1].sval).lower() == "geography"


def _declared(db: Database, node: Any, tables: list[str]) -> tuple[int, str]:
    """The SRID and kind (geometry/geography) of ``node``: ST_Transform/ST_SetSRID to a number, or a declared column."""
    if type(node).__name__ == "FuncCall" and _name(node) in ("st_transform", "st_setsrid"):
        args = list(node.args or [])
        value = getattr(args[1], "val", None) if len(args) == 2 else None
        srid = getattr(value, "ival", None)
        return (int(srid), "geometry") if isinstance(srid, int) and srid > 0 else (0, "")
    fields = getattr(node, "fields", None) if type(node).__name__ == "ColumnRef" else None
    if not fields or not tables:
        return 0, ""
    column = str(fields[-1].sval)
    names = [table.split(".")[-1] for table in tables]
    try:
        found = db.rows(
            "SELECT DISTINCT srid, 'geometry' FROM geometry_columns WHERE f_geometry_column = %s "
            "AND f_table_name = ANY(%s) UNION SELECT DISTINCT srid, 'geography' FROM geography_columns "
            "WHERE f_geography_column = %s AND f_table_name = ANY(%s)",
            [column, names, column, names],
        )
    except ToolError:
        return 0, ""  # no PostGIS catalogue views: the unit stays unknown, and is said so
    return (int(found[0][0]), str(found[0][1])) if len(found) == 1 else (0, "")


def _srid_unit(srid: int) -> tuple[str, float, bool]:
    """The SRID's axis unit (``m``, ``ft``, ``ftUS``), metres per unit (0: unknown), whether geographic (pyproj)."""
    try:
        from pyproj import CRS

        crs = CRS.from_epsg(srid)
    except Exception:  # noqa: BLE001 - an SRID pyproj does not know: the unit is unknown, and said so
        return "units", 0.0, False
    axis = crs.axis_info[0] if crs.axis_info else None
    if axis is None:
        return "units", 0.0, crs.is_geographic
    lowered = axis.unit_name.lower()
    name = "ftUS" if "us survey" in lowered else "ft" if "foot" in lowered else axis.unit_name
    return name, float(axis.unit_conversion_factor), crs.is_geographic
