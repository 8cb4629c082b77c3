"""Places in the project's vector layers: which layers have names, the names they hold, where those features are.

``snapshot`` runs on the main thread and keeps only what the worker needs
(a feature source, the name and type fields, a transform to the project CRS);
everything else reads those snapshots on the worker, cancellable.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsCoordinateTransformContext,
    QgsFeatureRequest,
    QgsField,
    QgsGeometry,
    QgsProject,
    QgsRectangle,
    QgsUnitTypes,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
    QgsWkbTypes,
)
from qgis.PyQt.QtCore import QMetaType

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.insights.places.matching import NAME_FIELD_PATTERN, TYPE_FIELD_PATTERN
from geogpt_qgis.tools.layers import ordered_layers, python_value
from geogpt_qgis.tools.processing.compat import DISTANCE_METERS, enum_value

PLACE_PROPERTY = "geogpt/place"  # set on the layers find_places makes: they are results, never searched
SCAN_CAP = 200_000  # features read per layer for names
COUNT_CAP = 200_000  # layers bigger than this are not counted inside a place
DENSIFY_METRES = 100.0  # a place's edges are split this finely before reprojection, to follow its bend
EDGE_METRES = 0.5  # in a layer of another CRS, a line or polygon reaching no further in is on the edge
FEATURES_PER_PLACE = 1000
CANCEL_EVERY = 500

_NAME = re.compile(NAME_FIELD_PATTERN, re.IGNORECASE)
_TYPE = re.compile(TYPE_FIELD_PATTERN, re.IGNORECASE)


@dataclass
class LayerSnapshot:
    """One vector layer, readable off the main thread."""

    layer_id: str
    name: str
    source: QgsVectorLayerFeatureSource
    name_field: str
    type_field: str
    feature_count: int
    geometry_type: QgsWkbTypes.GeometryType
    wkb_type: QgsWkbTypes.Type
    crs: QgsCoordinateReferenceSystem
    to_project: QgsCoordinateTransform
    from_project: QgsCoordinateTransform
    provider: str
    uri: str


@dataclass
class ProjectSnapshot:
    """The searchable layers, every other spatial layer (for counts), and the project CRS.

    ``ellipsoid`` (the project's, else the CRS's; empty for none) measures places in true metres
    whatever the CRS: planar Web Mercator areas are several times too big away from the equator.
    """

    crs: QgsCoordinateReferenceSystem
    context: QgsCoordinateTransformContext = field(default_factory=QgsCoordinateTransformContext)
    ellipsoid: str = ""
    named: list[LayerSnapshot] = field(default_factory=list)
    spatial: list[LayerSnapshot] = field(default_factory=list)
    place_layers: dict[str, str] = field(default_factory=dict)  # name -> id of earlier place layers

    @property
    def tolerance(self) -> float:
        """Two features this close (project units) are at the same spot."""
        return 1e-5 if self.crs.isGeographic() else 1.0


def is_text(qgs_field: QgsField) -> bool:
    """A text field.

    ``QgsField.type()`` is a ``QVariant.Type`` on QGIS 3.22 and a ``QMetaType.Type`` from 3.38 (and on
    Qt 6, where ``int()`` of an enum member fails); their ids are equal, so they meet through ``enum_value``.
    """
    return enum_value(qgs_field.type()) == enum_value(QMetaType.Type.QString)


def _string_field(layer: QgsVectorLayer, pattern: re.Pattern[str]) -> str:
    names: list[str] = [f.name() for f in layer.fields() if is_text(f)]
    exact = [n for n in names if pattern.match(n) and n.lower() in ("name", "navn", "type", "class", "kind")]
    matching = [n for n in names if pattern.search(n)]
    return (exact or matching or [""])[0]


def snapshot(project: QgsProject) -> ProjectSnapshot:
    """What the worker needs to search the project's layers (main thread)."""
    crs = project.crs()
    context = project.transformContext()
    ellipsoid = project.ellipsoid()
    snap = ProjectSnapshot(crs, context, ellipsoid if ellipsoid and ellipsoid != "NONE" else crs.ellipsoidAcronym())
    for layer in ordered_layers(project):
        if not isinstance(layer, QgsVectorLayer) or not layer.isValid() or not layer.isSpatial():
            continue
        if layer.customProperty(PLACE_PROPERTY):
            snap.place_layers[layer.name()] = layer.id()
            continue
        name_field = _string_field(layer, _NAME)
        target = crs if crs.isValid() else layer.crs()
        item = LayerSnapshot(
            layer_id=layer.id(),
            name=layer.name(),
            source=QgsVectorLayerFeatureSource(layer),
            name_field=name_field,
            type_field=_string_field(layer, _TYPE),
            feature_count=layer.featureCount(),
            geometry_type=layer.geometryType(),
            wkb_type=layer.wkbType(),
            crs=layer.crs(),
            to_project=QgsCoordinateTransform(layer.crs(), target, context),
            from_project=QgsCoordinateTransform(target, layer.crs(), context),
            provider=layer.providerType(),
            uri=layer.source(),
        )
        snap.spatial.append(item)
        if name_field:
            snap.named.append(item)
    if not crs.isValid() and snap.spatial:
        snap.crs = snap.spatial[0].to_project.destinationCrs()
        snap.ellipsoid = snap.ellipsoid or snap.crs.ellipsoidAcronym()
    return snap


