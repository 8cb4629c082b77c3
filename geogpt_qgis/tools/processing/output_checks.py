"""Check a result layer's coordinates against what its CRS promises, before it reaches the project.

A transform that silently did nothing leaves UTM metres in a layer labelled
EPSG:4326; a user would publish that map without noticing.  So every result
layer a tool adds is checked first (main thread, from its extent only, so the
check costs no feature scan):

- in a geographic CRS, coordinates lie within ±180° / ±90°;
- the extent lies within the CRS's area of use (``QgsCoordinateReferenceSystem.bounds()``),
  widened by ``AREA_MARGIN_DEGREES`` because data is often used a little beyond it
  (a UTM zone for a whole country);
- a reprojection's output lies where PROJ, called through pyproj (independently of
  QGIS's transform objects), puts the input's extent *with the operation QGIS used*
  (the project's transform context picks it: a datum shift, a grid...).  Checked
  against pyproj's own default instead, a correct Monte Mario result was 74 m off a
  ballpark transform and withheld.

A failed check raises ``SuspectOutput`` (a ``ToolError``): the caller adds nothing and
the model is told the result was withheld and why.  A difference the check cannot
attribute (no operation known, only pyproj's default to compare with, and a gap no
larger than a datum shift) keeps the result and says so.
"""

from __future__ import annotations

import contextlib
import math

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsCoordinateTransformContext,
    QgsCsException,
    QgsMapLayer,
    QgsPointXY,
    QgsRectangle,
    QgsUnitTypes,
)

from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.compat import DISTANCE_METERS

GEOGRAPHIC_TOLERANCE = 1e-6  # degrees: rounding in a file's coordinates, not a wrong CRS
AREA_MARGIN_DEGREES = 10.0
REPROJECTION_TOLERANCE = 0.02  # of the expected extent's size, plus a small absolute slack below
REPROJECTION_SLACK_METRES = 1.0
REPROJECTION_SLACK_DEGREES = 1e-5
# Datum shifts between a ballpark and a proper operation stay below this (Tokyo: ~700 m; NAD27: ~200 m).
DATUM_SHIFT_METRES = 2000.0
METRES_PER_DEGREE = 111_320.0
EDGE_POINTS = 41
# Providers whose extent is known without asking a server to scan the data.
CHEAP_EXTENT_PROVIDERS = frozenset({"memory", "ogr", "gdal", "spatialite", "delimitedtext", "virtual"})
WITHHELD = "the result was withheld (no layer was added)"
# Why a result leaves its CRS: a distance or size given in metres but applied in degrees (an input in
# degrees the tools could not reproject), or coordinates that were not transformed.
NOT_DEGREES = (
    "A distance or size in metres applied to an input in degrees does this (reproject the input to a "
    "projected CRS with native:reprojectlayer and retry); else the coordinates were not transformed"
)


class SuspectOutput(ToolError):
    """A result whose coordinates do not fit its CRS: a fault to report, not data to use."""


def _box(extent: QgsRectangle) -> str:
    corners = (extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum())
    a, b, c, d = (plain_number(v, significant=9, grouping=False) for v in corners)
    return f"{a}, {b} : {c}, {d}"


def _label(crs: QgsCoordinateReferenceSystem) -> str:
    return crs.authid() or crs.description() or "a custom CRS"


def check_extent(crs: QgsCoordinateReferenceSystem, extent: QgsRectangle, what: str) -> None:
    """Raise ``SuspectOutput`` unless ``extent`` (in ``crs``) fits that CRS (main thread)."""
    if not crs.isValid() or extent.isNull():
        return  # no CRS to hold it to, or no features
    values = (extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum())
    if not all(math.isfinite(v) for v in values):
        raise SuspectOutput(f"{what} has coordinates that are not numbers (NaN or infinite); {WITHHELD}.")
    if crs.isGeographic():
        inside = (
            extent.xMinimum() >= -180 - GEOGRAPHIC_TOLERANCE
            and extent.xMaximum() <= 180 + GEOGRAPHIC_TOLERANCE
            and extent.yMinimum() >= -90 - GEOGRAPHIC_TOLERANCE
            and extent.yMaximum() <= 90 + GEOGRAPHIC_TOLERANCE
        )
        if not inside:
            raise SuspectOutput(
                f"{what} is labelled {_label(crs)} (longitude/latitude in degrees) but its coordinates span "
                f"{_box(extent)}, outside ±180° / ±90°. {NOT_DEGREES}; {WITHHELD}."
            )
    _check_area_of_use(crs, extent, what)


