"""The ``load_data`` tool: a file, a URL or a saved connection's table becomes a project layer, linked to its source.

Threads: the source is probed on the worker (GDAL opens the file, the CSV is
scanned, the URL is fetched once, the database catalogue is read), which
yields a ``LoadPlan``; the main thread only makes the QGIS layer from that
plan and adds it (``_add``).  Loaded data is not a temporary result: the
layer keeps pointing at its source and the result store never copies it,
except an OGC API Features collection (``ogc_copy``: its features are fetched
on the worker, QGIS's OAPIF provider would block the main thread).  A remote
CSV/TSV with coordinate columns (told from its first bytes) is read as points
by GDAL through ``/vsicurl/``.

Which URLs: reading a URL the user typed in this conversation, or one under
an OGC API server configured in the settings, runs freely.  Any other URL
(one the model took from a layer's text or made up) could carry project data
to a host of an injected instruction's choosing, so it is gated: the user
approves the request first (the preview names the URL).  Files are read
freely inside the project's folder and where the user named a file or folder
in this conversation; elsewhere the user approves first: an error message
(a CSV's header, a folder's file names) would carry a private file's text to
the model.  Saved connections the settings enable need no approval.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsMapLayer,
    QgsRasterLayer,
    QgsVectorLayer,
)
from qgis.PyQt import sip
from qgis.PyQt.QtCore import QCoreApplication

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, gated
from geogpt_qgis.core.artifacts import AddedLayer, ToolArtifact, ToolResult
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolContext, ToolError, ToolFunction
from geogpt_qgis.tools.layer_errors import not_opened_message
from geogpt_qgis.tools.layers import (
    add_result_layer,
    check_new_layer_name,
    crs_label,
    features_label,
    geometry_label,
    ordered_layers,
)
from geogpt_qgis.tools.maps import web
from geogpt_qgis.tools.maps.delimited import (
    DELIMITED_SUFFIXES,
    GEOGRAPHIC,
    CsvLayout,
    ProjectFrame,
    delimited_uri,
    guess_crs,
    inspect_csv,
    inspect_csv_text,
    near_in_lonlat,
    remote_csv_uri,
)
from geogpt_qgis.tools.maps.files import missing_file, plan_file
from geogpt_qgis.tools.maps.load_plan import RASTER, LoadPlan
from geogpt_qgis.tools.ogc.servers import parse_servers
from geogpt_qgis.tools.processing.algorithm_thread import run_on_algorithm_thread
from geogpt_qgis.tools.safety.targets import file_target, url_target
from geogpt_qgis.tools.thread_guard import raster_layer, vector_layer

if TYPE_CHECKING:
    from geogpt_qgis.tools.maps.ogc_copy import CollectionCopy

REMOTE_CSV_SUFFIXES = frozenset({".csv", ".tsv"})  # the ones GDAL's CSV driver opens by name
VSICURL = "/vsicurl/"
# Providers whose extent is read from the file, cheaply: the CSV guess compares with these layers.
_LOCAL_PROVIDERS = frozenset({"ogr", "gdal", "memory", "delimitedtext", "spatialite"})
# Providers that read files through GDAL or Qt, never QGIS's network manager: their layers are made on the worker
# and moved to the main thread (docs/DESIGN: allowed for these; server providers are made on the main thread).
_WORKER_PROVIDERS = frozenset({"ogr", "gdal", "delimitedtext"})
# A layer whose CRS this tool guessed (a CSV's): the next guess never compares with it, so one bad guess cannot spread.
GUESSED_CRS = "geogpt/guessed_crs"
log = logging.getLogger(__name__)
# Layers of these providers count features (or pixels) from a server or database: not counted here.
_REMOTE_PROVIDERS = frozenset({"OAPIF", "wms", "postgres", "WFS"})
NEEDS_FILE_APPROVAL = (
    "this file is outside the project's folder and the user did not name it in this conversation, so reading it "
    "needs their approval; ask the user which file they mean"
)
NEEDS_APPROVAL = (
    "this URL was not given by the user in this conversation, so loading it needs their approval; "
    "ask the user for the URL if you took it from data"
)


class DataLoading:
    """The loading part of the maps family."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    def tools(self) -> list[ToolFunction]:
        return [self.load_data]

    # -- what the user named -------------------------------------------------------------------------
    def notice_user_text(self, text: str) -> None:
        """Remember the URLs, files and folders the user typed in this conversation: loading those needs no approval."""
        self.ctx.user_named.notice(text)

    def _file_trusted(self, path: Path, home: str) -> bool:
        """Inside the project's folder, or a file or folder the user named (``core.user_named``)."""
        return self.ctx.user_named.file_named(path, home)

    def _trusted(self, url: str) -> bool:
        servers = [s.url for s in parse_servers(PlgOptionsManager.get_plg_settings().ogc_servers)]
        return self.ctx.user_named.url_given(url, servers)

    @staticmethod
    def _remote(source: str) -> str:
        """The http(s) URL ``source`` reads ("" for a file or a table)."""
        text = source.strip()
        text = text[len(VSICURL) :] if text.startswith(VSICURL) else text
        return text if web.is_url(text) else ""

    def preview_load_data(self, source: str, layer: str = "", crs: str = "", name: str = "") -> ApprovalRequest | None:
        """A URL the user did not give asks (the request leaves the machine), as does a file they did not name."""
        url = self._remote(source)
        if not url:
            return self._file_request(source.strip().strip("\"'"))
        if self._trusted(url):
            return None
        host = urlsplit(url).netloc
        return ApprovalRequest(
            action=f"Load data from {host}",
            details=f"GeoGPT would request this URL, which you did not give in this conversation:\n{url}",
            effects=[Effect.NETWORK, Effect.ADD_LAYER],
            targets=[url_target(url, ("request",))],
        )

    def _file_request(self, source: str) -> ApprovalRequest | None:
        if not source:
            return None
        home = self.ctx.on_main(self.ctx.project.homePath)
        path = _local_path(source, home)
        if self._is_table(source, path) or self._file_trusted(path, home):
            return None
        return ApprovalRequest(
            action=f"Read the file {path.name}",
            details=f"GeoGPT would open this file, outside the project's folder, which you did not name:\n{path}",
            effects=[Effect.READ_PRIVATE, Effect.ADD_LAYER],
            targets=[file_target(str(path), ("read",))],
        )

    @staticmethod
    def _is_table(source: str, path: Path) -> bool:
        """``connection.schema.table`` of a saved connection, and no file of that name (a file wins)."""
        from geogpt_qgis.tools.maps.db_tables import split_table_source
        from geogpt_qgis.tools.postgis.connections import saved_connection_names

        if "/" in source or "\\" in source or path.exists():
            return False
        return split_table_source(source, saved_connection_names()) is not None

    # -- the tool ----------------------------------------------------------------------------------
    @gated(preview_load_data)
    def load_data(self, source: str, layer: str = "", crs: str = "", name: str = "") -> ToolResult:
        """Load a file, URL or connection.schema.table."""
        source = source.strip().strip("\"'")
        if not source:
            raise ToolError("source is empty: give a file path, a URL or connection.schema.table")
        name = check_new_layer_name(name) if name.strip() else ""
        if crs.strip() and not self.ctx.on_main(_known_crs, crs.strip()):
            raise ToolError(f"{crs!r} is not a CRS QGIS knows; give an id such as EPSG:4326 or EPSG:25832")
        plan = self._plan(source, layer, crs.strip(), name)
        self.ctx.check_cancelled()
        if not isinstance(plan, LoadPlan):  # an OGC API Features collection, fetched: a copy in the results
            from geogpt_qgis.tools.maps.ogc_copy import add_copy

            return add_copy(self.ctx, plan, name)
        # On a thread that lives as long as QGIS: a layer's CRS built on this call's thread would die with it
        # (QGIS 3.22: later transforms from it leave coordinates unchanged, then crash; see algorithm_thread).
        made = run_on_algorithm_thread(_made_here, plan)
        try:
            self.ctx.check_cancelled()
            added, details = self.ctx.on_main(self._add, plan, made)
        except BaseException:
            if made is not None:  # made here and moved: freed on the main thread, never by this one
                _discard(made)
            raise
        lines = [f"Loaded {added.name!r} ({details}) from {plan.source}.", *plan.notes]
        lines += self._data_checks(added)
        if crs.strip() and plan.provider != "delimitedtext" and "crs" not in plan.extra:
            lines.append("crs was ignored: it sets the CRS of CSV/TSV coordinates only.")
        artifact = ToolArtifact(tables=plan.tables, added=(added,))
        return ToolResult("\n".join(lines), artifact)

    def _data_checks(self, added: AddedLayer) -> list[str]:
        """What in the loaded data changes figures (invalid geometry, mixed types, Z, georeferencing...)."""
        from geogpt_qgis.tools.data_checks import check_notes, plan_checks

        checks = self.ctx.on_main(lambda: plan_checks(self.ctx.project.mapLayer(added.layer_id)))
        return check_notes(checks, self.ctx.cancel)

    def _plan(self, source: str, layer: str, crs: str, name: str) -> LoadPlan | CollectionCopy:
        url = self._remote(source)
        if url:
            if not self._trusted(url) and not approval_granted():
                raise ToolError(NEEDS_APPROVAL)
            return self._plan_url(url, source.startswith(VSICURL), layer, crs, name)
        frame, home = self.ctx.on_main(self._frame)
        path = _local_path(source, home)
        if self._is_table(source, path):
            plan: LoadPlan | CollectionCopy = self._table(source)(name)
            return plan
        if not self._file_trusted(path, home) and not approval_granted():
            raise ToolError(NEEDS_FILE_APPROVAL)
        if not path.exists():  # the folder's files are named only where the user may see them unasked
            raise missing_file(path, self._file_trusted(path.parent, home) or approval_granted())
        if path.suffix.lower() in DELIMITED_SUFFIXES:
            return self._plan_csv(path, crs, frame, name, layer)
        return plan_file(str(path), str(path), layer, name)

    def _plan_url(self, url: str, as_file: bool, layer: str, crs: str, name: str) -> LoadPlan | CollectionCopy:
        timeout = PlgOptionsManager.get_plg_settings().ogc_timeout
        if web.is_tile_template(url):
            web.check_tiles(url, timeout, self.ctx.cancel)
            return web.xyz_plan(url, name)
        found = web.peek(url, timeout, self.ctx.cancel)
        kind = "file" if as_file else web.classify(found)
        if kind == "ogc":
            from geogpt_qgis.tools.maps.ogc_copy import fetch_collection

            return fetch_collection(url, layer, timeout, self.ctx.cancel)
        if kind == "wms":
            frame, _ = self.ctx.on_main(self._frame)
            return web.wms_plan(found, url, layer, name, frame.crs)
        if kind == "wmts":
            return web.wmts_plan(found, url, layer, name)
        points = self._plan_remote_csv(found, url, crs, name, layer) if kind == "file" else None
        return points or plan_file(VSICURL + url, url, layer, name)

    def _plan_remote_csv(self, found: web.Peek, url: str, crs: str, name: str, layer: str) -> LoadPlan | None:
        """A CSV/TSV URL with coordinate columns (told from its first bytes) as points; ``None``: a plain table.

        ``layer`` with a comma names the X,Y columns (as for a local CSV).
        """
        suffix = Path(urlsplit(url).path).suffix.lower()
        if suffix not in REMOTE_CSV_SUFFIXES:
            return None
        text = found.head.decode("utf-8", errors="replace")
        if len(found.head) >= web.FILE_PEEK_BYTES and "\n" in text:
            text = text[: text.rindex("\n") + 1]  # cut short: the last line may be cut in a number
        columns = layer if "," in layer else ""
        try:
            layout = inspect_csv_text(text, suffix, Path(urlsplit(url).path).name, self.ctx.cancel, columns)
        except ToolError:
            if columns:
                raise
            return None  # no coordinate columns: GDAL reads it as a table, as any remote file
        uri = remote_csv_uri(url, layout)
        if uri is None:
            return None
        if layout.srid and not self.ctx.on_main(_known_crs, layout.srid):
            layout = replace(layout, srid="")  # no CRS QGIS knows: guessed, as without one
        frame = None if crs else self.ctx.on_main(self._frame)[0]
        chosen, how, extra = _csv_crs(layout, crs, frame)
        if extra:
            how += f" (from the first {layout.rows:,} rows)"
        notes = (f"Columns used: {layout.columns_used}; read from the server through GDAL.", f"CRS: {how}.")
        stem = Path(urlsplit(url).path).stem or "points"
        return LoadPlan("vector", "ogr", uri, name or stem, url, notes, extra={"crs": chosen, **extra})

    def _plan_csv(self, path: Path, crs: str, frame: ProjectFrame, name: str, layer: str = "") -> LoadPlan:
        layout = inspect_csv(path, self.ctx.cancel, layer if "," in layer else "")  # "X,Y": the coordinate columns
        if layout.srid and not self.ctx.on_main(_known_crs, layout.srid):
            layout = replace(layout, srid="")  # no CRS QGIS knows: guessed, as without one
        chosen, how, extra = _csv_crs(layout, crs, frame)
        kind = "Tab" if layout.delimiter == "\t" else repr(layout.delimiter)
        notes = (f"Columns used: {layout.columns_used} ({kind}-separated).", f"CRS: {how}.", *layout.notes)
        extra["points"] = str(layout.points)
        uri = delimited_uri(path, layout, chosen)
        return LoadPlan("vector", "delimitedtext", uri, name or path.stem, str(path), notes, extra=extra)

    def _table(self, source: str) -> Any:
        """A planner for ``connection.schema.table`` (``_is_table``: ``source`` names a saved connection)."""
        from geogpt_qgis.tools.maps.db_tables import split_table_source, table_plan
        from geogpt_qgis.tools.postgis.connections import (
            allowed_connection_names,
            resolve_connection,
            saved_connection_names,
        )

        parts = split_table_source(source, saved_connection_names())
        if parts is None:  # _is_table said it was one; a connection renamed since would end here
            raise ToolError(f"{source!r} is not connection.schema.table of a saved connection")
        connection, schema, table = parts
        settings = PlgOptionsManager.get_plg_settings()
        allowed = allowed_connection_names(settings.postgis_connections)
        saved = self.ctx.on_main(resolve_connection, connection, allowed)
        return lambda name: table_plan(saved, schema, table, name, self.ctx.cancel, settings.sql_timeout)

    # -- main thread -------------------------------------------------------------------------------
    def _frame(self) -> tuple[ProjectFrame, str]:
        """The project's CRS and its local layers' extent (for the CSV guess), and its home folder (main thread)."""
        project = self.ctx.project
        # A project without a CRS (a new headless one) still has layers: their extent in lon/lat tells
        # where the data is, so a CSV far from them (swapped columns) is told all the same.
        target = project.crs() if project.crs().isValid() else QgsCoordinateReferenceSystem(GEOGRAPHIC)
        extent = None
        for existing in ordered_layers(project):
            if existing.providerType() not in _LOCAL_PROVIDERS or not existing.isSpatial():
                continue
            if existing.customProperty(GUESSED_CRS):  # a guess compared with a guess: one bad guess would spread
                continue
            transform = QgsCoordinateTransform(existing.crs(), target, project)
            if not transform.isValid() and existing.crs() != target:  # it would pass the box on untransformed
                continue
            try:
                box = transform.transformBoundingBox(existing.extent())
            except Exception as exc:  # noqa: BLE001 - QgsCsException: a layer outside the project's CRS
                log.debug("extent of %r left out of the CSV guess: %s", existing.name(), exc)
                continue
            if box.isNull() or box.isEmpty():
                continue
            bounds = (box.xMinimum(), box.yMinimum(), box.xMaximum(), box.yMaximum())
            extent = (
                bounds
                if extent is None
                else (
                    min(extent[0], bounds[0]),
                    min(extent[1], bounds[1]),
                    max(extent[2], bounds[2]),
                    max(extent[3], bounds[3]),
                )
            )
        if not project.crs().isValid():  # no CRS to guess with; only where the layers lie
            return ProjectFrame("", None, near_in_lonlat(GEOGRAPHIC, extent)), project.homePath()
        crs = target.authid() if target.isValid() else ""
        return ProjectFrame(crs, extent, near_in_lonlat(crs, extent)), project.homePath()

    def _add(self, plan: LoadPlan, made: QgsMapLayer | None) -> tuple[AddedLayer, str]:
        """Add the layer (made here unless the worker made it) under a free name (main thread); what it holds."""
        fresh = made is None
        if made is None:
            if plan.kind == RASTER:
                made = raster_layer(plan.uri, plan.name, plan.provider)
            else:
                made = vector_layer(plan.uri, plan.name, plan.provider)
            if not made.isValid():
                _discard(made)
                raise ToolError(_not_opened(plan, made))
        try:
            name = add_result_layer(self.ctx.project, made, plan.name)
        except ToolError:
            if fresh:  # one the worker made is the worker's to discard
                _discard(made)
            raise
        return AddedLayer(name, made.id()), _describe(made, plan)


