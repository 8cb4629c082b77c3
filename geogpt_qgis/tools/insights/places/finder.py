"""find_places end to end: search, rank, disambiguate, and turn each place into a layer other tools can use.

A place the model names becomes a small memory layer ``place_<name>`` holding
its features in the project CRS.  That one layer serves every "area of
interest" use without further tools: ``run_algorithm`` takes it as
INPUT/INTERSECT/OVERLAY (buffered for "within 2 km of"), ``select_features``
takes ``overlay_intersects('place_x')`` or a distance to it, the map zooms to
it, and ``run_sql`` gets the geometry as WKT (or, for a place found in
PostGIS, a subquery on its own table).

Project layers are searched first; the allowed PostGIS databases only for
names the project does not hold exactly, so a project built from the same
tables does not answer every question twice.  A name found in two places at
the same spot (a database twin, a processing copy) counts once.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsDataSourceUri,
    QgsDistanceArea,
    QgsFeature,
    QgsFillSymbol,
    QgsGeometry,
    QgsLineSymbol,
    QgsMarkerSymbol,
    QgsProject,
    QgsSingleSymbolRenderer,
    QgsWkbTypes,
)

from geogpt_qgis.core.artifacts import TableRef, ToolArtifact, ToolResult, merged
from geogpt_qgis.core.figures import Figure
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.insights.places import postgis_tables
from geogpt_qgis.tools.insights.places.matching import (
    EXACT,
    MATCH_CHARS,
    MIN_SCORE,
    Candidate,
    PlaceOutcome,
    PlaceQuery,
    decide,
    merge_duplicates,
    normalize,
    parse_query,
    query_score,
    shortlist,
    source_key,
    trigram_similarity,
)
from geogpt_qgis.tools.insights.places.project_layers import (
    PLACE_PROPERTY,
    LayerSnapshot,
    NameGroup,
    ProjectSnapshot,
    containing_names,
    counts_inside,
    fetch_geometries,
    in_project_crs,
    scan_names,
    snapshot,
    transforms_from,
)
from geogpt_qgis.tools.layer_refs import named_ref
from geogpt_qgis.tools.measures import crs_name, ellipsoidal_method
from geogpt_qgis.tools.postgis.connections import resolve_connection
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.processing.compat import DISTANCE_METERS
from geogpt_qgis.tools.processing.naming import slug
from geogpt_qgis.tools.result_store import ResultStore, StagedResult, finish_result, stage_result
from geogpt_qgis.tools.thread_guard import vector_layer

MAX_NAMES = 10
CLOSEST_SCAN = 20_000  # names per layer compared when nothing matched, for the closest ones
LOCATED = 6  # candidates per name whose location is looked up
WKT_CHARS = 400  # longer geometries are given to SQL as a bounding box
CACHE_SECONDS = 600.0
PLACE_COLOR = "#e31a1c"


@dataclass
class Located:
    """A candidate with its features' geometries (project CRS) and where it is.

    ``native`` are the same geometries in their source's own CRS (``native_crs``), for relations with other
    layers that a round trip through the project CRS would blur.
    """

    candidate: Candidate
    geometries: list[QgsGeometry]
    sql: str = ""  # how run_sql can use it
    native: list[QgsGeometry] = field(default_factory=list)
    native_crs: QgsCoordinateReferenceSystem | None = None


@dataclass
class TableSource:
    """An open database and its name tables, for one find_places call."""

    connection: str
    db: Database
    tables: list[postgis_tables.NameTable]
    extensions: set[str]
    notes: list[str] = field(default_factory=list)


class PlaceFinder:
    """Finds places for the tools of one ``ToolContext``."""

    def __init__(self, ctx: ToolContext, allowed: Callable[[], list[str]], sql_timeout: Callable[[], float]) -> None:
        self.ctx = ctx
        self._allowed = allowed
        self._sql_timeout = sql_timeout
        self._table_cache: dict[str, tuple[float, list[postgis_tables.NameTable], set[str]]] = {}

    # -- the call (worker thread) ------------------------------------------------------------
    def find(self, names: list[str]) -> ToolResult:
        names = [str(n).strip() for n in names or [] if str(n).strip()]
        if not names:
            raise ToolError('name at least one place, e.g. names=["Nordby school"]')
        if len(names) > MAX_NAMES:
            raise ToolError(f"find at most {MAX_NAMES} places per call")
        longest = max(names, key=len)
        if len(longest) > MATCH_CHARS:
            raise ToolError(f"a place name is {len(longest):,} characters; at most {MATCH_CHARS}: name places briefly")
        cancel = self.ctx.cancel
        snap: ProjectSnapshot = self.ctx.on_main(snapshot, self.ctx.project)
        scanned: list[tuple[LayerSnapshot, dict[str, NameGroup]]] = []
        notes: list[str] = []
        for layer in snap.named:
            groups, capped = scan_names(layer, cancel)
            scanned.append((layer, groups))
            if capped:
                notes.append(f"only the first {len(groups):,}+ names of layer {layer.name!r} were searched")
        layer_sources = [layer.name for layer in snap.named]
        queries = [parse_query(name, layer_sources) for name in names]
        found = [self._layer_candidates(query, scanned) for query in queries]
        found = [
            cands
            if any(c.score >= MIN_SCORE for c in cands)
            else self._layer_candidates(query, scanned, everything=True)
            for query, cands in zip(queries, found, strict=True)
        ]
        with contextlib.ExitStack() as stack:
            wanting = [
                i
                for i, (query, cands) in enumerate(zip(queries, found, strict=True))
                if not any(c.score >= EXACT for c in cands) or (":" in query.text and not query.source)
            ]
            databases = self._open_databases(stack, notes) if wanting else []
            table_sources = [f"{t.schema}.{t.table}" for source in databases for t in source.tables]
            for i in wanting:
                reparsed = parse_query(names[i], layer_sources + table_sources)
                if reparsed != queries[i]:  # "table:name" narrows to a database table
                    queries[i] = reparsed
                    found[i] = self._layer_candidates(reparsed, scanned)
                found[i] += self._table_candidates(reparsed, databases)
            for source in databases:
                notes += source.notes
            decisions = [self._decide(query, cands, snap) for query, cands in zip(queries, found, strict=True)]
            return self._report(decisions, snap, notes)

    def _layer_candidates(
        self, query: PlaceQuery, scanned: list[tuple[LayerSnapshot, dict[str, NameGroup]]], everything: bool = False
    ) -> list[Candidate]:
        """Every name worth scoring (``everything``: all of them, up to a cap, for the closest names of a miss)."""
        candidates: list[Candidate] = []
        for layer, groups in scanned:
            if query.source and source_key(layer.name) != query.source:
                continue
            for index, (name, group) in enumerate(groups.items()):
                if everything and index >= CLOSEST_SCAN:
                    break
                if not everything and not _worth_scoring(query, name):
                    continue
                candidates.append(
                    Candidate(
                        name=name,
                        source=layer.name,
                        score=query_score(query, layer.name, name),
                        count=len(group.fids),
                        type_value=group.type_value,
                        source_size=layer.feature_count,
                        ref=(layer, group.fids),
                    )
                )
        return candidates

    # -- databases -----------------------------------------------------------------------------
    def _open_databases(self, stack: contextlib.ExitStack, notes: list[str]) -> list[TableSource]:
        opened: list[TableSource] = []
        allowed = self.ctx.on_main(self._allowed)
        for name in allowed:
            try:
                saved = self.ctx.on_main(resolve_connection, name, allowed)
                db = stack.enter_context(Database(saved, self.ctx.cancel, self._sql_timeout()))
                tables, available = self._tables(name, db)
            except ToolError as exc:
                notes.append(f"database {name!r} was not searched: {exc}")
                continue
            source = TableSource(name, db, tables, available)
            if tables and "pg_trgm" not in available:
                source.notes.append(f"{name!r} has no pg_trgm extension; its names were matched without it")
            opened.append(source)
        return opened

    def _tables(self, connection: str, db: Database) -> tuple[list[postgis_tables.NameTable], set[str]]:
        hit = self._table_cache.get(connection)
        if hit is not None and time.monotonic() - hit[0] < CACHE_SECONDS:
            return hit[1], hit[2]
        tables, available = postgis_tables.name_tables(db), postgis_tables.extensions(db)
        self._table_cache[connection] = (time.monotonic(), tables, available)
        return tables, available

    def _table_candidates(self, query: PlaceQuery, databases: list[TableSource]) -> list[Candidate]:
        candidates: list[Candidate] = []
        for source in databases:
            for table in source.tables:
                if query.source and source_key(table.table) != query.source:
                    continue
                self.ctx.check_cancelled()
                wanted = [query.name] + ([r] if (r := query.hint_remainder(table.table)) else [])
                try:
                    rows, capped = postgis_tables.matching_names(source.db, table, wanted, source.extensions)
                except ToolError as exc:  # one unreadable table does not spoil the search
                    source.notes.append(f"{table.qualified} in {source.connection!r} was not searched: {exc}")
                    continue
                if capped:
                    source.notes.append(f"only {postgis_tables.FALLBACK_NAMES:,} names of {table.qualified} searched")
                candidates += [
                    Candidate(
                        name=name,
                        source=table.qualified,
                        score=query_score(query, table.table, name),
                        kind="table",
                        connection=source.connection,
                        count=count,
                        type_value=kind,
                        source_size=table.rows,
                        ref=(source.db, table),
                    )
                    for name, count, kind in rows
                ]
        return candidates

    # -- ranking and locating ------------------------------------------------------------------
    def _decide(
        self, query: PlaceQuery, candidates: list[Candidate], snap: ProjectSnapshot
    ) -> tuple[PlaceOutcome, dict[int, Located]]:
        """The decision for one name, and the located candidates by ``id`` (the best few only)."""
        ranked = shortlist(candidates)
        located = {id(candidate): self._locate(candidate, snap) for candidate in ranked[:LOCATED]}
        ranked = merge_duplicates(ranked[:LOCATED], snap.tolerance) + ranked[LOCATED:]
        return decide(query, ranked), located

    def _locate(self, candidate: Candidate, snap: ProjectSnapshot) -> Located:
        cancel = self.ctx.cancel
        if candidate.kind == "layer":
            layer, fids = candidate.ref
            native = fetch_geometries(layer, fids, cancel)
            geometries, native_crs = in_project_crs(layer, native), layer.crs
            sql = _layer_sql(layer, candidate.name)
        else:
            db, table = candidate.ref
            srid = snap.crs.postgisSrid()
            geometries = []
            for wkb in postgis_tables.feature_wkbs(db, table, candidate.name, srid):
                geometry = QgsGeometry()
                geometry.fromWkb(wkb)
                geometries.append(geometry)
            sql = postgis_tables.subquery(table, candidate.name)
            native, native_crs = geometries, snap.crs
        if geometries:
            whole = QgsGeometry.collectGeometry(geometries)
            point = (
                whole.centroid() if whole.type() == QgsWkbTypes.GeometryType.PointGeometry else whole.pointOnSurface()
            )
            if not point.isNull():
                xy = point.asPoint()
                candidate.location = (xy.x(), xy.y())
            candidate.geometry_label, candidate.figure = self.ctx.on_main(_geometry_label, geometries, snap)
        return Located(candidate, geometries, sql, native, native_crs)

    # -- the answer ------------------------------------------------------------------------------
    def _report(
        self, decisions: list[tuple[PlaceOutcome, dict[int, Located]]], snap: ProjectSnapshot, notes: list[str]
    ) -> ToolResult:
        """What was found and added, for the model; the places' sources and layers in the artifact."""
        chosen = [d for d, _ in decisions if d.chosen is not None]
        lines = [f"Found {len(chosen)} of {len(decisions)} place{'s' if len(decisions) != 1 else ''}:"]
        taken: set[str] = set()
        sql_lines: list[str] = []
        example = ""
        example_at: tuple[float, float] | None = None
        used: list[ToolArtifact] = []
        for decision, located in decisions:
            if decision.chosen is not None:
                item = located.get(id(decision.chosen)) or self._locate(decision.chosen, snap)
                if not item.geometries:
                    lines.append(f"- {decision.query.text!r}: {self._describe(item, snap, False)} has no geometry")
                    continue
                reads = _place_reads(item.candidate, self.ctx)  # once: its table's provenance and the artifact
                layer_name = self._add_layer(item, snap, taken, reads)
                if not example:
                    example, example_at = layer_name, item.candidate.location
                lines.append(
                    f"- {decision.query.text!r}: {self._describe(item, snap, True)} -> added layer {layer_name!r}"
                )
                sql = item.sql or _wkt_sql(item.geometries, snap)
                sql_lines.append(f"  {layer_name}: {sql}")
                used.append(_place_artifact(item.candidate, self.ctx, layer_name, reads))
            elif decision.ambiguous:
                options = "; ".join(
                    self._describe(located.get(id(c)) or Located(c, []), snap, False) for c in decision.candidates
                )
                first = decision.candidates[0]
                lines.append(
                    f"- {decision.query.text!r} is ambiguous, nothing added: {options}. Ask the user which, or call "
                    f"again with layer:name, e.g. {source_key(first.source)}:{first.name}"
                )
            else:
                closest = ", ".join(f"{c.name!r} ({_where(c)})" for c in decision.closest) or "none"
                lines.append(f"- {decision.query.text!r}: no match. Closest names: {closest}")
        if example:
            lines.append(self.ctx.on_main(_usage_hint, example, example_at, snap))
            lines.append(f"In run_sql (EPSG:{snap.crs.postgisSrid() or '?'}):")
            lines += sql_lines
        lines += [f"Note: {note}" for note in notes]
        return ToolResult("\n".join(lines), merged(used))

    def _describe(self, item: Located, snap: ProjectSnapshot, details: bool) -> str:
        candidate = item.candidate
        parts = [f"{candidate.name!r} ({_where(candidate)}"]
        if candidate.type_value:
            parts.append(f", type {candidate.type_value}")
        if candidate.geometry_label:
            parts.append(f"; {candidate.geometry_label}")
        if candidate.location is not None:
            digits = 5 if snap.crs.isGeographic() else 0
            x, y = candidate.location
            parts.append(f" at {x:.{digits}f}, {y:.{digits}f}")
        skip = candidate.source if candidate.kind == "layer" else ""
        if candidate.location is not None and item.geometries:
            polygon = item.geometries[0].type() == QgsWkbTypes.GeometryType.PolygonGeometry
            point = QgsGeometry.fromPointXY(_point(candidate.location))
            if not polygon:
                inside = containing_names(snap, point, skip, self.ctx.cancel)
                if inside:
                    parts.append(", in " + " and ".join(inside))
            elif details:
                whole = QgsGeometry.unaryUnion(item.native or item.geometries)
                transforms = self.ctx.on_main(transforms_from, snap, item.native_crs or snap.crs)
                counts = counts_inside(snap, whole, transforms, skip, self.ctx.cancel)
                if counts:
                    parts.append("; inside: " + ", ".join(counts))
        if candidate.also_in and details:
            parts.append("; also in " + ", ".join(candidate.also_in))
        return "".join(parts) + ")"

    def _add_layer(self, item: Located, snap: ProjectSnapshot, taken: set[str], reads: ToolArtifact) -> str:
        base = "place_" + (slug(normalize(item.candidate.name)) or "unnamed")
        if base in taken:
            base = f"{base}_{slug(source_key(item.candidate.source))}"
        staged = self.ctx.on_main(_add_place_layer, self.ctx.project, base, item, snap, reads)
        name = finish_result(self.ctx, *staged)  # kept in the project's GeoPackage: it survives saving
        taken.add(name)
        return name


