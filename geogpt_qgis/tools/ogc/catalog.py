"""What a server offers: its conformance, its collections, and a description of each (Qt-free).

A description is what an analyst needs before querying: the properties
(queryables) with their types, the spatial extent, the CRSs the server can
answer in, the number of features when the server says, and for categorical
properties the most common values with their share, from a bounded sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from geogpt_qgis.core.field_stats import summarize_values
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.text import NAME_MAX_CHARS, quoted, short
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.ogc.http import OgcHttp
from geogpt_qgis.tools.ogc.servers import OgcServer

FEATURES_CORE = "ogcapi-features-1/1.0/conf/core"
CRS_PART2 = "ogcapi-features-2/1.0/conf/crs"
FILTER_CLASSES = ("ogcapi-features-3/1.0/conf/filter", "ogcapi-features-3/1.0/conf/features-filter")
CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
SAMPLE_FEATURES = 500
PAGE_SIZE = 1000
MAX_COLLECTIONS_LISTED = 60
_JSON_TYPES = {"string": "text", "integer": "integer", "number": "number", "boolean": "boolean"}


@dataclass
class Collection:
    """One collection as the server describes it."""

    id: str
    title: str
    description: str
    crs: list[str] = field(default_factory=list)
    storage_crs: str = ""
    bbox: list[float] | None = None
    bbox_crs: str = CRS84
    temporal: list[Any] | None = None
    item_type: str = "feature"

    def output_crs(self, crs_supported: bool) -> str:
        """The CRS to ask features in: the data's own (no reprojection by the server) when offered, else CRS84."""
        if crs_supported and self.storage_crs and self.storage_crs in self.crs:
            return self.storage_crs
        return CRS84


@dataclass
class ServerInfo:
    """A checked server: its conformance classes and its collections."""

    server: OgcServer
    conformance: list[str]
    collections: list[Collection]

    def conforms(self, *classes: str) -> bool:
        return any(c.endswith(k) or k in c for c in self.conformance for k in classes)

    def collection(self, name: str) -> Collection:
        for candidate in self.collections:
            if candidate.id == name:
                return candidate
        for candidate in self.collections:
            if name.strip().lower() in (candidate.id.lower(), candidate.title.lower()):
                return candidate
        names = [c.id for c in self.collections]
        raise ToolError(did_you_mean(name, names, f"collection on {self.server.name}"))

    def items_url(self, collection: Collection) -> str:
        return f"{self.server.url}/collections/{quote(collection.id, safe='')}/items"


def _collection(doc: dict[str, Any]) -> Collection:
    extent = doc.get("extent") or {}
    spatial = extent.get("spatial") or {}
    boxes = spatial.get("bbox") or []
    temporal = (extent.get("temporal") or {}).get("interval")
    return Collection(
        id=str(doc.get("id") or doc.get("name") or ""),
        title=str(doc.get("title") or ""),
        description=" ".join(str(doc.get("description") or "").split()),
        crs=[str(c) for c in doc.get("crs") or []],
        storage_crs=str(doc.get("storageCrs") or ""),
        bbox=list(boxes[0]) if boxes and isinstance(boxes[0], list) else None,
        bbox_crs=str(spatial.get("crs") or CRS84),
        temporal=temporal[0] if temporal and isinstance(temporal[0], list) else None,
        item_type=str(doc.get("itemType") or "feature"),
    )


def load_server(http: OgcHttp, server: OgcServer) -> ServerInfo:
    """Check that ``server`` is an OGC API Features server and read its collections."""
    conformance: list[str] = []
    reply = http.get(f"{server.url}/conformance", {})
    if reply.status < 400 and isinstance(reply.body, dict):
        conformance = [str(c) for c in reply.body.get("conformsTo") or []]
    listing = http.get(f"{server.url}/collections", {})
    if listing.status >= 400 or not isinstance(listing.body, dict) or "collections" not in listing.body:
        seen = f"HTTP {listing.status}, {listing.content_type or 'no content type'}"
        raise ToolError(
            f"{server.url} is not an OGC API Features server (its /collections answered {seen}). "
            "Ask the user for the server's landing page URL."
        )
    docs = [d for d in listing.body["collections"] if isinstance(d, dict)]
    collections = [_collection(d) for d in docs]
    features = [c for c in collections if c.item_type.lower() in ("feature", "")]
    return ServerInfo(server, conformance, features)


