"""Result layers that survive saving: each kept in a GeoPackage of its own that belongs to the project.

A layer the agent makes (a processing output, a filtered OGC result, a place)
starts as a temporary layer (memory, or a file in a temporary folder) that QGIS
forgets when it closes.  The store copies its features into a new GeoPackage
and adds a layer reading that table instead, with the temporary layer's style,
metadata and custom properties.  One file per result, written before any layer
opens it and never written again (``core/result_files`` says why: QGIS reads
GeoPackages without locks):

- a saved project's results go beside it, ``<project>_results/<name>.gpkg``;
- before the first save they go to a scratch folder (in the QGIS profile, or a
  temporary folder headless); ``relocate``, called when the project gets a file
  name (first save, Save As, the CLI's ``--save``), copies the results the
  project uses beside the new project file and points the layers at the copies;
- ``clean_up``, after each save, deletes the result files of the project's
  folder that no layer uses any more, so removed results do not pile up.

Raster results (an algorithm's temporary GeoTIFF) follow the same rules as
GeoTIFFs in the same folder
(``core/result_rasters``): copied there as soon as the project has a file
(``keep_raster``), else when it gets one (``relocate``), and dropped by
``clean_up`` once no layer reads them.

Each stored table carries where it came from (``tools.provenance``): ``write``
puts the tool call's record into the GeoPackage metadata extension right
after the features, before QGIS opens the table, and ``open`` gives the
layer the same metadata.

Threads: ``stage``, ``open``, ``relocate`` and ``clean_up`` run on the main
thread (they read the project and make layers); ``write``, the slow part,
runs on the tool's worker and touches only a feature source and the file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransformContext,
    QgsDataProvider,
    QgsFeatureRequest,
    QgsFeedback,
    QgsFields,
    QgsLayerMetadata,
    QgsMapLayer,
    QgsProject,
    QgsProviderRegistry,
    QgsRasterLayer,
    QgsReadWriteContext,
    QgsVectorFileWriter,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
)
from qgis.PyQt import sip
from qgis.PyQt.QtXml import QDomDocument

from geogpt_qgis.core import gpkg_metadata, result_files, result_rasters
from geogpt_qgis.core.artifacts import EMPTY, AlgorithmRun, ToolArtifact
from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.core.provenance import InputSource, current_call, current_origin
from geogpt_qgis.toolbelt.log import logger as log
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.layers import add_result_layer
from geogpt_qgis.tools.processing.algorithm_thread import run_on_algorithm_thread
from geogpt_qgis.tools.provenance import (
    QGIS_METADATA_URI,
    RECORDED_PROPERTY,
    inputs_of,
    metadata_document,
    provenance_of,
    with_record,
)
from geogpt_qgis.tools.thread_guard import assert_main_thread, vector_layer

if TYPE_CHECKING:
    from collections.abc import Callable

BATCH = 1000
_ALL_STYLE = QgsMapLayer.StyleCategory.AllStyleCategories


@dataclass
class StagedResult:
    """A temporary layer on its way into the store: where it goes, and a snapshot to read it from."""

    name: str
    table: str
    path: Path
    layer: QgsVectorLayer | None  # let go on the main thread once the stored layer is open
    source: QgsVectorLayerFeatureSource | None
    fields: QgsFields
    wkb_type: object
    crs: QgsCoordinateReferenceSystem
    transform_context: QgsCoordinateTransformContext
    expected: int = -1  # the temporary layer's feature count when staged (-1: its provider does not know)
    written: bool = False
    count: int = 0  # rows the written table holds, counted by SQLite (result_files.row_count)
    # Provenance: what the call read (main thread, when staged), and the metadata the stored layer gets.
    inputs: tuple[InputSource, ...] = ()
    algorithm: AlgorithmRun | None = None
    metadata: QgsLayerMetadata = field(default_factory=QgsLayerMetadata)
    recorded: bool = False  # the call's record went into the table's GeoPackage metadata with it


class ResultStore:
    """The result files of one project.

    ``follow_project``: results of a saved project go straight beside it (the
    desktop).  The CLI turns it off so that a question asked of a project never
    writes beside that project; its ``--save`` relocates them beside the copy.
    """

    def __init__(self, scratch_dir: Path, follow_project: bool = True) -> None:
        self.scratch_dir = scratch_dir
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.scratch_folder = scratch_dir / f"{result_files.SCRATCH_PREFIX}{stamp}-{uuid.uuid4().hex[:8]}"
        self.follow_project = follow_project
        self._write_lock = threading.Lock()  # one writer per store: clean_up never deletes under it
        self._names_lock = threading.Lock()
        self._reserved: set[Path] = set()  # result files (vector or raster) not yet in a layer: never cleaned up

    # -- where -----------------------------------------------------------------
    def location(self, project: QgsProject) -> Path:
        """The folder new results go to now (main thread)."""
        home = _local_file(project)
        if self.follow_project and home is not None:
            return result_files.results_folder_for(home)
        return self.scratch_folder

    # -- one result: stage (main), write (worker), open (main) -------------------
    def stage(self, project: QgsProject, layer: QgsVectorLayer, name: str, reads: ToolArtifact = EMPTY) -> StagedResult:
        """Pick the table for ``layer`` (named after ``name``) and snapshot its features (main thread).

        ``reads``: what the call read to make it (its layers, tables or collections, and its algorithm), for
        the record written with the table.
        """
        assert_main_thread("a result layer was staged")
        folder = self.location(project)
        folder.mkdir(parents=True, exist_ok=True)
        path = self._claim(name, folder)
        return StagedResult(
            name=name,
            table=path.stem,
            path=path,
            layer=layer,
            source=QgsVectorLayerFeatureSource(layer),
            fields=layer.fields(),
            wkb_type=layer.wkbType(),
            crs=layer.crs(),
            transform_context=project.transformContext(),
            expected=max(-1, int(layer.featureCount())),
            inputs=inputs_of(project, reads),
            algorithm=reads.algorithm,
            metadata=QgsLayerMetadata(layer.metadata()),
        )

    def write(self, staged: StagedResult, cancel: CancelToken | None = None) -> None:
        """Copy the staged features into their table (any thread; a failed or stopped copy leaves no table).

        The copy must hold as many features as the temporary layer had when staged: a short read of it
        is tried once more, then refused, never stored as a plausible smaller result.
        """
        with self._write_lock:
            try:
                for attempt in (1, 2):
                    staged.count = self._write(staged, cancel)
                    if staged.expected < 0 or staged.count == staged.expected:
                        break
                    log.warning(
                        "result %s: %d of %d features read on attempt %d",
                        staged.table,
                        staged.count,
                        staged.expected,
                        attempt,
                    )
                else:
                    raise ToolError(
                        f"the result {staged.name!r} has {staged.expected} features, but only {staged.count} could "
                        "be read to store it; nothing was added. Run the step again."
                    )
                self._record(staged)
            except BaseException:
                self.discard(staged, drop=True)
                raise
        staged.written = True

    @staticmethod
    def _record(staged: StagedResult) -> None:
        """Write the call's provenance into the table's GeoPackage metadata now, before QGIS opens the table.

        Only within a tool call (``current_call``, set by the toolkit); the stored layer gets the same
        metadata in ``open``.  A failure here leaves the table without it and is logged: the toolkit's
        recorder then records the layer alone (``tools.provenance``).
        """
        call = current_call.get()
        if call is None:
            return
        record = provenance_of(
            call.tool, call.arguments, staged.algorithm, staged.inputs, current_origin.get(), call.time
        )
        metadata = with_record(staged.metadata, record)
        try:
            gpkg_metadata.add_table_document(staged.path, staged.table, QGIS_METADATA_URI, metadata_document(metadata))
        except (sqlite3.Error, OSError) as exc:
            log.warning("the provenance of %s could not be written into %s: %s", staged.table, staged.path, exc)
            return
        staged.metadata, staged.recorded = metadata, True

    def _write(self, staged: StagedResult, cancel: CancelToken | None) -> int:
        """Write the table (replacing it on a second attempt); returns the number of rows it holds (sqlite3).

        The features go from the snapshot to the writer in one C++ loop: read through Python in batches,
        100,000 features made as many Python objects, whose garbage collection paused every thread, the
        main one included (the GIL), for 60-230 ms at a time here. Stop ends the loop through the request's
        feedback.
        """
        if staged.source is None:
            raise ToolError("the result was already stored")
        options = QgsVectorFileWriter.SaveVectorOptions()
        options.driverName = "GPKG"
        options.fileEncoding = "UTF-8"
        options.layerName = staged.table
        options.actionOnExistingFile = QgsVectorFileWriter.ActionOnExistingFile.CreateOrOverwriteFile
        fid = _fid_column(staged.fields, staged.source, cancel)
        options.layerOptions = [f"DESCRIPTION={result_files.MARK}", f"FID={fid}"]
        writer = QgsVectorFileWriter.create(
            str(staged.path), staged.fields, staged.wkb_type, staged.crs, staged.transform_context, options
        )
        try:
            if writer.hasError() != QgsVectorFileWriter.WriterError.NoError:
                raise ToolError(f"could not store the result in {staged.path}: {writer.errorMessage()}")
            request = QgsFeatureRequest()
            feedback = QgsFeedback()
            request.setFeedback(feedback)
            stop = cancel.on_cancel(feedback.cancel) if cancel is not None else None
            try:
                if not writer.addFeatures(staged.source.getFeatures(request)):
                    raise ToolError(f"could not store the result in {staged.path}: {writer.errorMessage()}")
            finally:
                if stop is not None:
                    stop()
        finally:
            del writer  # closes the table (GDAL builds its R-tree now): its features are on disk
        if cancel is not None:
            cancel.raise_if_cancelled()  # a stopped loop wrote part of the table: write() drops it
        return result_files.row_count(staged.path, staged.table)

    def open(self, staged: StagedResult) -> QgsVectorLayer:
        """A layer reading the stored table, styled like the temporary layer (main thread; not added).

        The temporary layer is let go here, on the main thread it belongs to.
        """
        try:
            layer = self.open_table(staged)
            if staged.layer is not None:
                copy_style(staged.layer, layer)
            if staged.recorded:  # as written into the GeoPackage with the table
                layer.setMetadata(staged.metadata)
                layer.setCustomProperty(RECORDED_PROPERTY, True)
        except BaseException:
            self.discard(staged, drop=True)
            raise
        finally:
            staged.layer = staged.source = None
        self.discard(staged)
        return layer

    def adopt(self, staged: StagedResult, project: QgsProject) -> bool:
        """Point the temporary layer, already in ``project``, at its stored table (main thread, after ``write``).

        For a copy made after the layer was added (``tools.result_copies``): the layer keeps its id, name
        and style, and reads the table from now on.  The table is opened and counted on its own first, so a
        short copy leaves the layer as it was.  ``False`` (the table dropped) when the layer is no longer
        in the project, or is being edited: its features may no longer be the ones copied.
        """
        assert_main_thread("a result layer was pointed at its stored table")
        layer = staged.layer
        try:
            if layer is None or sip.isdeleted(layer) or project.mapLayer(layer.id()) is not layer:
                self.discard(staged, drop=True)
                return False
            if layer.isEditable() or layer.isModified():
                log.warning("result %s is being edited: it stays a temporary layer", staged.table)
                self.discard(staged, drop=True)
                return False
            _repoint(layer, self.open_table(staged).source(), "ogr", project)
            if staged.recorded:  # as written into the GeoPackage with the table
                layer.setMetadata(staged.metadata)
                layer.setCustomProperty(RECORDED_PROPERTY, True)
            project.setDirty(True)  # a save made while the copy ran wrote a temporary layer: QGIS asks again
        finally:
            staged.layer = None  # the snapshot (staged.source) is let go by the caller, off the main thread
        self.discard(staged)
        return True

    def open_table(self, staged: StagedResult) -> QgsVectorLayer:
        """A layer on the written table, checked to read every feature written (``ToolError`` and dropped if not)."""
        layer = vector_layer(_uri(staged.path, staged.table), staged.name, "ogr")
        try:
            if not layer.isValid():
                raise ToolError(f"QGIS could not open the stored result {staged.table} in {staged.path}")
            _check_stored_count(layer, staged)
        except BaseException:
            self.discard(staged, drop=True)
            raise
        return layer

    def discard(self, staged: StagedResult, drop: bool = False) -> None:
        """Forget a staged result; with ``drop``, delete its file (a failed or stopped step adds nothing)."""
        with self._names_lock:
            self._reserved.discard(staged.path)
        if drop:
            result_files.remove_file(staged.path)

    # -- saving ------------------------------------------------------------------
    def relocate(self, project: QgsProject, project_file: str) -> Path | None:
        """Copy the results the project uses beside ``project_file`` and point their layers there (main thread).

        Call before the project is written under that name.  A result is a
        table marked as one in its GeoPackage, or a raster marked as one (in
        the scratch folder, or beside the project's previous file after a Save
        As: those files stay as they were for the old project).  Returns the
        results folder when anything was copied, else ``None``.
        """
        if not project_file or "://" in project_file:
            return None  # a project kept in a database has no folder to sit beside
        self.follow_project = True
        folder = result_files.results_folder_for(project_file)
        copied = self._relocate_rasters(project, folder) + self._relocate_tables(project, folder)
        return folder if copied else None

    def _relocate_tables(self, project: QgsProject, folder: Path) -> int:
        """Copy each result table a layer reads outside ``folder`` into a file of its own there; the copies made."""
        copies: dict[tuple[Path, str], Path] = {}
        marked: dict[Path, set[str]] = {}
        for layer, path, table in _ogr_layers(project):
            if path.parent.resolve() == folder.resolve() or not path.is_file():
                continue
            if path not in marked:
                marked[path] = result_files.result_tables(path)
            if table not in marked[path]:
                continue
            if (path, table) not in copies:
                target = self._claim(table, folder)
                try:
                    result_files.copy_result(path, table, target)
                except BaseException:
                    result_files.remove_file(target)
                    raise
                finally:
                    self._release(target)
                copies[(path, table)] = target
            _repoint(layer, _uri(copies[(path, table)], table), "ogr", project)
        for source in {path for path, _table in copies}:
            if source.parent == self.scratch_folder and not self._in_use(project, source):
                result_files.remove_file(source)
        with contextlib.suppress(OSError):
            self.scratch_folder.rmdir()  # once every scratch result moved
        return len(copies)

    def _relocate_rasters(self, project: QgsProject, folder: Path) -> int:
        """Copy temporary raster outputs and rasters of other projects' results folders into this one's."""
        copied: dict[Path, Path] = {}
        for layer, path in _raster_files(project):
            if path.parent.resolve() == folder.resolve():
                continue
            if not (_is_temporary_file(path) or result_rasters.is_result(path)):
                continue
            if path not in copied:
                target = self._claim(layer.name(), folder, result_rasters.EXTENSION)
                try:
                    result_rasters.copy_raster(path, target)
                finally:
                    self._release(target)
                copied[path] = target
            _repoint(layer, str(copied[path]), "gdal", project)  # keeps its renderer
        return len(copied)

    def _claim(self, name: str, folder: Path, extension: str = result_files.EXTENSION) -> Path:
        """A free file name in ``folder`` for a result called ``name``, reserved until ``_release``."""
        with self._names_lock:
            path = result_files.file_name(name, folder, self._reserved, extension)
            self._reserved.add(path)
        return path

    def _release(self, path: Path) -> None:
        with self._names_lock:
            self._reserved.discard(path)

    # -- a result another writer makes (GDAL copying a query's rows) -----------------------
    def file_target(self, project: QgsProject, name: str) -> Path:
        """A new GeoPackage for a result called ``name`` that another writer fills, reserved (main thread).

        The writer names its table after the file (``path.stem``) and marks it ``result_files.MARK``;
        ``release_file`` once a layer reads it (or, with ``drop``, when it failed: deleted).
        """
        assert_main_thread("a result file was reserved")
        folder = self.location(project)
        folder.mkdir(parents=True, exist_ok=True)
        return self._claim(name, folder)

    def release_file(self, target: Path, drop: bool = False) -> None:
        """The file is in a layer now (or, with ``drop``, was not wanted after all: deleted)."""
        self._release(target)
        if drop:
            result_files.remove_file(target)

    # -- raster outputs of a saved project: straight beside it ---------------------------
    def raster_target(self, project: QgsProject, name: str) -> Path | None:
        """Where a new raster result called ``name`` is copied now, reserved (main thread); ``None``: left where it is.

        Before the project has a file (or for the CLI), the temporary output
        stays put and ``relocate`` copies it when the project is saved.
        """
        home = _local_file(project)
        if not self.follow_project or home is None:
            return None
        return self._claim(name, result_files.results_folder_for(home), result_rasters.EXTENSION)

    def release_raster(self, target: Path, drop: bool = False) -> None:
        """The copy is in a layer now (or, with ``drop``, was not wanted after all: deleted)."""
        self._release(target)
        if drop:
            result_rasters.remove_file(target)

    def clean_up(self, project: QgsProject) -> list[str]:
        """Delete the result files of the project's folder that no layer uses (main thread, after a save).

        Whole files only: a table is never dropped from a file that QGIS may be reading.  Skipped while a
        result is being written (it runs again on the next save): the main thread never waits for a worker.
        A project saved before results had files of their own keeps its ``<project>_results.gpkg`` as it is.
        """
        home = _local_file(project)
        if home is None:
            return []
        folder = result_files.results_folder_for(home)
        if not self._write_lock.acquire(blocking=False):
            return []
        try:
            with self._names_lock:
                used = set(self._reserved)
            used |= {where for _layer, where, _table in _ogr_layers(project)}
            used |= {where for _layer, where in _raster_files(project)}
            dropped = result_files.drop_unused(folder, used)
        finally:
            self._write_lock.release()
        return dropped + result_rasters.drop_unused(folder, used)  # the folder goes too once empty

    def _in_use(self, project: QgsProject, path: Path) -> bool:
        with self._names_lock:
            if path in self._reserved:
                return True
        return any(where == path for _layer, where, _table in _ogr_layers(project))


class SaveHooks:
    """Keep a project's results with it when QGIS saves it (main thread; the plugin shell owns one).

    QGIS gives a project its name (``setFileName``, emitting
    ``fileNameChanged``) before writing it on a first save or a Save As, so
    the results are copied beside the new file then, before the layers'
    sources are written; after every save, unused result tables are dropped
    and ``tell`` is given the results file when it was just made.
    """

    def __init__(self, project: QgsProject, store: ResultStore, tell: Callable[[Path], None]) -> None:
        self.project, self.store, self.tell = project, store, tell
        self._moved: Path | None = None
        project.fileNameChanged.connect(self._renamed)
        project.projectSaved.connect(self._saved)

    def disconnect(self) -> None:
        self.project.fileNameChanged.disconnect(self._renamed)
        self.project.projectSaved.disconnect(self._saved)

    def _renamed(self) -> None:
        from geogpt_qgis.tools import result_copies  # it imports this module

        try:
            result_copies.finish()  # results still being stored go with the others
            self._moved = self.store.relocate(self.project, self.project.fileName()) or self._moved
        except Exception as exc:  # noqa: BLE001 - a slot: QGIS's save must go on, the user is told
            log.warning("could not copy the result layers beside %s: %s", self.project.fileName(), exc)

    def _saved(self) -> None:
        try:
            self.store.clean_up(self.project)
        except Exception as exc:  # noqa: BLE001 - a slot: the save itself succeeded
            log.warning("could not drop unused result tables: %s", exc)
        moved, self._moved = self._moved, None
        if moved is not None:
            try:
                self.tell(moved)
            except Exception as exc:  # noqa: BLE001 - a slot: an exception here would abort QGIS
                log.warning("could not say where the result layers went: %s", exc)


# -- the tools' entry points -------------------------------------------------------
def is_temporary(layer: QgsMapLayer) -> bool:
    """A vector layer QGIS would lose on close: in memory, or a file in a temporary folder."""
    if not isinstance(layer, QgsVectorLayer):
        return False
    if layer.providerType() == "memory":
        return True
    if layer.providerType() != "ogr":
        return False
    from geogpt_qgis.tools.safety.algorithms import is_temporary_destination

    path = QgsProviderRegistry.instance().decodeUri("ogr", layer.source()).get("path") or ""
    return bool(path) and is_temporary_destination(path)  # "" alone would read as "a temporary output"


def stage_result(
    project: QgsProject, layer: QgsVectorLayer, base: str, reads: ToolArtifact = EMPTY
) -> tuple[ResultStore, StagedResult]:
    """The project's store and ``layer`` staged in it, its table named after ``base`` (main thread).

    ``reads``: what the call read to make the layer, for its provenance (``ResultStore.stage``).
    """
    store = result_store(project)
    return store, store.stage(project, layer, base, reads)


def finish_result(ctx: ToolContext, store: ResultStore, staged: StagedResult) -> str:
    """Write a staged result (here, on the worker) and add the stored layer to the project; returns its name."""
    try:
        # A file writer builds CRSs: on a long-lived thread, never a tool call's (see algorithm_thread).
        run_on_algorithm_thread(store.write, staged, ctx.cancel)
        return ctx.on_main(_add_staged, store, ctx.project, staged)
    except BaseException:
        store.discard(staged, drop=True)
        release(ctx, staged)
        raise


def keep_result_now(project: QgsProject, layer: QgsVectorLayer, base: str) -> str:
    """Store a small layer made on the main thread (a place) and add the stored layer: all steps here."""
    store, staged = stage_result(project, layer, base)
    store.write(staged)
    return _add_staged(store, project, staged)


def release(ctx: ToolContext, staged: StagedResult) -> None:
    """Let a staged temporary layer go on the main thread (a failed or stopped step)."""
    held = (staged.layer, staged.source)
    staged.layer = staged.source = None
    ctx.bridge.dispose(held)


def _add_staged(store: ResultStore, project: QgsProject, staged: StagedResult) -> str:
    return add_result_layer(project, store.open(staged), staged.name)


# -- one store per project ---------------------------------------------------------
# Keyed by the C++ object: Python wrappers of QgsProject.instance() come and go.
_stores: dict[int, ResultStore] = {}
_stores_lock = threading.Lock()


def _key(project: QgsProject) -> int:
    return int(sip.unwrapinstance(project))


def result_store(project: QgsProject) -> ResultStore:
    """The project's store; a default one (scratch in the QGIS profile) unless the plugin or CLI set one."""
    with _stores_lock:
        store = _stores.get(_key(project))
    if store is None:
        set_result_store(project, ResultStore(default_scratch_dir()), replace=False)
        with _stores_lock:
            store = _stores[_key(project)]
    return store