def _check_area_of_use(crs: QgsCoordinateReferenceSystem, extent: QgsRectangle, what: str) -> None:
    bounds = crs.bounds()
    if bounds.isNull() or bounds.isEmpty():
        return  # a custom CRS without an area of use
    wgs84 = QgsCoordinateReferenceSystem("EPSG:4326")
    try:
        where = (
            extent
            if crs.isGeographic()
            else QgsCoordinateTransform(crs, wgs84, QgsCoordinateTransformContext()).transformBoundingBox(extent)
        )
    except QgsCsException:
        raise SuspectOutput(
            f"{what} is labelled {_label(crs)} but its coordinates ({_box(extent)}) cannot be placed on the Earth "
            f"in that CRS; {WITHHELD}."
        ) from None
    allowed = QgsRectangle(
        max(bounds.xMinimum() - AREA_MARGIN_DEGREES, -180.0),
        max(bounds.yMinimum() - AREA_MARGIN_DEGREES, -90.0),
        min(bounds.xMaximum() + AREA_MARGIN_DEGREES, 180.0),
        min(bounds.yMaximum() + AREA_MARGIN_DEGREES, 90.0),
    )
    slack = GEOGRAPHIC_TOLERANCE
    if not (
        allowed.xMinimum() - slack <= where.xMinimum()
        and where.xMaximum() <= allowed.xMaximum() + slack
        and allowed.yMinimum() - slack <= where.yMinimum()
        and where.yMaximum() <= allowed.yMaximum() + slack
    ):
        raise SuspectOutput(
            f"{what} is labelled {_label(crs)}, whose area of use is {_box(bounds)} (lon/lat), but it lies at "
            f"{_box(where)} (lon/lat): its coordinates do not belong to that CRS. {NOT_DEGREES}; {WITHHELD}."
        )


def check_layer(layer: QgsMapLayer, what: str = "") -> None:
    """Check a result layer's extent against its CRS (main thread); server-backed layers are not scanned."""
    if not layer.isSpatial() or layer.providerType() not in CHEAP_EXTENT_PROVIDERS:
        return
    check_extent(layer.crs(), layer.extent(), what or f"the result layer {layer.name()!r}")


def check_reprojection(
    source_crs: QgsCoordinateReferenceSystem,
    source_extent: QgsRectangle,
    output: QgsMapLayer,
    what: str = "",
    transform_context: QgsCoordinateTransformContext | None = None,
    operation: str = "",
) -> list[str]:
    """Check that a reprojected layer lies where PROJ (through pyproj) puts the input's extent.

    The expectation uses the operation QGIS used: ``operation`` (a PROJ string the
    caller chose), else the one ``transform_context`` (the project's) instantiates.
    Both extents are feature extents, and a reprojected feature stays inside the
    reprojected (densified) box of all features, so the output must fit in it.
    Returns notes for the result (a difference the check cannot attribute).
    """
    what = what or f"the reprojected layer {output.name()!r}"
    check_layer(output, what)
    target = output.crs()
    if source_extent.isNull() or not source_crs.isValid() or not target.isValid() or source_crs == target:
        return []
    got = output.extent()
    if got.isNull():
        return []
    context = transform_context or QgsCoordinateTransformContext()
    used = operation.strip() or qgis_operation(source_crs, target, context, source_extent.center())
    expected = _pipeline_bounds(used, source_extent) if used else None
    if expected is not None:
        if _fits(got, expected, target):
            return []
        raise SuspectOutput(
            f"{what} ({_label(target)}) spans {_box(got)}, but PROJ puts the input ({_label(source_crs)}, "
            f"{_box(source_extent)}) at {_box(expected)} with the operation QGIS used ({short_operation(used)}): "
            "the coordinates "
            f"were not transformed correctly. This is a fault in the processing, not in your request; {WITHHELD}."
        )
    expected = _pyproj_bounds(source_crs, target, source_extent)
    if expected is None or _fits(got, expected, target):
        return []
    gap = _gap_metres(got, expected, target)
    if gap <= DATUM_SHIFT_METRES:
        return [
            f"{what} differs by up to {plain_number(gap, 3)} m from PROJ's default transformation "
            f"{_label(source_crs)} → {_label(target)}; the operation QGIS used is not known here, so the check "
            "cannot say which is right (a datum shift differs by this much). The result was kept."
        ]
    raise SuspectOutput(
        f"{what} ({_label(target)}) spans {_box(got)}, but PROJ puts the input ({_label(source_crs)}, "
        f"{_box(source_extent)}) at {_box(expected)}, {plain_number(gap, 3)} m away, more than any datum shift: "
        f"the coordinates were not transformed correctly. This is a fault in the processing, not in your "
        f"request; {WITHHELD}."
    )


