"""Checks of what changes figures, where data enters (load_data, describe_layer) and before an algorithm reads it.

``plan_checks`` snapshots a layer on the main thread; ``check_notes`` runs the bounded checks on the
worker: a vector layer's geometries (``geometry_checks``), a GDAL raster's georeferencing sources
(``raster_findings``). Each note is one line, and none when nothing changes figures (a clean layer
gets no words, so a note always means something).
"""

from __future__ import annotations

from dataclasses import dataclass

from qgis.core import QgsMapLayer, QgsRasterLayer

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.geometry_checks import GeometryCheckPlan, geometry_notes, plan_geometry_check
from geogpt_qgis.tools.raster_findings import raster_notes


@dataclass
class CheckPlan:
    name: str
    vector: GeometryCheckPlan | None = None
    raster_source: str = ""


def plan_checks(layer: QgsMapLayer | None) -> CheckPlan | None:
    """What to check of ``layer`` (main thread); ``None`` when there is nothing this module checks."""
    if layer is None:
        return None
    if isinstance(layer, QgsRasterLayer):
        if layer.providerType() != "gdal":
            return None
        return CheckPlan(layer.name(), raster_source=layer.source())
    vector = plan_geometry_check(layer)
    return CheckPlan(layer.name(), vector=vector) if vector is not None else None


def check_notes(plan: CheckPlan | None, cancel: CancelToken) -> list[str]:
    """The notes for one planned layer (worker thread)."""
    if plan is None:
        return []
    if plan.vector is not None:
        return geometry_notes(plan.vector, cancel)
    return raster_notes(plan.raster_source, cancel)