def _worth_scoring(query: PlaceQuery, name: str) -> bool:
    """A cheap first look, so a layer of 100,000 names is not compared character by character."""
    normalized = normalize(name)
    if any(len(word) >= 3 and word[:3] in normalized for word in query.name.split()):
        return True
    return trigram_similarity(query.name, normalized) >= 0.2


def _place_reads(candidate: Candidate, ctx: ToolContext) -> ToolArtifact:
    """Where a place was found: a project layer or a database table (worker thread)."""
    if candidate.kind == "table":
        return ToolArtifact(tables=(TableRef.named(candidate.source, candidate.connection),))
    return ToolArtifact(layers=(named_ref(ctx, candidate.source),))


def _place_artifact(candidate: Candidate, ctx: ToolContext, layer_name: str, reads: ToolArtifact) -> ToolArtifact:
    """A place added as ``layer_name``, found where ``reads`` says (``_place_reads``; worker thread)."""
    measured = candidate.figure
    figures = (replace(measured, what=f"{measured.what} of {layer_name!r}"),) if measured is not None else ()
    return replace(reads, added=(named_ref(ctx, layer_name),), figures=figures)


def _where(candidate: Candidate) -> str:
    if candidate.kind == "table":
        return f"table {candidate.source} in {candidate.connection}"
    return f"layer {candidate.source}"


