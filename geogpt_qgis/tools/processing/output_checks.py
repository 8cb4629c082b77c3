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
  QGIS's transform objects), puts the input's extent.

A failed check raises ``SuspectOutput`` (a ``ToolError``): the caller adds nothing and
the model is told the result was withheld and why.
"""

from __future__ import annotations

import math

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsCoordinateTransformContext,
    QgsCsException,
    QgsMapLayer,
    QgsRectangle,
)

from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.base import ToolError

GEOGRAPHIC_TOLERANCE = 1e-6  # degrees: rounding in a file's coordinates, not a wrong CRS
AREA_MARGIN_DEGREES = 10.0
REPROJECTION_TOLERANCE = 0.02  # of the expected extent's size, plus a small absolute slack below
REPROJECTION_SLACK_METRES = 1.0
REPROJECTION_SLACK_DEGREES = 1e-5
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
    source_crs: QgsCoordinateReferenceSystem, source_extent: QgsRectangle, output: QgsMapLayer, what: str = ""
) -> None:
    """Check that a reprojected layer lies where PROJ (through pyproj) puts the input's extent.

    Both extents are feature extents, and a reprojected feature stays inside the
    reprojected (densified) box of all features, so the output must fit in it.
    """
    what = what or f"the reprojected layer {output.name()!r}"
    check_layer(output, what)
    target = output.crs()
    if source_extent.isNull() or not source_crs.isValid() or not target.isValid() or source_crs == target:
        return
    expected = _pyproj_bounds(source_crs, target, source_extent)
    if expected is None:
        return
    got = output.extent()
    if got.isNull():
        return
    slack_abs = REPROJECTION_SLACK_DEGREES if target.isGeographic() else REPROJECTION_SLACK_METRES
    dx = (expected.width() * REPROJECTION_TOLERANCE) + slack_abs
    dy = (expected.height() * REPROJECTION_TOLERANCE) + slack_abs
    if not (
        expected.xMinimum() - dx <= got.xMinimum()
        and got.xMaximum() <= expected.xMaximum() + dx
        and expected.yMinimum() - dy <= got.yMinimum()
        and got.yMaximum() <= expected.yMaximum() + dy
    ):
        raise SuspectOutput(
            f"{what} ({_label(target)}) spans {_box(got)}, but PROJ puts the input ({_label(source_crs)}, "
            f"{_box(source_extent)}) at {_box(expected)}: the coordinates were not transformed correctly. "
            f"This is a fault in the processing, not in your request; {WITHHELD}."
        )


def _pyproj_crs(crs: QgsCoordinateReferenceSystem):
    from pyproj import CRS

    return CRS.from_user_input(crs.authid()) if crs.authid().upper().startswith("EPSG:") else CRS.from_wkt(crs.toWkt())


def _pyproj_bounds(
    source: QgsCoordinateReferenceSystem, target: QgsCoordinateReferenceSystem, extent: QgsRectangle
) -> QgsRectangle | None:
    """The extent transformed by pyproj (densified edges), or ``None`` when pyproj is absent or cannot."""
    try:
        from pyproj import Transformer
        from pyproj.exceptions import ProjError
    except ImportError:
        return None
    try:
        transformer = Transformer.from_crs(_pyproj_crs(source), _pyproj_crs(target), always_xy=True)
        box = transformer.transform_bounds(
            extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum(), densify_pts=41
        )
    except (ProjError, ValueError):
        return None
    if not all(math.isfinite(v) for v in box):
        return None
    return QgsRectangle(*box)
