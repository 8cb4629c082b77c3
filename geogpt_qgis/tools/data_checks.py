"""Checks of what changes figures, where data enters (load_data, describe_layer) and before an algorithm reads it.

``plan_checks`` snapshots a layer on the main thread; ``check_notes`` runs the bounded checks on the
worker: a vector layer's geometries (``geometry_checks``), a GDAL raster's georeferencing sources
(``raster_findings``); and, on the main thread, a layer with no CRS (any layer: its coordinates cannot be
placed on the earth). Each note is one line, and none when nothing changes figures (a clean layer gets no
words, so a note always means something).
"""

from __future__ import annotations

from dataclasses import dataclass

from qgis.core import QgsMapLayer, QgsRasterLayer, QgsVectorLayer

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.geometry_checks import GeometryCheckPlan, geometry_notes, plan_geometry_check
from geogpt_qgis.tools.raster_findings import raster_notes


@dataclass
class CheckPlan:
    name: str
    vector: GeometryCheckPlan | None = None
    raster_source: str = ""
    crs_note: str = ""  # found on the main thread: the layer has no CRS


def crs_note(layer: QgsMapLayer) -> str:
    """A note when ``layer`` has no CRS (main thread): with layers in a CRS its numbers are read as theirs.

    QGIS 3.40+ leaves such a layer's CRS invalid; 3.22 gives a GeoPackage's undefined SRS (id 0 or -1) a
    valid-looking CRS named "Undefined geographic/Cartesian SRS" with no authority id: both are caught.
    """
    if isinstance(layer, QgsVectorLayer) and not layer.isSpatial():
        return ""
    crs = layer.crs()
    if crs.isValid() and (crs.authid() or "undefined" not in crs.description().lower()):
        return ""
    return (
        f"{layer.name()!r} has no CRS: QGIS cannot place its coordinates on the earth, so beside layers in a CRS "
        "they are read as if in that CRS (a count, join, clip or distance with them can come out empty or wrong). "
        "Assign the CRS its coordinates are in first (run_algorithm native:assignprojection)."
    )


def plan_checks(layer: QgsMapLayer | None) -> CheckPlan | None:
    """What to check of ``layer`` (main thread); ``None`` when there is nothing this module checks."""
    if layer is None:
        return None
    missing_crs = crs_note(layer)
    if isinstance(layer, QgsRasterLayer):
        if layer.providerType() != "gdal":
            return CheckPlan(layer.name(), crs_note=missing_crs) if missing_crs else None
        return CheckPlan(layer.name(), raster_source=layer.source(), crs_note=missing_crs)
    vector = plan_geometry_check(layer)
    if vector is None and not missing_crs:
        return None
    return CheckPlan(layer.name(), vector=vector, crs_note=missing_crs)


def check_notes(plan: CheckPlan | None, cancel: CancelToken) -> list[str]:
    """The notes for one planned layer (worker thread)."""
    if plan is None:
        return []
    first = [plan.crs_note] if plan.crs_note else []
    if plan.vector is not None:
        return first + geometry_notes(plan.vector, cancel)
    if plan.raster_source:
        return first + raster_notes(plan.raster_source, cancel)
    return first