def _point(xy: tuple[float, float]) -> Any:
    from qgis.core import QgsPointXY

    return QgsPointXY(*xy)


def _usage_hint(example: str, at: tuple[float, float] | None, snap: ProjectSnapshot) -> str:
    """How to use a place layer as an area, right whatever the CRSs of the place and of the layer filtered.

    ``aggregate`` returns the place in its own layer's CRS and ``$geometry`` is in the filtered layer's, so
    both are transformed (the place's CRS written literally) into a metric CRS where 2000 means metres.
    Main thread, as the other places' measures.
    """
    place_crs = snap.crs.authid()
    metric = _metric_crs(snap, at)
    uses = f"run_algorithm INPUT/INTERSECT/OVERLAY={example} ("
    uses += "native:buffer it" if metric == place_crs else f"native:reprojectlayer it to {metric}, then native:buffer"
    uses += f" for 'within N m'); select_features expression overlay_intersects('{example}')"
    if place_crs and metric:
        place = f"aggregate('{example}','collect',$geometry)"
        if metric != place_crs:
            place = f"transform({place}, '{place_crs}', '{metric}')"
        uses += f" or, in metres, distance(transform($geometry, @layer_crs, '{metric}'), {place}) <= 2000"
    return f"Use place_* layers as areas: {uses}; zoom to it."