def set_result_store(project: QgsProject, store: ResultStore | None, replace: bool = True) -> None:
    """Use ``store`` for ``project`` (``None``: back to the default); forgotten when the project is deleted."""
    key = _key(project)
    with _stores_lock:
        if store is None:
            _stores.pop(key, None)
            return
        if key in _stores and not replace:
            return
        first = key not in _stores
        _stores[key] = store
    if first:
        project.destroyed.connect(lambda _obj=None, key=key: _forget(key))


def _forget(key: int) -> None:
    with _stores_lock:
        _stores.pop(key, None)


def default_scratch_dir() -> Path:
    """Where results of a project never saved wait: ``<profile>/geogpt_qgis/scratch``."""
    from geogpt_qgis.toolbelt.paths import profile_data_dir

    folder = profile_data_dir() / "scratch"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- helpers -------------------------------------------------------------------------
def copy_style(source: QgsMapLayer, target: QgsMapLayer) -> None:
    """Symbology, labels, field settings, metadata and custom properties of ``source`` onto ``target``."""
    document = QDomDocument("qgis")
    message = source.exportNamedStyle(document, QgsReadWriteContext(), _ALL_STYLE)
    if not message:
        target.importNamedStyle(document, _ALL_STYLE)
    target.setMetadata(source.metadata())
    for key in source.customPropertyKeys():
        target.setCustomProperty(key, source.customProperty(key))


