"""``load_data`` of an OGC API Features collection URL: the features are fetched on the worker and copied.

QGIS's OAPIF provider makes several blocking requests while it is created,
and it must be created on the main thread (made on a worker, QGIS 3.22
crashes: docs/DESIGN.md), so a slow server froze QGIS.  Instead the OGC tool
family's own steps run here: the server and its features are read on the
worker (``catalog.fetch_features``, at most ``LOAD_LIMIT`` features), parsed
there (``memory_rows``), and the main thread only makes the memory layer and
stages it; the result store then writes it to the project's results
GeoPackage on the worker (``finish_result``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import partial
from urllib.parse import urlsplit

from geogpt_qgis.core.artifacts import CollectionRef, ToolArtifact, ToolResult
from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.layer_refs import named_ref
from geogpt_qgis.tools.ogc import catalog
from geogpt_qgis.tools.ogc.catalog import Collection, Fetched, ServerInfo
from geogpt_qgis.tools.ogc.family import features_extent, summary_text
from geogpt_qgis.tools.ogc.http import OgcHttp
from geogpt_qgis.tools.ogc.layers import MemoryRows, layer_crs, memory_layer, memory_rows
from geogpt_qgis.tools.ogc.query import bounded_limit
from geogpt_qgis.tools.ogc.servers import OgcServer, landing_url
from geogpt_qgis.tools.processing.naming import slug
from geogpt_qgis.tools.result_store import ResultStore, StagedResult, finish_result, stage_result
from geogpt_qgis.tools.result_style import style_result

LOAD_LIMIT = 5000  # load_data has no limit argument (schema budget); query_ogc_collection takes one
MAX_LISTED = 25


@dataclass
class CollectionCopy:
    """A collection's features as fetched and parsed on the worker: what the main thread makes a layer of."""

    info: ServerInfo
    collection: Collection
    fetched: Fetched
    rows: MemoryRows


def fetch_collection(url: str, layer: str, timeout: float, cancel: CancelToken) -> CollectionCopy:
    """Read the server, choose the collection (``layer`` or the URL's) and fetch its features (worker)."""
    landing = landing_url(url)
    match = re.search(r"/collections/([^/?#]+)", urlsplit(url).path)
    with OgcHttp(timeout, cancel) as http:
        info = catalog.load_server(http, OgcServer(urlsplit(landing).netloc, landing))
        wanted = layer.strip() or (match.group(1) if match else "")
        if not wanted:
            ids = [c.id for c in info.collections]
            if len(ids) != 1:
                listed = ", ".join(ids[:MAX_LISTED]) + (", ..." if len(ids) > MAX_LISTED else "")
                raise ToolError(f"{landing} has {len(ids)} collections; pass layer, one of: {listed}")
            wanted = ids[0]
        found = info.collection(wanted)
        fetched = catalog.fetch_features(http, info, found, {}, bounded_limit(LOAD_LIMIT))
    if not fetched.features:
        raise ToolError(f"{found.id} on {landing} has no features; nothing was added")
    rows = memory_rows(fetched.features, fetched.crs, None, f"From {info.items_url(found)}")
    return CollectionCopy(info, found, fetched, rows)


def add_copy(ctx: ToolContext, copy: CollectionCopy, name: str) -> ToolResult:
    """Make the memory layer on the main thread, store it in a result GeoPackage here; the answer."""
    base = slug(name) or slug(copy.collection.id) or "features"
    collection = CollectionRef(urlsplit(copy.info.server.url).netloc, copy.collection.id, copy.info.server.url)
    read = ToolArtifact(collections=(collection,))
    staged, fields = ctx.on_main(_stage, ctx, partial(memory_layer, copy.rows, name or copy.collection.id), base, read)
    added = finish_result(ctx, *staged)
    fetched = copy.fetched
    source = f"{copy.collection.id} on {urlsplit(copy.info.server.url).netloc}"
    kind = "a copy of the server's features, kept in the project's results GeoPackage"
    text = summary_text(added, kind, source, fetched, layer_crs(fetched.crs), fields, features_extent(fetched.features))
    if not fetched.more:
        text += f"\nAll of the collection's features were fetched (load_data fetches at most {LOAD_LIMIT:,})."
    text += "\nquery_ogc_collection can fetch a filtered or bbox-limited selection instead."
    return ToolResult(text, replace(read, added=(named_ref(ctx, added),)))


def _stage(
    ctx: ToolContext, make: partial, base: str, read: ToolArtifact
) -> tuple[tuple[ResultStore, StagedResult], list[str]]:
    """Make the memory layer and stage it for the store (main thread: no request, only the rows are added)."""
    layer = make()
    style_result(layer)
    return stage_result(ctx.project, layer, base, read), layer.fields().names()
