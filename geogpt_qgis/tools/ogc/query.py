"""Query a collection: check the filter, convert the bounding box, follow the pages (Qt-free).

Servers differ in what they support, and some fail quietly: pygeoapi's file
providers ignore a filter and return everything; an unknown property in a
filter matches nothing without an error.  So the filter's property names are
checked against the queryables first, and a server that does not advertise
filtering is probed once with a filter that can match nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.core.fuzzy import closest_names
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.ogc.catalog import (
    CRS84,
    CRS_PART2,
    FILTER_CLASSES,
    Collection,
    Queryable,
    ServerInfo,
    crs_label,
    crs_uri,
)
from geogpt_qgis.tools.ogc.http import OgcHttp

MAX_LIMIT = 100_000
_STRING = re.compile(r"'(?:[^']|'')*'")
_WORD = re.compile(r'"([^"]+)"|\b([A-Za-z_][\w.:]*)\b(\s*\()?')
_KEYWORDS = {
    *"AND OR NOT LIKE ILIKE IN BETWEEN IS NULL TRUE FALSE DATE TIMESTAMP INTERVAL CASEI ACCENTI".split(),
    *"EMPTY ENVELOPE POINT LINESTRING POLYGON MULTIPOINT MULTILINESTRING MULTIPOLYGON GEOMETRYCOLLECTION".split(),
    *"BBOX CONTAINS WITHIN INTERSECTS DISJOINT TOUCHES CROSSES OVERLAPS EQUALS DURING BEFORE AFTER".split(),
}
_GEOMETRY_NAMES = {"geometry", "geom", "the_geom", "shape", "wkb_geometry"}


def property_names_in(cql: str) -> list[str]:
    """The property names a CQL2 text filter refers to (not literals, keywords or function names)."""
    names = []
    for quoted, bare, call in _WORD.findall(_STRING.sub("''", cql)):
        if quoted:
            names.append(quoted)
        elif bare and not call and bare.upper() not in _KEYWORDS and not bare[0].isdigit():
            names.append(bare)
    return list(dict.fromkeys(names))


def check_filter(cql: str, props: list[Queryable] | None, collection: str) -> None:
    """An unknown property name matches nothing on most servers, silently: name the right one instead."""
    if props is None:
        return
    known = {q.name for q in props} | _GEOMETRY_NAMES
    lowered = {name.lower(): name for name in known}
    for name in property_names_in(cql):
        if name in known:
            continue
        if name.lower() in lowered:
            raise ToolError(f"property names are case-sensitive: write {lowered[name.lower()]!r}, not {name!r}")
        choices = [q.name for q in props if q.type != "geometry"]
        close = closest_names(name, choices)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else f"properties: {', '.join(choices)}"
        raise ToolError(
            f"the filter names {name!r}, which {collection} does not have; {hint} "
            "(text values go in single quotes: name = 'Centre')"
        )


def supports_filter(http: OgcHttp, info: ServerInfo, collection: Collection, props: list[Queryable] | None) -> bool:
    """Whether the server applies a CQL2 filter on this collection (advertised, or shown by a probe)."""
    if info.conforms(*FILTER_CLASSES):
        return True
    candidates = [q.name for q in props or [] if q.type != "geometry" and re.fullmatch(r"[A-Za-z_]\w*", q.name)]
    if not candidates:
        return False
    name = candidates[0]
    probe = {"filter": f"{name} IS NULL AND {name} IS NOT NULL", "limit": 1, "skipGeometry": "true"}
    reply = http.get(info.items_url(collection), probe)
    if reply.status >= 400 or not isinstance(reply.body, dict):
        return False
    return not reply.body.get("features")  # features back: the filter was ignored


@dataclass
class BBoxPlan:
    """The request's bbox parameters, what the model is told about them, and an exact clip if needed."""

    params: dict[str, str]
    note: str = ""
    clip: tuple[str, list[tuple[float, float]]] | None = None  # (CRS URI, ring) features must intersect