def _uri(path: Path, table: str) -> str:
    return f"{path}|layername={table}"


def _fid_column(fields: QgsFields, source: QgsVectorLayerFeatureSource, cancel: CancelToken | None) -> str:
    """The table's FID column: ``fid``; a field of that name whose values can be ids is it (any thread).

    A GeoPackage layer shows its FID as a field, so every result of a result carries one.
    Renamed each time (``result_fid``, then ``result_result_fid`` a step later), the names
    grew across steps; a field of unique whole numbers is written as the ids instead
    (QGIS's writer takes a field named like the FID column as the feature's id).
    Only a field whose values are not ids (repeated, empty, not whole) makes another name.
    """
    names = {name.lower(): name for name in fields.names()}
    column = "fid"
    while column in names:
        if _holds_ids(fields, names[column], source, cancel):
            held: str = names[column]
            return held
        column = f"result_{column}"
    return column


def _holds_ids(fields: QgsFields, name: str, source: QgsVectorLayerFeatureSource, cancel: CancelToken | None) -> bool:
    """Whether field ``name`` holds whole numbers, each feature its own (NULL and reals are Python non-ints)."""
    request = QgsFeatureRequest()
    request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
    request.setSubsetOfAttributes([name], fields)
    seen: set[int] = set()
    for index, feature in enumerate(source.getFeatures(request)):
        if cancel is not None and index % BATCH == 0:
            cancel.raise_if_cancelled()
        value = feature[name]
        if not isinstance(value, int) or isinstance(value, bool) or value in seen:
            return False
        seen.add(value)
    return True


