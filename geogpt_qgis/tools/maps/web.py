"""URLs as layers: an OGC API Features collection, a WMS/WMTS layer, an XYZ tile template, a remote file (worker).

The URL is fetched once through the plugin's one HTTP configuration
(``toolbelt.network``: QGIS's proxy and certificate authorities), reading at
most ``PEEK_BYTES``, to tell what it is: JSON with links is an OGC API
Features server (its features are copied: ``ogc_copy``), a capabilities
document a WMS or WMTS server, anything else a file GDAL reads through
``/vsicurl/`` (with the proxy QGIS hands to GDAL).  Those layers stay linked
to the server; nothing is copied.  An XYZ template
(``{x}``, ``{y}``, ``{z}``) is checked by fetching its first tile; the others are fetched when QGIS draws.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

# The server's XML is parsed by defusedxml: no DTD entities (an "XML bomb" expands a few kilobytes into
# gigabytes), no external entities or DTDs fetched (they could read local files or reach other hosts).
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.text import single_line
from geogpt_qgis.toolbelt import network
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.load_plan import RASTER, LoadPlan

PEEK_BYTES = 16 * 1024 * 1024  # a capabilities document or a landing page; a file is only peeked at
FILE_PEEK_BYTES = 64 * 1024
_TILE_KEYS = re.compile(r"\{(x|y|-y|z|q)\}")
_OWS_KEYS = frozenset({"service", "request", "version"})
MAX_LISTED = 25
MAX_TEXT = 120
_POLL_SECONDS = 0.05
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="geogpt-load")


@dataclass(frozen=True)
class Peek:
    """The start of an answer: status, content type and up to ``PEEK_BYTES`` of the body."""

    url: str
    status: int
    content_type: str
    head: bytes


def is_url(source: str) -> bool:
    return urlsplit(source.strip()).scheme.lower() in ("http", "https")


def is_tile_template(url: str) -> bool:
    """``{x}``, ``{y}`` (or ``{-y}``) and ``{z}``, or a quadkey ``{q}``."""
    keys = set(_TILE_KEYS.findall(url))
    return ({"x", "z"} <= keys and bool(keys & {"y", "-y"})) or "q" in keys


def first_tile(template: str) -> str:
    """The template's first tile: z=0, x=0, y=0 (a quadkey's first tile is "0", at zoom 1)."""
    for key, value in (("{z}", "0"), ("{x}", "0"), ("{y}", "0"), ("{-y}", "0"), ("{q}", "0")):
        template = template.replace(key, value)
    return template


def check_tiles(template: str, timeout: float, cancel: CancelToken) -> None:
    """Fetch the first tile (worker): the server must answer with an image, else a ``ToolError`` says what it sent."""
    tile = first_tile(template)
    found = peek(tile, timeout, cancel)  # unreachable, or an HTTP error status: a ToolError naming it
    if not found.content_type.startswith("image/"):
        sent = found.content_type or "no content type"
        raise ToolError(
            f"the first tile {tile} answered HTTP {found.status} with {sent}, not an image: "
            "check the template ({z}, {x}, {y} in the server's order)"
        )


def xyz_plan(url: str, name: str) -> LoadPlan:
    """An XYZ tile layer (QGIS's wms provider, ``type=xyz``); ``check_tiles`` has fetched one tile."""
    uri = f"type=xyz&url={quote(url, safe='')}&zmin=0&zmax=19"
    host = urlsplit(url).netloc
    return LoadPlan(
        RASTER,
        "wms",
        uri,
        name or host or "tiles",
        url,
        notes=("XYZ tiles (the first tile answered with an image), fetched as the map is drawn.",),
    )


def peek(url: str, timeout: float, cancel: CancelToken) -> Peek:
    """GET ``url`` and keep the start of its body; an unreachable server or an error status is a ``ToolError``.

    The request runs on a helper thread while this one watches the run's
    cancel token: Stop returns at once, even before a slow server's first byte.
    The client is made here, on the tool's thread (it may read the proxy's login).
    """
    cancel.raise_if_cancelled()
    client = network.client(timeout, connect_timeout=10.0, follow_redirects=True)
    future = _POOL.submit(_read_start, client, url, timeout, cancel)
    while True:
        try:
            found = future.result(timeout=_POLL_SECONDS)
            break
        except concurrent.futures.TimeoutError:
            if cancel.cancelled:
                future.cancel()  # a request under way ends at its time-out, on its own thread
                raise RunCancelled("stopped by the user") from None
    if found.status >= 400:
        text = " ".join(found.head[:2000].decode("utf-8", errors="replace").split())[:200]
        raise ToolError(f"{url} answered HTTP {found.status}" + (f": {text}" if text else "") + "; check the URL")
    return found


def _read_start(client: Any, url: str, timeout: float, cancel: CancelToken) -> Peek:
    import httpx

    host = urlsplit(url).netloc
    try:
        with client, client.stream("GET", url) as reply:
            content_type = reply.headers.get("content-type", "").split(";")[0].strip().lower()
            limit = PEEK_BYTES if _is_document(content_type) else FILE_PEEK_BYTES
            chunks, size = [], 0
            for chunk in reply.iter_bytes():
                if cancel.cancelled:
                    raise RunCancelled("stopped by the user")
                chunks.append(chunk)
                size += len(chunk)
                if size >= limit:
                    break
            return Peek(str(reply.url), reply.status_code, content_type, b"".join(chunks))
    except httpx.TimeoutException:
        raise ToolError(f"{host} did not answer within {timeout:g} s; check the URL or try again later") from None
    except httpx.ConnectError as exc:
        refused = network.untrusted_certificate(exc)
        if refused is not None:
            raise ToolError(f"{host}'s certificate is not trusted ({refused}); {network.CERTIFICATE_HINT}") from None
        via = network.proxy_for(url)
        where = f" through the proxy {via} set in QGIS" if via else ""
        raise ToolError(
            f"cannot reach {host}{where}: {_reason(exc)}. Check the URL and that the server is up."
        ) from None
    except httpx.HTTPError as exc:
        raise ToolError(f"the request to {host} failed: {_reason(exc)}") from None


def _is_document(content_type: str) -> bool:
    return "json" in content_type or "xml" in content_type or content_type.startswith("text/")


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return "connection refused" if "refused" in text.lower() else text


def classify(found: Peek) -> str:
    """``ogc``, ``wms``, ``wmts`` or ``file``, from what the URL answered."""
    text = found.head.lstrip()
    if text[:1] in (b"{", b"["):
        try:
            body = json.loads(found.head)
        except ValueError:
            return "file"  # cut short: a big JSON file, read by GDAL
        if isinstance(body, dict) and "links" in body and body.get("type") not in ("FeatureCollection", "Feature"):
            return "ogc"
        return "file"
    if text[:1] == b"<":
        root = _xml_root(found.head)
        tag = _local(root.tag) if root is not None else ""
        if tag in ("WMS_Capabilities", "WMT_MS_Capabilities"):
            return "wms"
        if tag == "Capabilities" and "wmts" in (root.tag if root is not None else "").lower():
            return "wmts"
        if tag in ("ServiceExceptionReport", "ExceptionReport"):
            detail = " ".join("".join(root.itertext()).split())[:300] if root is not None else ""
            raise ToolError(f"the server answered with an error: {detail or tag}")
    return "file"


class XmlElement(Protocol):
    """What is read of a parsed element (an ``xml.etree`` element, as defusedxml returns it)."""

    tag: str
    text: str | None

    def __iter__(self) -> Iterator[XmlElement]: ...

    def iter(self) -> Iterator[XmlElement]: ...

    def itertext(self) -> Iterator[str]: ...

    def get(self, key: str) -> str | None: ...


def _xml_root(data: bytes) -> XmlElement | None:
    """The document's root element; ``None`` when it is not XML.  Entities and external references are refused."""
    try:
        return fromstring(data)
    except ParseError:
        return None
    except DefusedXmlException:
        raise ToolError(
            "the server's XML was not read: it declares entities or external references, which can expand a "
            "small document into gigabytes or read local files"
        ) from None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element: XmlElement, name: str) -> list[XmlElement]:
    return [child for child in element if _local(child.tag) == name]