def _metric_crs(snap: ProjectSnapshot, at: tuple[float, float] | None) -> str:
    """The project CRS when its units are true metres; else the WGS 84 UTM zone at ``at`` ('' if unknown).

    Web Mercator counts metres too, but they stretch by 1/cos(latitude): 2000 of them are 1100 m at 56°N.
    """
    crs = snap.crs
    if (
        crs.authid()
        and not crs.isGeographic()
        and crs.mapUnits() == DISTANCE_METERS
        and crs.projectionAcronym() not in ("merc", "webmerc")
    ):
        authid: str = crs.authid()
        return authid
    lonlat = _in_lonlat([QgsGeometry.fromPointXY(_point(at))], crs) if at is not None else None
    if not lonlat:  # a point outside the CRS's area has no zone
        return ""
    x, y = lonlat[0].asPoint().x(), lonlat[0].asPoint().y()
    if not (-180 <= x <= 180 and -90 <= y <= 90):
        return ""
    return f"EPSG:{(32600 if y >= 0 else 32700) + min(60, int((x + 180) // 6) + 1)}"


def _measured(geometries: list[QgsGeometry], snap: ProjectSnapshot, area: bool) -> tuple[float, str] | None:
    """Total area (m²) or length (m) on the ellipsoid, in any CRS; planar only in a CRS of true metres.

    Returns the figure and how it was measured (``ellipsoidal on WGS 84``, ``planar in EPSG:25832``).

    Measured from lon/lat reached through GDAL: on QGIS 3.22, once a worker thread that measured on the
    ellipsoid from a projected CRS has ended, QGIS's own transforms from that CRS can return NaN or leave
    coordinates unchanged, on every thread; measuring from EPSG:4326 is not affected.
    """
    measure = QgsDistanceArea()
    measure.setSourceCrs(QgsCoordinateReferenceSystem("EPSG:4326"), snap.context)
    if snap.ellipsoid and measure.setEllipsoid(snap.ellipsoid) and measure.willUseEllipsoid():
        shapes = _in_lonlat(geometries, snap.crs)
        method = ellipsoidal_method(snap.ellipsoid)
    else:
        metric = not snap.crs.isGeographic() and snap.crs.mapUnits() == DISTANCE_METERS
        if not metric or snap.crs.projectionAcronym() in ("merc", "webmerc"):
            return None
        measure = QgsDistanceArea()  # planar, in the CRS's metres
        measure.setSourceCrs(snap.crs, snap.context)
        shapes = geometries
        method = f"planar in {crs_name(snap.crs)}"
    if shapes is None:
        return None
    total = sum(measure.measureArea(g) if area else measure.measureLength(g) for g in shapes)
    return (total, method) if math.isfinite(total) else None