def format_collections(info: ServerInfo) -> str:
    """``id — title: description`` per collection, for the model."""
    if not info.collections:
        return f"{info.server.name} ({info.server.url}) has no feature collections."
    lines = [f"{info.server.name} ({info.server.url}): {len(info.collections)} feature collections"]
    for collection in info.collections[:MAX_COLLECTIONS_LISTED]:
        about = f": {short(collection.description, 140)}" if collection.description else ""
        title = f" — {quoted(collection.title)}" if collection.title and collection.title != collection.id else ""
        lines.append(f"- {short(collection.id, NAME_MAX_CHARS)}{title}{about}")
    if len(info.collections) > MAX_COLLECTIONS_LISTED:
        lines.append(f"… and {len(info.collections) - MAX_COLLECTIONS_LISTED} more")
    return "\n".join(lines)


@dataclass
class Queryable:
    name: str
    type: str  # text, integer, number, boolean, date, geometry...


def queryables(http: OgcHttp, info: ServerInfo, collection: Collection) -> list[Queryable] | None:
    """The filterable properties, or ``None`` when the server publishes none for this collection."""
    url = f"{info.server.url}/collections/{quote(collection.id, safe='')}/queryables"
    reply = http.get(url, {})
    if reply.status >= 400 or not isinstance(reply.body, dict):
        return None
    found = []
    for name, schema in (reply.body.get("properties") or {}).items():
        schema = schema if isinstance(schema, dict) else {}
        fmt = str(schema.get("format") or "")
        if fmt.startswith("geometry") or schema.get("x-ogc-role") == "primary-geometry" or "$ref" in schema:
            found.append(Queryable(str(name), "geometry"))
            continue
        kind = schema.get("type")
        kind = kind[0] if isinstance(kind, list) and kind else kind
        label = _JSON_TYPES.get(str(kind), str(kind or "value"))
        if fmt in ("date", "date-time"):
            label = fmt
        found.append(Queryable(str(name), label))
    return found


ID_NAMES = ("id", "fid")  # how servers name the feature id when they list it as a property


def sample_properties(
    http: OgcHttp, info: ServerInfo, collection: Collection
) -> tuple[list[dict], int | None, list[Any]]:
    """Up to ``SAMPLE_FEATURES`` features' properties (no geometry when the server can skip it), the count,
    and the features' ids (GeoJSON keeps the id beside the properties, not among them)."""
    what = f"reading a sample of {collection.id}"
    fetched = fetch_features(http, info, collection, {"skipGeometry": "true"}, SAMPLE_FEATURES, what)
    ids = [f.get("id") for f in fetched.features]
    return [dict(f.get("properties") or {}) for f in fetched.features], fetched.matched, ids


def id_property(names: list[str], rows: list[dict], ids: list[Any]) -> str | None:
    """The listed property that is really the feature id: named ``id``/``fid``, absent from every
    feature's properties, while the features carry ids.  Reported as the id, not as an all-null property."""
    if not rows or all(i is None for i in ids):
        return None
    for name in names:
        if name.lower() in ID_NAMES and all(row.get(name) is None for row in rows):
            return name
    return None


def next_link(body: dict[str, Any], base: str) -> str | None:
    """The ``rel=next`` link of a page, if it stays on the same server (never follow a link elsewhere)."""
    for link in body.get("links") or []:
        if isinstance(link, dict) and link.get("rel") == "next" and isinstance(link.get("href"), str):
            href: str = urljoin(base + "/", link["href"])
            if urlsplit(href).netloc == urlsplit(base).netloc:
                return href
    return None


@dataclass
class Fetched:
    """The features of a query and what the server said about the rest."""

    features: list[dict[str, Any]]
    crs: str
    matched: int | None
    pages: int
    more: bool  # the limit stopped the paging while the server had more
    notes: list[str] = field(default_factory=list)


def fetch_features(
    http: OgcHttp,
    info: ServerInfo,
    collection: Collection,
    params: dict[str, Any],
    limit: int,
    what: str = "the query",
) -> Fetched:
    """Follow the pages (``rel=next``) until ``limit`` features or the end; Stop is checked between pages."""
    crs = collection.output_crs(info.conforms(CRS_PART2))
    first = {**params, "limit": min(limit, PAGE_SIZE)}
    if crs != CRS84:
        first["crs"] = crs
    request: dict[str, Any] | None = first  # None after the first page: a next link carries its parameters
    url: str | None = info.items_url(collection)
    features: list[dict[str, Any]] = []
    matched, pages, more = None, 0, False
    while url:
        reply = http.get(url, request)
        if reply.status >= 400:
            raise ToolError(_query_error(reply.status, reply.server_message(), params, what))
        body = reply.body if isinstance(reply.body, dict) else None
        if body is None or not isinstance(body.get("features"), list):
            raise ToolError(f"{collection.id} did not answer with GeoJSON features (got {reply.content_type})")
        pages += 1
        if matched is None and isinstance(body.get("numberMatched"), int):
            matched = body["numberMatched"]
        page = [f for f in body["features"] if isinstance(f, dict)]
        features += page
        url, request = next_link(body, info.server.url), None
        if len(features) >= limit:
            more = url is not None or len(features) > limit or (matched is not None and matched > limit)
            break
        if not page:
            break
    return Fetched(features[:limit], crs, matched, pages, more)


