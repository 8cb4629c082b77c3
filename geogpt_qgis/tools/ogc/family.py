"""The OGC API Features tool family: list a server's collections, describe them, query them into layers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from geogpt_qgis.core.artifacts import CollectionRef, ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Expression
from geogpt_qgis.core.cancel import current_conversation
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.text import counted
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolContext, ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.layer_refs import named_ref
from geogpt_qgis.tools.layers import add_result_layer
from geogpt_qgis.tools.ogc import catalog
from geogpt_qgis.tools.ogc.catalog import Collection, Fetched, Queryable, ServerInfo, crs_label, fetch_features
from geogpt_qgis.tools.ogc.http import OgcHttp
from geogpt_qgis.tools.ogc.layers import NotLinked, layer_crs, linked_layer, memory_layer, memory_rows
from geogpt_qgis.tools.ogc.query import bounded_limit, check_filter, clip_features, plan_bbox, supports_filter
from geogpt_qgis.tools.ogc.servers import OgcServer, ServerDirectory, parse_servers, urls_in
from geogpt_qgis.tools.processing.naming import slug
from geogpt_qgis.tools.result_store import ResultStore, StagedResult, finish_result, stage_result
from geogpt_qgis.tools.result_style import style_result

if TYPE_CHECKING:
    from qgis.core import QgsVectorLayer

MAX_DESCRIBED = 4
CACHE_SECONDS = 600.0

T = TypeVar("T")


class OgcTools(ToolFamily):
    """Collections of OGC API Features servers: the configured ones and URLs the user gave in the chat."""

    name = "ogc"
    title = "OGC API Features"
    summary = "list, describe and query collections of OGC API Features servers; results become layers"
    # No prompt hint: "describe ... before using its fields" (the system prompt) covers collections too.

    def __init__(self, ctx: ToolContext) -> None:
        super().__init__(ctx)
        self._mentioned: dict[str, list[str]] = {}  # conversation id -> server URLs the user typed
        self._cache: dict[tuple[str, ...], tuple[float, Any]] = {}

    # -- which servers ---------------------------------------------------------------------------
    def notice_user_text(self, text: str) -> None:
        """Remember server URLs the user typed in this conversation: the model may use those."""
        found = urls_in(text)
        if found:
            known = self._mentioned.setdefault(current_conversation.get(), [])
            known += [url for url in found if url not in known]

    def _directory(self) -> ServerDirectory:
        configured = parse_servers(PlgOptionsManager.get_plg_settings().ogc_servers)
        return ServerDirectory(configured, self._mentioned.get(current_conversation.get(), []))

    def unavailable_reason(self) -> str | None:
        if not self._directory().all():
            return "no OGC API Features server is configured or given in the chat"
        return None

    def tools(self) -> list[ToolFunction]:
        return [self.describe_ogc_collections, self.query_ogc_collection]

    # -- shared steps ----------------------------------------------------------------------------
    def _http(self) -> OgcHttp:
        return OgcHttp(PlgOptionsManager.get_plg_settings().ogc_timeout, self.ctx.cancel)

    def _cached(self, key: tuple[str, ...], make: Callable[[], T]) -> T:
        hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < CACHE_SECONDS:
            cached: T = hit[1]  # stored by make() under this key
            return cached
        value = make()
        self._cache[key] = (time.monotonic(), value)
        return value

    def _server(self, http: OgcHttp, server: str) -> ServerInfo:
        resolved: OgcServer = self._directory().resolve(server)
        return self._cached(("server", resolved.url), lambda: catalog.load_server(http, resolved))

    def _queryables(self, http: OgcHttp, info: ServerInfo, collection: Collection) -> list[Queryable] | None:
        return self._cached(
            ("queryables", info.server.url, collection.id), lambda: catalog.queryables(http, info, collection)
        )

    # -- tools -----------------------------------------------------------------------------------
    def describe_ogc_collections(self, collections: list[str] | None = None, server: str = "") -> ToolResult:
        """List a feature server's collections, or describe some: properties, values, extent, CRSs.

        Args:
            server: Name or URL; default: the only one.
        """
        if not collections:
            return ToolResult(self._list_collections(server))
        if len(collections) > MAX_DESCRIBED:
            raise ToolError(f"describe at most {MAX_DESCRIBED} collections per call")
        with self._http() as http:
            info = self._server(http, server)
            found = [info.collection(name) for name in collections]
            text = "\n\n".join(catalog.describe_collection(http, info, c) for c in found)
        return ToolResult(text, ToolArtifact(collections=tuple(_on_server(info, c) for c in found)))

    def _list_collections(self, server: str) -> str:
        with self._http() as http:
            info = self._server(http, server)
        text = catalog.format_collections(info)
        others = [s.name for s in self._directory().all() if s.url != info.server.url]
        return text + (f"\nOther servers: {', '.join(others)}" if others else "")

    def query_ogc_collection(
        self,
        collection: str,
        server: str = "",
        filter: Expression = "",  # noqa: A002 - the OGC API parameter's own name
        bbox: list[float] | None = None,
        bbox_crs: str = "",
        properties: list[str] | None = None,
        limit: int = 1000,
        output_name: str = "",
    ) -> ToolResult:
        """Fetch features into a new layer.

        Args:
            filter: CQL2 text, e.g. beds > 100.
            bbox: [xmin,ymin,xmax,ymax]
            bbox_crs: Default CRS84.
        """
        cap = bounded_limit(limit)
        with self._http() as http:
            info = self._server(http, server)
            found = info.collection(collection)
            props = self._queryables(http, info, found)
            params: dict[str, Any] = {}
            cql = (filter or "").strip()
            if cql:
                check_filter(cql, props, found.id)
                key = ("filter", info.server.url, found.id)
                if not self._cached(key, lambda: supports_filter(http, info, found, props)):
                    raise ToolError(
                        f"{info.server.name} does not apply filters on {found.id}; query without filter (with a "
                        "bbox if useful), then use processing (e.g. native:extractbyexpression) on the new layer"
                    )
                params["filter"] = cql
                params["filter-lang"] = "cql2-text" if info.conforms(*catalog.FILTER_CLASSES) else None
            wanted = self._properties(properties, props, found.id)
            if wanted:
                params["properties"] = ",".join(wanted)
            plan = plan_bbox(list(bbox), bbox_crs, found, info) if bbox else None
            if plan:
                params.update(plan.params)
            fetched = fetch_features(http, info, found, params, cap)
        if plan and plan.clip:
            fetched.features = clip_features(fetched.features, plan.clip, fetched.crs)
        if plan and plan.note:
            fetched.notes.append(plan.note)
        if wanted:
            for feature in fetched.features:  # some servers ignore "properties"; the layer holds only those asked
                values = feature.get("properties") or {}
                feature["properties"] = {k: values.get(k) for k in wanted}
        return self._add(info, found, props, fetched, cql, bool(plan or wanted), output_name)

    def _properties(self, asked: list[str] | None, props: list[Queryable] | None, collection: str) -> list[str]:
        wanted = [p.strip() for p in asked or [] if p.strip()]
        if props is not None:
            known = [q.name for q in props if q.type != "geometry"]
            for name in wanted:
                if name not in known:
                    raise ToolError(did_you_mean(name, known, f"property of {collection}"))
        return wanted

    def _add(
        self,
        info: ServerInfo,
        collection: Collection,
        props: list[Queryable] | None,
        fetched: Fetched,
        cql: str,
        narrowed: bool,
        output_name: str,
    ) -> ToolResult:
        source = f"{collection.id} on {info.server.name}"
        read = ToolArtifact(collections=(_on_server(info, collection),))
        if not fetched.features:
            why = f" matching {cql!r}" if cql else ""
            text = f"No features{why} in {source}; nothing was added. Check values with describe_ogc_collections."
            return ToolResult(text, read)
        base = slug(output_name) or slug(collection.id) or "features"
        whole = not (cql or narrowed or fetched.more)
        request = info.items_url(collection) + (f" filter: {cql}" if cql else "")
        if whole:
            # QGIS's OAPIF provider and its network manager live on the main thread: made there, never here.
            make = partial(linked_layer, info.server.url, collection.id, base)
            kind = "linked to the server (QGIS's OGC API Features provider)"
            extent = features_extent(fetched.features)  # the provider would fetch them all again to know
        else:
            # Parsing happens here (the slow part); the main thread only makes the layer and adds the rows.
            make = partial(memory_layer, memory_rows(fetched.features, fetched.crs, props, f"From {request}"), base)
            kind = "fetched features, in the project's GeoPackage"
            extent = None
        try:
            added, fields, box = self.ctx.on_main(self._add_layer, make, base, read)
        except NotLinked as failed:  # the features are here already: the user gets them, unlinked
            fetched.notes.append(f"{failed}, so the fetched features were copied instead of linked.")
            make = partial(memory_layer, memory_rows(fetched.features, fetched.crs, props, f"From {request}"), base)
            kind, extent = "fetched features, in the project's GeoPackage", None
            added, fields, box = self.ctx.on_main(self._add_layer, make, base, read)
        # Fetched features are copied into the project's GeoPackage (here, off the main thread): they survive saving.
        name = added if isinstance(added, str) else finish_result(self.ctx, *added)
        text = summary_text(name, kind, source, fetched, layer_crs(fetched.crs), fields, extent or box)
        return ToolResult(text, replace(read, added=(named_ref(self.ctx, name),)))

    def _add_layer(
        self, make: Callable[[], QgsVectorLayer], base: str, read: ToolArtifact
    ) -> tuple[str | tuple[ResultStore, StagedResult], list[str], tuple[float, float, float, float] | None]:
        """Make the layer, add it (linked) or stage it for the store (fetched) (main thread); its fields and extent.

        ``read``: the collection it comes from, for the provenance stored with a fetched copy.
        """
        layer = make()
        style_result(layer)  # see-through: the project's own layers stay readable under the fetched ones
        fields = layer.fields().names()
        extent = None
        if layer.providerType() == "memory" and not layer.extent().isNull():  # a linked layer would fetch it all
            box = layer.extent()
            extent = (box.xMinimum(), box.yMinimum(), box.xMaximum(), box.yMaximum())
        if layer.providerType() == "memory":
            return stage_result(self.ctx.project, layer, base, read), fields, extent
        return add_result_layer(self.ctx.project, layer, base), fields, extent


def _on_server(info: ServerInfo, collection: Collection) -> CollectionRef:
    """The collection on the server as the user named it (``hospitals (Town server)`` in Sources)."""
    return CollectionRef(info.server.name, collection.id, info.server.url)


def features_extent(features: list[dict[str, Any]]) -> tuple[float, float, float, float] | None:
    """The bounding box of GeoJSON features, or ``None`` when none has a geometry."""
    from shapely.geometry import shape

    bounds = [shape(f["geometry"]).bounds for f in features if f.get("geometry")]
    if not bounds:
        return None
    return (
        min(b[0] for b in bounds),
        min(b[1] for b in bounds),
        max(b[2] for b in bounds),
        max(b[3] for b in bounds),
    )


def summary_text(
    name: str,
    kind: str,
    source: str,
    fetched: Fetched,
    crs: str,
    fields: list[str],
    extent: tuple[float, float, float, float] | None,
) -> str:
    """Count, extent, fields, paging and limits: what the model needs, never the features."""
    lines = [f"Added layer {name!r} ({kind}): {counted(len(fetched.features), 'feature')} from {source}."]
    if extent:
        digits = 6 if crs == "EPSG:4326" else 1
        lines.append(f"Extent ({crs}): " + ", ".join(f"{v:.{digits}f}" for v in extent))
    lines.append("Fields: " + (", ".join(fields) or "none"))
    if fetched.more:
        total = f"{fetched.matched:,}" if fetched.matched is not None else "more"
        lines.append(
            f"Limit reached: {total} features match, only the first {len(fetched.features):,} were fetched; "
            "raise limit or narrow the filter or bbox."
        )
    elif fetched.pages > 1:
        lines.append(f"Read in {fetched.pages} pages.")
    lines += [f"Note: {note}" for note in fetched.notes]
    if fetched.crs != catalog.CRS84:
        lines.append(f"Served in {crs_label(fetched.crs)} (the data's own CRS).")
    return "\n".join(lines)
