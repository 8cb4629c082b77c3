"""Check a vector layer's geometries where they enter (load, describe) and before a tool measures them.

The main thread snapshots the layer (``plan_geometry_check``); a worker reads at most ``MAX_CHECKED``
geometries through the snapshot's feature source and ``core.geometry_findings`` says what in them
changes figures (invalid geometry, holes stored as shells, overlaps, Z, mixed types). Bounded: the
first ``MAX_CHECKED`` features, and the notes say so when the layer has more.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgis.core import (
    QgsFeatureRequest,
    QgsGeometry,
    QgsMapLayer,
    QgsUnitTypes,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
    QgsWkbTypes,
)

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.core.geometry_findings import inspect, notes

MAX_CHECKED = 2_000
CANCEL_CHECK_EVERY = 200
REMOTE_PROVIDERS = frozenset({"OAPIF", "WFS", "arcgisfeatureserver"})


@dataclass
class GeometryCheckPlan:
    """What the worker needs to check a layer's geometries without touching the layer."""

    name: str
    source: QgsVectorLayerFeatureSource
    total: int
    declared: str
    units: str


def plan_geometry_check(layer: QgsMapLayer | None) -> GeometryCheckPlan | None:
    """A snapshot of a spatial vector layer (main thread); ``None`` for anything else."""
    if not isinstance(layer, QgsVectorLayer) or not layer.isValid() or not layer.isSpatial():
        return None
    if layer.providerType() in REMOTE_PROVIDERS:  # each read would be a download: checked where they are copied
        return None
    crs = layer.crs()
    units = QgsUnitTypes.toAbbreviatedString(crs.mapUnits()) if crs.isValid() else ""
    return GeometryCheckPlan(
        layer.name(),
        QgsVectorLayerFeatureSource(layer),
        layer.featureCount(),
        QgsWkbTypes.displayString(layer.wkbType()),
        units,
    )


def geometry_notes(plan: GeometryCheckPlan | None, cancel: CancelToken) -> list[str]:
    """What in the first ``MAX_CHECKED`` geometries changes figures, a line each (worker thread)."""
    if plan is None:
        return []
    request = QgsFeatureRequest()
    request.setNoAttributes()
    request.setLimit(MAX_CHECKED)

    def wkbs():
        for index, feature in enumerate(plan.source.getFeatures(request)):
            if index % CANCEL_CHECK_EVERY == 0:
                cancel.raise_if_cancelled()
            geometry = feature.geometry()
            if geometry.isNull():
                continue
            if QgsWkbTypes.isCurvedType(geometry.wkbType()):
                geometry = QgsGeometry(geometry.constGet().segmentize())
            yield bytes(geometry.asWkb())

    found = inspect(wkbs(), plan.total)
    return notes(found, plan.declared, plan.units)