def qgis_operation(
    source: QgsCoordinateReferenceSystem,
    target: QgsCoordinateReferenceSystem,
    context: QgsCoordinateTransformContext,
    near: QgsPointXY,
) -> str:
    """The PROJ pipeline QGIS instantiates from ``source`` to ``target`` in ``context`` near a point ("" if none).

    Main thread.  Where several operations apply (grids), PROJ picks per point: ``near`` is the data's.
    """
    transform = QgsCoordinateTransform(source, target, context)
    if not transform.isValid():
        return ""
    with contextlib.suppress(QgsCsException):  # only to make QGIS instantiate the operation
        transform.transform(near)
    details = transform.instantiatedCoordinateOperationDetails()
    return details.proj if details.isAvailable else ""


def short_operation(proj: str) -> str:
    """A PROJ pipeline cut to what tells it apart (``helmert +x=-225 +y=-65 +z=9``), for messages."""
    steps = [step.strip() for step in proj.split("+step") if "helmert" in step or "hgridshift" in step]
    text = "; ".join(steps) or proj
    return text if len(text) <= 120 else text[:119] + "…"


def _fits(got: QgsRectangle, expected: QgsRectangle, target: QgsCoordinateReferenceSystem) -> bool:
    slack_abs = REPROJECTION_SLACK_DEGREES if target.isGeographic() else REPROJECTION_SLACK_METRES
    dx = (expected.width() * REPROJECTION_TOLERANCE) + slack_abs
    dy = (expected.height() * REPROJECTION_TOLERANCE) + slack_abs
    fits: bool = (
        expected.xMinimum() - dx <= got.xMinimum()
        and got.xMaximum() <= expected.xMaximum() + dx
        and expected.yMinimum() - dy <= got.yMinimum()
        and got.yMaximum() <= expected.yMaximum() + dy
    )
    return fits


def _gap_metres(got: QgsRectangle, expected: QgsRectangle, target: QgsCoordinateReferenceSystem) -> float:
    """How far ``got``'s edges lie outside ``expected``'s, roughly in metres."""
    gaps = (
        max(expected.xMinimum() - got.xMinimum(), 0.0),
        max(got.xMaximum() - expected.xMaximum(), 0.0),
        max(expected.yMinimum() - got.yMinimum(), 0.0),
        max(got.yMaximum() - expected.yMaximum(), 0.0),
    )
    scale = METRES_PER_DEGREE if target.isGeographic() else target_metres_per_unit(target)
    gap: float = max(gaps) * scale
    return gap


def target_metres_per_unit(crs: QgsCoordinateReferenceSystem) -> float:
    return QgsUnitTypes.fromUnitToUnitFactor(crs.mapUnits(), DISTANCE_METERS) or 1.0


def _pyproj_crs(crs: QgsCoordinateReferenceSystem):
    from pyproj import CRS

    return CRS.from_user_input(crs.authid()) if crs.authid().upper().startswith("EPSG:") else CRS.from_wkt(crs.toWkt())


def _edge_points(extent: QgsRectangle) -> tuple[list[float], list[float]]:
    """``EDGE_POINTS`` points along each edge of ``extent`` (a densified outline)."""
    xs: list[float] = []
    ys: list[float] = []
    x0, y0, x1, y1 = extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum()
    for i in range(EDGE_POINTS):
        t = i / (EDGE_POINTS - 1)
        x, y = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
        xs += [x, x, x0, x1]
        ys += [y0, y1, y, y]
    return xs, ys


def _pipeline_bounds(pipeline: str, extent: QgsRectangle) -> QgsRectangle | None:
    """The extent's densified outline through a PROJ pipeline in pyproj, or ``None`` when pyproj cannot run it.

    QGIS's pipelines are normalised for visualisation (x = east/longitude), like ``always_xy``.
    """
    try:
        from pyproj import Transformer
        from pyproj.exceptions import ProjError
    except ImportError:
        return None
    xs, ys = _edge_points(extent)
    try:
        tx, ty = Transformer.from_pipeline(pipeline).transform(xs, ys, errcheck=True)
    except (ProjError, ValueError):
        return None  # a grid pyproj's own PROJ data lacks, say: fall back to its default
    if not all(math.isfinite(v) for v in (*tx, *ty)):
        return None
    return QgsRectangle(min(tx), min(ty), max(tx), max(ty))


def _pyproj_bounds(
    source: QgsCoordinateReferenceSystem, target: QgsCoordinateReferenceSystem, extent: QgsRectangle
) -> QgsRectangle | None:
    """The extent transformed by pyproj's default (densified edges), or ``None`` when pyproj is absent or cannot."""
    try:
        from pyproj import Transformer
        from pyproj.exceptions import ProjError
    except ImportError:
        return None
    try:
        transformer = Transformer.from_crs(_pyproj_crs(source), _pyproj_crs(target), always_xy=True)
        box = transformer.transform_bounds(
            extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum(), densify_pts=EDGE_POINTS
        )
    except (ProjError, ValueError):
        return None
    if not all(math.isfinite(v) for v in box):
        return None
    return QgsRectangle(*box)