@dataclass
class NameGroup:
    """The features of one layer sharing a name."""

    fids: list[int] = field(default_factory=list)
    types: Counter = field(default_factory=Counter)

    @property
    def type_value(self) -> str:
        return self.types.most_common(1)[0][0] if self.types else ""


def scan_names(layer: LayerSnapshot, cancel: CancelToken) -> tuple[dict[str, NameGroup], bool]:
    """The layer's names with the ids (and types) of their features; and whether the scan stopped at the cap."""
    request = QgsFeatureRequest()
    request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
    columns = [c for c in (layer.name_field, layer.type_field) if c]
    request.setSubsetOfAttributes(columns, layer.source.fields())
    request.setLimit(SCAN_CAP + 1)
    groups: dict[str, NameGroup] = {}
    capped = False
    for index, feature in enumerate(layer.source.getFeatures(request)):
        if index % CANCEL_EVERY == 0:
            cancel.raise_if_cancelled()
        if index >= SCAN_CAP:
            capped = True
            break
        value = python_value(feature[layer.name_field])
        if value is None or not str(value).strip():
            continue
        group = groups.setdefault(str(value), NameGroup())
        group.fids.append(feature.id())
        if layer.type_field:
            kind = python_value(feature[layer.type_field])
            if kind is not None and str(kind).strip():
                group.types[str(kind)] += 1
    return groups, capped


def fetch_geometries(layer: LayerSnapshot, fids: list[int], cancel: CancelToken) -> list[QgsGeometry]:
    """The geometries of ``fids`` in the layer's own CRS (at most ``FEATURES_PER_PLACE``)."""
    request = QgsFeatureRequest()
    request.setFilterFids(fids[:FEATURES_PER_PLACE])
    request.setNoAttributes()
    found: list[QgsGeometry] = []
    for index, feature in enumerate(layer.source.getFeatures(request)):
        if index % CANCEL_EVERY == 0:
            cancel.raise_if_cancelled()
        geometry = QgsGeometry(feature.geometry())
        if not geometry.isNull():
            found.append(geometry)
    return found


def in_project_crs(layer: LayerSnapshot, geometries: list[QgsGeometry]) -> list[QgsGeometry]:
    """Copies of ``geometries`` (in the layer's CRS) in the project CRS."""
    copies = [QgsGeometry(g) for g in geometries]
    if layer.to_project.isValid() and not layer.to_project.isShortCircuited():
        for geometry in copies:
            geometry.transform(layer.to_project)
    return copies


def containing_names(snap: ProjectSnapshot, point: QgsGeometry, skip: str, cancel: CancelToken) -> list[str]:
    """``districts 'Nordby'``: the named polygons (of other layers) the point lies in, for locating a place."""
    found: list[str] = []
    for layer in snap.named:
        if layer.geometry_type != QgsWkbTypes.GeometryType.PolygonGeometry or layer.name == skip:
            continue
        cancel.raise_if_cancelled()
        local = QgsGeometry(point)
        if not layer.from_project.isShortCircuited():
            local.transform(layer.from_project)
        request = QgsFeatureRequest()
        request.setFilterRect(local.boundingBox().buffered(1e-9))
        request.setSubsetOfAttributes([layer.name_field], layer.source.fields())
        for feature in layer.source.getFeatures(request):
            if feature.geometry().contains(local):
                found.append(f"{layer.name} {python_value(feature[layer.name_field])!r}")
                break
        if len(found) == 2:
            break
    return found