def _check_stored_count(layer: QgsVectorLayer, staged: StagedResult) -> None:
    """The stored layer reads every feature written (reloaded once if not); else ``ToolError``, never a short layer."""
    if not staged.written:
        return  # not written through this store (a test's or a caller's own table)
    for attempt in (1, 2):
        found = int(layer.featureCount())
        if found == staged.count:
            return
        log.warning("result %s: %d features written, %d read (attempt %d)", staged.table, staged.count, found, attempt)
        layer.reload()
    raise ToolError(
        f"the stored result {staged.table} in {staged.path} reads {found} features, but {staged.count} were "
        "written; nothing was added. Run the step again."
    )


def _local_file(project: QgsProject) -> Path | None:
    name = project.fileName()
    if not name or project.projectStorage() is not None:
        return None
    return Path(name)


def _raster_files(project: QgsProject) -> list[tuple[QgsRasterLayer, Path]]:
    """(layer, file) of every project raster layer that GDAL reads from a local file."""
    found = []
    registry = QgsProviderRegistry.instance()
    for layer in project.mapLayers().values():
        if not isinstance(layer, QgsRasterLayer) or layer.providerType() != "gdal":
            continue
        path = registry.decodeUri("gdal", layer.source()).get("path") or ""
        if path and Path(path).is_file():
            found.append((layer, Path(path)))
    return found