def _csv_crs(layout: CsvLayout, crs: str, frame: ProjectFrame | None) -> tuple[str, str, dict[str, str]]:
    """The CSV's CRS: the one given, else the rows' SRID, else guessed (marked so); how it was told."""
    if crs:
        return crs, f"{crs}, as given", {}
    if layout.srid:
        return layout.srid, f"{layout.srid}, as every row's SRID says", {}
    if frame is None:  # the caller reads the frame whenever it guesses
        raise ToolError("the project's CRS was not read, so the file's CRS cannot be guessed: give crs")
    chosen, how = guess_crs(layout, frame)
    return chosen, how, {GUESSED_CRS: "yes"}


def _known_crs(crs: str) -> bool:
    """Whether QGIS knows ``crs``, asked on the main thread (called through ``on_main``).

    QGIS 3.22 caches each CRS where it is first made: one first made on a worker
    thread that has ended makes later transforms from it invalid, and the next
    event loop crash.  Made here first, the worker's layer reuses it safely.
    """
    valid: bool = QgsCoordinateReferenceSystem(crs).isValid()
    return valid


def _local_path(source: str, home: str) -> Path:
    """``source`` as a path: ``~`` expanded, a relative path read from the project's folder."""
    path = Path(source).expanduser()
    return Path(home) / path if home and not path.is_absolute() else path