def _text(element: XmlElement, name: str) -> str:
    """A child's text, on one line and at most ``MAX_TEXT`` characters: the server's words reach the model."""
    found = _children(element, name)
    return " ".join(single_line(found[0].text or "").split())[:MAX_TEXT] if found else ""


def _listed(names: list[str]) -> str:
    return ", ".join(names[:MAX_LISTED]) + (", ..." if len(names) > MAX_LISTED else "")


# -- WMS / WMTS ------------------------------------------------------------------------------------
def _base_url(url: str) -> str:
    """The URL without the OWS request keys (QGIS adds SERVICE/REQUEST itself)."""
    parts = urlsplit(url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in _OWS_KEYS]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), ""))


def _choose(wanted: str, named: dict[str, str], where: str) -> str:
    """The layer ``wanted`` names (its name, or its title), or an error listing the names and titles."""
    wanted = wanted.strip()
    if not wanted:
        if len(named) == 1:
            return next(iter(named))
        listed = _listed([f"{n} ({t})" if t and t != n else n for n, t in named.items()])
        raise ToolError(f"{where} has {len(named)} layers; pass layer, one of: {listed}")
    if wanted in named:
        return wanted
    by_title = [n for n, t in named.items() if t.casefold() == wanted.casefold() or n.casefold() == wanted.casefold()]
    if len(by_title) == 1:
        return by_title[0]
    raise ToolError(f"{where}: " + did_you_mean(wanted, [*named, *(t for t in named.values() if t)], "layer"))