def _in_lonlat(geometries: list[QgsGeometry], crs: QgsCoordinateReferenceSystem) -> list[QgsGeometry] | None:
    """``geometries`` in EPSG:4326 (lon, lat), transformed by GDAL; ``None`` when they cannot be."""
    from osgeo import ogr, osr

    source, target = osr.SpatialReference(), osr.SpatialReference()
    found = []
    try:  # GDAL raises or returns an error code, depending on its exceptions setting
        known = crs.authid() and not crs.authid().upper().startswith("USER:")
        if source.SetFromUserInput(crs.authid() if known else crs.toWkt()) != 0 or target.ImportFromEPSG(4326) != 0:
            return None
        for reference in (source, target):
            reference.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
        transform = osr.CoordinateTransformation(source, target)
        for geometry in geometries:
            shape = ogr.CreateGeometryFromWkb(bytes(geometry.asWkb()))
            if shape is None or shape.Transform(transform) != 0:
                return None
            copy = QgsGeometry()
            copy.fromWkb(shape.ExportToIsoWkb())
            found.append(copy)
    except RuntimeError:
        return None
    return found


def _geometry_label(geometries: list[QgsGeometry], snap: ProjectSnapshot) -> tuple[str, Figure | None]:
    """``polygon, 6.35 km² (ellipsoidal on WGS 84)`` and its figure in m² or m (main thread: it measures)."""
    kind = geometries[0].type()
    count = f"{len(geometries)} " if len(geometries) > 1 else ""
    if kind == QgsWkbTypes.GeometryType.PolygonGeometry:
        area = _measured(geometries, snap, area=True)
        size = f", {area[0] / 1e6:.2f} km² ({area[1]})" if area is not None else ""
        figure = Figure("area", area[0], "m²", area[1]) if area is not None else None
        return f"{count}polygon{'s' if count else ''}{size}", figure
    if kind == QgsWkbTypes.GeometryType.LineGeometry:
        length = _measured(geometries, snap, area=False)
        size = f", {length[0] / 1000:.2f} km long ({length[1]})" if length is not None else ""
        figure = Figure("length", length[0], "m", length[1]) if length is not None else None
        return f"{count}line{'s' if count else ''}{size}", figure
    return f"{count}point{'s' if count else ''}", None


