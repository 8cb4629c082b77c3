"""Layers from OGC API Features results.

A whole collection becomes a layer of QGIS's own OGC API Features provider,
so it stays linked to the server.  A filtered, boxed, trimmed or limited
result becomes a memory layer holding exactly the features the query
returned, with the request noted in the layer's abstract.

Threads: the features are parsed into ``QgsFeature`` values on the worker
(``memory_rows``); the layers themselves are made on the main thread
(``memory_layer``, ``linked_layer``), where QGIS's providers and network
manager live.  An OAPIF provider made on a worker can kill QGIS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from qgis.core import QgsFeature, QgsGeometry, QgsVectorLayer, QgsWkbTypes

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layer_errors import why_not_opened
from geogpt_qgis.tools.ogc.catalog import CRS84, ID_NAMES, Queryable, crs_label, value_type
from geogpt_qgis.tools.thread_guard import vector_layer

_MEMORY_TYPES = {"integer": "long", "number": "double", "boolean": "boolean"}


def layer_crs(crs_uri: str) -> str:
    """The QGIS CRS id for features served in ``crs_uri`` (CRS84 is EPSG:4326 in x=lon order)."""
    return "EPSG:4326" if crs_uri == CRS84 else crs_label(crs_uri)


def field_plan(features: list[dict[str, Any]], props: list[Queryable] | None) -> list[tuple[str, str]]:
    """(name, type) of every property the features carry, in the queryables' order when known."""
    seen: dict[str, None] = {}
    for feature in features:
        for key in feature.get("properties") or {}:
            seen.setdefault(str(key))
    declared = {q.name: q.type for q in props or [] if q.type != "geometry"}
    names = [n for n in declared if n in seen] + [n for n in seen if n not in declared]
    plan = []
    for name in names:
        values = [(f.get("properties") or {}).get(name) for f in features]
        observed = value_type(values)
        kind = declared.get(name) or observed or "text"
        if observed == "text" or (kind == "boolean" and observed not in ("", "boolean")):
            kind = "text"  # what the data holds wins over what the schema promised
        elif kind == "integer" and observed == "number":
            kind = "number"
        plan.append((name, kind))
    return plan


def _geometry_type(geometries: list[QgsGeometry]) -> str:
    """One memory-layer geometry type for all features: multi when any is multi; "None" without geometry."""
    kinds = {QgsWkbTypes.geometryType(g.wkbType()) for g in geometries if not g.isNull()}
    if not kinds:
        return "None"
    if len(kinds) > 1:
        raise ToolError("the result mixes points, lines and polygons; filter it to one geometry type")
    base = {
        QgsWkbTypes.GeometryType.PointGeometry: "Point",
        QgsWkbTypes.GeometryType.LineGeometry: "LineString",
        QgsWkbTypes.GeometryType.PolygonGeometry: "Polygon",
    }[kinds.pop()]
    multi = any(QgsWkbTypes.isMultiType(g.wkbType()) for g in geometries if not g.isNull())
    return f"Multi{base}" if multi else base


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if kind == "text":
        return str(value)
    return value


@dataclass
class MemoryRows:
    """What a memory layer will hold: its URI (geometry type, CRS, fields) and its features, ready to add."""

    uri: str
    rows: list[QgsFeature]
    note: str


def with_feature_id(feature: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The feature's properties, with its GeoJSON ``id`` in a field the server lists as ``id``/``fid``.

    Servers list the feature id among the queryables while GeoJSON keeps it beside
    the properties; read naively, that field would be empty in every feature.
    """
    values = dict(feature.get("properties") or {})
    if feature.get("id") is not None:
        for name in names:
            if name.lower() in ID_NAMES and values.get(name) is None:
                values[name] = feature["id"]
    return values


def memory_rows(
    features: list[dict[str, Any]], crs_uri: str, props: list[Queryable] | None, source_note: str
) -> MemoryRows:
    """Parse GeoJSON ``features`` into feature values for a memory layer (any thread: no layer is made)."""
    from shapely.geometry import shape

    geometries = []
    for feature in features:
        geometry = QgsGeometry()
        if feature.get("geometry"):
            geometry.fromWkb(shape(feature["geometry"]).wkb)
        geometries.append(geometry)
    plan = field_plan(features, props)
    spec = "&".join(f"field={quote(n, safe='')}:{_MEMORY_TYPES.get(k, 'string')}" for n, k in plan)
    kind = _geometry_type(geometries)
    uri = f"{kind}?crs={layer_crs(crs_uri)}" + (f"&{spec}" if spec else "")
    rows = []
    for feature, geometry in zip(features, geometries, strict=True):
        row = QgsFeature()
        values = with_feature_id(feature, [n for n, _ in plan])
        row.setAttributes([_cell(values.get(n), k) for n, k in plan])
        if not geometry.isNull():
            if kind.startswith("Multi") and not geometry.isMultipart():
                geometry.convertToMultiType()
            row.setGeometry(geometry)
        rows.append(row)
    return MemoryRows(uri, rows, source_note)


def memory_layer(prepared: MemoryRows, name: str) -> QgsVectorLayer:
    """A memory layer holding ``prepared``'s features, its source noted in the abstract (main thread)."""
    layer = vector_layer(prepared.uri, name, "memory")
    if not layer.isValid():
        raise ToolError("QGIS could not make a layer for the result")
    layer.dataProvider().addFeatures(prepared.rows)
    layer.updateExtents()
    metadata = layer.metadata()
    metadata.setAbstract(prepared.note)
    layer.setMetadata(metadata)
    return layer


class NotLinked(ToolError):
    """QGIS's OGC API Features provider could not open the collection; the message says why."""


def linked_layer(server_url: str, collection: str, name: str) -> QgsVectorLayer:
    """A layer of QGIS's OGC API Features provider: it reads the server whenever QGIS draws it (main thread).

    QGIS 3.22's provider fails on some servers the plugin's own client reads, and leaves its error
    empty; the reason is read through ``layer_errors`` (reading it directly killed QGIS, issue 37).
    """
    uri = f"url='{server_url}' typename='{collection}'"
    layer = vector_layer(uri, name, "OAPIF")
    if not layer.isValid():
        reason = why_not_opened(layer) or "it gave no reason"
        del layer  # freed here, on the main thread (a traceback would free it on whichever thread drops it)
        raise NotLinked(f"QGIS's OGC API Features provider could not open {collection} ({reason})")
    return layer