def _made_here(plan: LoadPlan) -> QgsMapLayer | None:
    """A file's layer, made on this worker and moved to the main thread; ``None`` for server layers.

    Opening a remote file through ``/vsicurl/`` or scanning a large CSV takes
    as long as reading it: here it never stops the map from drawing.
    """
    if plan.provider not in _WORKER_PROVIDERS:
        return None
    layer: QgsMapLayer
    if plan.kind == RASTER:
        layer = QgsRasterLayer(plan.uri, plan.name, plan.provider)
    else:
        layer = QgsVectorLayer(plan.uri, plan.name, plan.provider)
    if not layer.isValid():
        message = _not_opened(plan, layer)
        del layer  # freed now, on this thread, which made it (not by whichever thread drops the traceback)
        raise ToolError(message)
    if plan.extra.get("points") and isinstance(layer, QgsVectorLayer) and not _has_points(layer):
        message = (
            f"QGIS read no points from {plan.source}, though {plan.extra['points']} of its rows hold coordinates; "
            "nothing was loaded (check how its numbers are written)"
        )
        del layer
        raise ToolError(message)
    if plan.extra.get("crs"):  # a remote CSV's coordinates: GDAL's CSV driver knows no CRS
        layer.setCrs(QgsCoordinateReferenceSystem(plan.extra["crs"]))
    if plan.extra.get(GUESSED_CRS):
        layer.setCustomProperty(GUESSED_CRS, True)
    layer.moveToThread(QCoreApplication.instance().thread())
    return layer