def _is_temporary_file(path: Path) -> bool:
    from geogpt_qgis.tools.safety.algorithms import is_temporary_destination

    return is_temporary_destination(str(path))


def _ogr_layers(project: QgsProject) -> list[tuple[QgsVectorLayer, Path, str]]:
    """(layer, file, table) of every project layer reading a GeoPackage table."""
    found = []
    registry = QgsProviderRegistry.instance()
    for layer in project.mapLayers().values():
        if not isinstance(layer, QgsVectorLayer) or layer.providerType() != "ogr":
            continue
        parts = registry.decodeUri("ogr", layer.source())
        if parts.get("path") and parts.get("layerName"):
            found.append((layer, Path(parts["path"]), str(parts["layerName"])))
    return found


def _repoint(layer: QgsMapLayer, source: str, provider: str, project: QgsProject) -> None:
    """Point ``layer`` at its copy, keeping its metadata (the provenance of a result).

    QGIS 3.40 and 3.44 reload a raster's metadata from the new source when its
    data source changes, which left a result saved under a new name without
    its provenance (tests/qgis/test_provenance.py).
    """
    metadata = layer.metadata()
    options = QgsDataProvider.ProviderOptions()
    options.transformContext = project.transformContext()
    layer.setDataSource(source, layer.name(), provider, options)
    layer.setMetadata(metadata)