def _layer_sql(layer: LayerSnapshot, name: str) -> str:
    """For a project layer read from PostGIS, the place as a subquery on its table."""
    if layer.provider != "postgres":
        return ""
    uri = QgsDataSourceUri(layer.uri)
    if not uri.table() or uri.table().startswith("(") or not uri.geometryColumn():
        return ""
    table = postgis_tables.NameTable(
        uri.schema() or "public", uri.table(), uri.geometryColumn(), 0, layer.name_field, "", 0
    )
    return postgis_tables.subquery(table, name)


def _wkt_sql(geometries: list[QgsGeometry], snap: ProjectSnapshot) -> str:
    srid = snap.crs.postgisSrid()
    whole = QgsGeometry.collectGeometry(geometries) if len(geometries) > 1 else geometries[0]
    wkt = whole.asWkt(6 if snap.crs.isGeographic() else 1)
    if len(wkt) <= WKT_CHARS:
        return f"ST_GeomFromText('{wkt}', {srid})"
    box = whole.boundingBox()
    return (
        f"ST_MakeEnvelope({box.xMinimum():.1f}, {box.yMinimum():.1f}, {box.xMaximum():.1f}, {box.yMaximum():.1f}, "
        f"{srid}) (its bounding box; the shape is too long to quote: filter by name in its own table for the exact one)"
    )