def _query_error(status: int, message: str, params: dict[str, Any], what: str) -> str:
    if "filter" in params and status == 400 and ("cql" in message.lower() or "filter" in message.lower()):
        return (
            f"the server rejected the filter {params['filter']!r}: {message}. Write CQL2 text like "
            "name = 'Centre' AND beds > 100, with text in single quotes"
        )
    return f"{what} failed (HTTP {status}): {message}"


def describe_collection(http: OgcHttp, info: ServerInfo, collection: Collection) -> str:
    """Properties with types, extent, CRSs, count, and common values from a bounded sample."""
    props = queryables(http, info, collection)
    rows, matched, ids = sample_properties(http, info, collection)
    title = f" — {quoted(collection.title)}" if collection.title else ""
    lines = [f"## {short(collection.id, NAME_MAX_CHARS)}{title}"]
    if collection.description:
        lines.append(short(collection.description, 300))
    if matched is not None:
        lines.append(f"Features: {matched:,}")
    if collection.bbox:
        box = ", ".join(f"{v:.5g}" for v in collection.bbox)
        lines.append(f"Extent: [{box}] ({crs_label(collection.bbox_crs)})")
    if collection.temporal:
        lines.append(f"Time: {collection.temporal[0] or '..'} to {collection.temporal[1] or '..'}")
    crs = [crs_label(c) for c in collection.crs] or ["CRS84"]
    lines.append("CRSs: " + ", ".join(crs[:8]) + (" …" if len(crs) > 8 else ""))
    if collection.storage_crs:
        lines.append(f"Stored in: {crs_label(collection.storage_crs)}")
    props = [q for q in props if q.type != "geometry"] if props is not None else None
    names = [q.name for q in props] if props is not None else list(dict.fromkeys(k for r in rows for k in r))
    types = {q.name: q.type for q in props or []}
    lines.append("Properties" + (" (queryable)" if props is not None else " (from a sample; no queryables)") + ":")
    id_name = id_property(names, rows, ids)
    if id_name is None and rows and any(i is not None for i in ids):
        lines.append(f"- feature id — {summarize_values([str(i) for i in ids])} (each feature's own id)")
    for name in names:
        values = [str(i) for i in ids] if name == id_name else [row.get(name) for row in rows]
        stats = f" — {summarize_values(values)}" if rows else ""
        role = " — the feature id" if name == id_name else ""
        lines.append(f"- {name} ({types.get(name) or value_type(values) or 'text'}){role}{stats}")
    if rows:
        lines.append(f"(values from a sample of {len(rows):,} features)")
    return "\n".join(lines)


def value_type(values: list[Any]) -> str:
    """The JSON type the values share: boolean, integer, number or text ("" when all are null)."""
    present = [v for v in values if v is not None]
    if not present:
        return ""
    if all(isinstance(v, bool) for v in present):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "integer"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "number"
    return "text"


def crs_label(uri: str) -> str:
    """``http://www.opengis.net/def/crs/EPSG/0/25832`` -> ``EPSG:25832``; CRS84 stays ``CRS84``."""
    text = uri.strip().strip("[]")
    if text.upper().endswith("CRS84"):
        return "CRS84"
    parts = text.rstrip("/").split("/")
    if "/def/crs/" in text and len(parts) >= 3:
        return f"{parts[-3]}:{parts[-1]}"
    return text


def crs_uri(label: str) -> str:
    """``EPSG:25832`` -> ``http://www.opengis.net/def/crs/EPSG/0/25832``; ``CRS84``/``OGC:CRS84`` -> CRS84."""
    text = label.strip()
    if text.upper() in ("CRS84", "OGC:CRS84", "WGS84") or text.upper().endswith("/CRS84"):
        return CRS84
    if text.lower().startswith("http"):
        return text
    authority, _, code = text.partition(":")
    if not code:
        raise ToolError(f"unknown CRS {label!r}; name it like EPSG:25832")
    return f"http://www.opengis.net/def/crs/{authority.upper()}/0/{code}"