def transforms_from(snap: ProjectSnapshot, crs: QgsCoordinateReferenceSystem) -> dict[str, QgsCoordinateTransform]:
    """From ``crs`` into each spatial layer's CRS, by layer id (main thread).

    Made on the main thread: on QGIS 3.22 a transform made on a worker after another worker thread has
    ended can silently leave coordinates unchanged (its PROJ context is stale).
    """
    return {layer.layer_id: QgsCoordinateTransform(crs, layer.crs, snap.context) for layer in snap.spatial}


def counts_inside(
    snap: ProjectSnapshot,
    area: QgsGeometry,
    transforms: dict[str, QgsCoordinateTransform],
    skip: str,
    cancel: CancelToken,
) -> list[str]:
    """``schools 6``: features of the other layers inside a polygon place (points within, others overlapping).

    ``area`` is in its source's own CRS and goes straight into each layer's CRS (``transforms_from``): a
    round trip through the project CRS moves a shared boundary, and roads along it would count as inside.
    """
    counts: list[str] = []
    for layer in snap.spatial:
        transform = transforms.get(layer.layer_id)
        if layer.name == skip or not 0 <= layer.feature_count <= COUNT_CAP or transform is None:
            continue
        local, shrunk = _in_layer_crs(area, transform)
        engine = QgsGeometry.createGeometryEngine(local.constGet())
        engine.prepareGeometry()
        core = None if shrunk is None else QgsGeometry.createGeometryEngine(shrunk.constGet())
        if core is not None:
            core.prepareGeometry()
        request = QgsFeatureRequest()
        request.setFilterRect(local.boundingBox())
        request.setNoAttributes()
        total = 0
        for index, feature in enumerate(layer.source.getFeatures(request)):
            if index % CANCEL_EVERY == 0:
                cancel.raise_if_cancelled()
            geometry = feature.geometry()
            if geometry.isNull():
                continue
            inside = (
                engine.contains(geometry.constGet())
                if layer.geometry_type == QgsWkbTypes.GeometryType.PointGeometry
                else engine.intersects(geometry.constGet()) and not engine.touches(geometry.constGet())
                if core is None
                else core.intersects(geometry.constGet())
            )
            total += bool(inside)
        if total:
            counts.append(f"{layer.name} {total:,}")
    return counts


def _in_layer_crs(area: QgsGeometry, transform: QgsCoordinateTransform) -> tuple[QgsGeometry, QgsGeometry | None]:
    """The area in the layer's CRS and, when it had to be reprojected, that area shrunk by ``EDGE_METRES``.

    Reprojection bends straight edges, so a road that ends on the edge in one CRS crosses or misses it by
    centimetres to metres in another.  Densified first (its edges follow the bend), the area then counts a
    line or polygon as inside only when it reaches more than ``EDGE_METRES`` in: along the edge is on it.
    """
    if not transform.isValid() or transform.isShortCircuited():
        return QgsGeometry(area), None
    local = area.densifyByDistance(_in_units(DENSIFY_METRES, transform.sourceCrs()))
    local.transform(transform)
    return local, local.buffer(-_in_units(EDGE_METRES, transform.destinationCrs()), 2)


def _in_units(metres: float, crs: QgsCoordinateReferenceSystem) -> float:
    """``metres`` in the units of ``crs`` (degrees as on a meridian, for a geographic CRS)."""
    if crs.isGeographic():
        return metres / 111_320
    factor = QgsUnitTypes.fromUnitToUnitFactor(crs.mapUnits(), DISTANCE_METERS)
    return metres / factor if factor > 0 else metres


def bounding_box(geometries: list[QgsGeometry]) -> QgsRectangle:
    box = QgsRectangle()
    box.setMinimal()
    for geometry in geometries:
        box.combineExtentWith(geometry.boundingBox())
    return box