def _add_place_layer(
    project: QgsProject, base: str, item: Located, snap: ProjectSnapshot, reads: ToolArtifact
) -> tuple[ResultStore, StagedResult]:
    """A layer with the place's features, replacing an earlier place layer of that name, staged for the store.

    Main thread; ``finish_result`` writes it and adds the stored layer.  ``reads``: where the place was found.
    """
    for old in project.mapLayersByName(base):
        if old.customProperty(PLACE_PROPERTY):
            project.removeMapLayer(old.id())
    geometries = [QgsGeometry(g) for g in item.geometries]
    kinds = {g.wkbType() for g in geometries}
    if len(kinds) > 1:
        for geometry in geometries:
            geometry.convertToMultiType()
        kinds = {g.wkbType() for g in geometries}
    wkb_type = kinds.pop() if kinds else QgsWkbTypes.Type.Point
    uri = f"{QgsWkbTypes.displayString(wkb_type)}?crs={snap.crs.authid()}&field=name:string&field=source:string"
    layer = vector_layer(uri + "&field=type:string", base, "memory")
    layer.setCrs(snap.crs)  # also a CRS without an authority id
    candidate = item.candidate
    features = []
    for geometry in geometries:
        feature = QgsFeature(layer.fields())
        feature.setAttributes([candidate.name, _where(candidate), candidate.type_value])
        feature.setGeometry(geometry)
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    layer.updateExtents()
    layer.setCustomProperty(PLACE_PROPERTY, candidate.label)
    layer.setRenderer(QgsSingleSymbolRenderer(_place_symbol(layer.geometryType())))
    return stage_result(project, layer, base, reads)


def _place_symbol(kind: QgsWkbTypes.GeometryType) -> Any:
    """A red outline, line or star: a place stands out over the data without hiding it."""
    if kind == QgsWkbTypes.GeometryType.PolygonGeometry:
        return QgsFillSymbol.createSimple({"color": "0,0,0,0", "outline_color": PLACE_COLOR, "outline_width": "0.8"})
    if kind == QgsWkbTypes.GeometryType.LineGeometry:
        return QgsLineSymbol.createSimple({"color": PLACE_COLOR, "width": "1.2"})
    return QgsMarkerSymbol.createSimple({"name": "star", "color": PLACE_COLOR, "size": "5"})