def _ring(box: list[float], steps: int = 16) -> list[tuple[float, float]]:
    """The box's outline with points along each edge, so it bends correctly when reprojected."""
    x0, y0, x1, y1 = box
    ring = []
    for i in range(steps):
        ring.append((x0 + (x1 - x0) * i / steps, y0))
    for i in range(steps):
        ring.append((x1, y0 + (y1 - y0) * i / steps))
    for i in range(steps):
        ring.append((x1 - (x1 - x0) * i / steps, y1))
    for i in range(steps):
        ring.append((x0, y1 - (y1 - y0) * i / steps))
    return [*ring, ring[0]]


def _proj_name(uri: str) -> str:
    return "OGC:CRS84" if uri == CRS84 else crs_label(uri)


def transform_ring(ring: list[tuple[float, float]], source: str, target: str) -> list[tuple[float, float]]:
    """``ring`` from CRS URI ``source`` to ``target``, in x/y (east/north, lon/lat) order."""
    if source == target:
        return ring
    from pyproj import Transformer
    from pyproj.exceptions import CRSError

    try:
        transformer = Transformer.from_crs(_proj_name(source), _proj_name(target), always_xy=True)
    except CRSError as exc:
        raise ToolError(f"unknown CRS {crs_label(source)!r} ({exc}); name it like EPSG:25832") from None
    xs, ys = transformer.transform([p[0] for p in ring], [p[1] for p in ring])
    return list(zip(xs, ys, strict=True))


def plan_bbox(bbox: list[float], bbox_crs: str, collection: Collection, info: ServerInfo) -> BBoxPlan:
    """Send the box as given when the server understands its CRS; else convert it to CRS84 and clip exactly."""
    if len(bbox) != 4:
        raise ToolError("bbox takes four numbers: [min_x, min_y, max_x, max_y]")
    box = [float(v) for v in bbox]
    if box[0] >= box[2] or box[1] >= box[3]:
        raise ToolError(f"bbox {box} is empty: give [min_x, min_y, max_x, max_y] with min below max")
    source = crs_uri(bbox_crs or "CRS84")
    if source.endswith("/EPSG/0/4326"):
        source = CRS84  # we document x/y (lon/lat) order; CRS84 is exactly that
    text = ",".join(f"{v:.10g}" for v in box)
    if source == CRS84:
        if not (-180 <= box[0] <= 180 and -90 <= box[1] <= 90 and -180 <= box[2] <= 180 and -90 <= box[3] <= 90):
            raise ToolError(
                f"bbox {box} is not in degrees; name its CRS with bbox_crs (e.g. the project's, EPSG:25832)"
            )
        return BBoxPlan({"bbox": text})
    if info.conforms(CRS_PART2) and source in collection.crs:
        return BBoxPlan({"bbox": text, "bbox-crs": source})
    ring = _ring(box)
    lonlat = transform_ring(ring, source, CRS84)
    xs, ys = [p[0] for p in lonlat], [p[1] for p in lonlat]
    converted = [min(xs), min(ys), max(xs), max(ys)]
    shown = ", ".join(f"{v:.6f}" for v in converted)
    note = f"bbox converted from {crs_label(source)} to CRS84 [{shown}] (the server does not take {crs_label(source)})"
    return BBoxPlan({"bbox": ",".join(f"{v:.10g}" for v in converted)}, note, (source, ring))


def clip_features(features: list[dict[str, Any]], clip: tuple[str, list[tuple[float, float]]], crs: str) -> list[dict]:
    """Keep the features that meet the exact (reprojected) box; the converted box was a little larger."""
    from shapely.geometry import Polygon, shape
    from shapely.prepared import prep

    source, ring = clip
    area = prep(Polygon(transform_ring(ring, source, crs)))
    kept = []
    for feature in features:
        geometry = feature.get("geometry")
        if geometry and area.intersects(shape(geometry)):
            kept.append(feature)
    return kept


def bounded_limit(limit: int) -> int:
    if int(limit) < 1:
        raise ToolError("limit must be at least 1")
    return min(int(limit), MAX_LIMIT)