def _has_points(layer: QgsVectorLayer) -> bool:
    """A delimited-text layer with geometry and at least one feature (the provider counted them when it opened)."""
    has: bool = layer.isSpatial() and layer.featureCount() != 0
    return has


def _not_opened(plan: LoadPlan, layer: QgsMapLayer) -> str:
    """Why the layer failed, read through ``layer_errors`` (QGIS 3.22 crashes on an empty error's summary)."""
    if plan.provider == "postgres":  # a postgres error may quote the connection
        return f"QGIS could not open {plan.source}: the database refused it or did not answer"
    return not_opened_message(plan.source, layer, f"its {plan.provider} provider gave no reason")


def _discard(layer: QgsMapLayer) -> None:
    """Free a layer that is not added, on the main thread where it lives (from any thread: ``deleteLater``).

    Never left to Python: a traceback holding the layer would free it on whatever thread lets go of it.
    """
    sip.transferto(layer, None)  # Qt owns it now; Python's reference no longer frees it
    layer.deleteLater()


def _describe(layer: Any, plan: LoadPlan) -> str:
    """``Point, 30 features, EPSG:4326`` or ``raster 800×600 px, 1 band, EPSG:25832``."""
    if isinstance(layer, QgsRasterLayer):
        if plan.provider == "wms":
            return f"web map layer, {crs_label(layer)}"
        bands = layer.bandCount()
        return (
            f"raster {layer.width()}×{layer.height()} px, {bands} band{'s' if bands != 1 else ''}, {crs_label(layer)}"
        )
    if plan.provider in _REMOTE_PROVIDERS:
        return f"{geometry_label(layer)}, {crs_label(layer)}"
    return f"{geometry_label(layer)}, {features_label(layer)}, {crs_label(layer)}"