def wms_plan(found: Peek, url: str, layer: str, name: str, project_crs: str) -> LoadPlan:
    """A WMS layer chosen by name or title; CRS: the project's if offered, else web mercator or lon/lat."""

    root = _xml_root(found.head)
    if root is None:
        raise ToolError(f"{url} sent a capabilities document that is not valid XML")
    layers: dict[str, tuple[str, list[str]]] = {}

    def walk(element: XmlElement, inherited: list[str]) -> None:
        crs = inherited + [(c.text or "").strip() for c in element if _local(c.tag) in ("CRS", "SRS")]
        layer_name = _text(element, "Name")
        if layer_name:
            layers[layer_name] = (_text(element, "Title"), crs)
        for child in _children(element, "Layer"):
            walk(child, crs)

    capability = _children(root, "Capability")
    for top in _children(capability[0], "Layer") if capability else []:
        walk(top, [])
    formats = [(f.text or "").strip() for f in root.iter() if _local(f.tag) == "Format"]
    host = urlsplit(url).netloc
    chosen = _choose(layer, {n: t for n, (t, _) in layers.items()}, f"the WMS at {host}")
    offered = {c.upper() for c in layers[chosen][1]}
    crs = next((c for c in (project_crs, "EPSG:3857", "EPSG:4326") if c and c.upper() in offered), "")
    crs = crs or ("EPSG:4326" if "CRS:84" in offered else next(iter(sorted(offered)), "EPSG:4326"))
    title = layers[chosen][0]
    return LoadPlan(
        RASTER,
        "wms",
        _wms_uri(_base_url(found.url), chosen, crs, formats, style=""),
        name or title or chosen,
        f"WMS layer {chosen!r} at {host}",
        notes=(f"WMS layer {chosen!r}" + (f" ({title})" if title else "") + f", requested in {crs}.",),
    )


def wmts_plan(found: Peek, url: str, layer: str, name: str) -> LoadPlan:
    """A WMTS layer chosen by identifier or title, in its first tile matrix set."""

    root = _xml_root(found.head)
    if root is None:
        raise ToolError(f"{url} sent a capabilities document that is not valid XML")
    contents = _children(root, "Contents")
    entries = {_text(e, "Identifier"): e for e in (_children(contents[0], "Layer") if contents else [])}
    host = urlsplit(url).netloc
    chosen = _choose(layer, {k: _text(e, "Title") for k, e in entries.items()}, f"the WMTS at {host}")
    entry = entries[chosen]
    links = [_text(link, "TileMatrixSet") for link in _children(entry, "TileMatrixSetLink")]
    if not links:
        raise ToolError(f"the WMTS layer {chosen!r} names no tile matrix set")
    matrix_sets = {_text(s, "Identifier"): _text(s, "SupportedCRS") for s in _children(contents[0], "TileMatrixSet")}
    crs = _epsg(matrix_sets.get(links[0], "")) or "EPSG:3857"
    styles = _children(entry, "Style")
    style = next((s for s in styles if s.get("isDefault") == "true"), styles[0] if styles else None)
    formats = [(f.text or "").strip() for f in _children(entry, "Format")]
    style_id = _text(style, "Identifier") if style is not None else "default"
    return LoadPlan(
        RASTER,
        "wms",
        _wms_uri(found.url, chosen, crs, formats, style=style_id, tile_matrix_set=links[0]),
        name or _text(entry, "Title") or chosen,
        f"WMTS layer {chosen!r} at {host}",
        notes=(f"WMTS layer {chosen!r}, tile matrix set {links[0]} ({crs}).",),
    )


def _wms_uri(url: str, layer: str, crs: str, formats: list[str], style: str, tile_matrix_set: str = "") -> str:
    """The wms provider's URI for one WMS layer, or a WMTS layer when a tile matrix set is named (PNG if offered)."""
    from qgis.core import QgsDataSourceUri

    uri = QgsDataSourceUri()
    params = [
        ("contextualWMSLegend", "0"),
        ("crs", crs),
        ("dpiMode", "7"),
        ("featureCount", "10"),
        ("format", "image/png" if "image/png" in formats or not formats else formats[0]),
        ("layers", layer),
        ("styles", style),
    ]
    if tile_matrix_set:
        params.append(("tileMatrixSet", tile_matrix_set))
    for key, value in [*params, ("url", url)]:
        uri.setParam(key, value)
    return bytes(uri.encodedUri()).decode("utf-8")


def _epsg(urn: str) -> str:
    """``urn:ogc:def:crs:EPSG::3857`` or ``EPSG:3857`` -> ``EPSG:3857``."""
    match = re.search(r"EPSG[:/](?:[\d.]*[:/])?:?(\d+)", urn, re.IGNORECASE)
    return f"EPSG:{match.group(1)}" if match else ""
