"""Result GeoPackages as files: where they live, their names, copying and pruning them.

Each vector result is a GeoPackage of its own, ``<project>_results/<name>.gpkg``,
holding one table (named like the file when written), beside the project's
raster results (``result_rasters``).  One file per result, not one shared
file: QGIS opens GeoPackage layers read-only with ``NOLOCK=ON`` (GDAL >= 3.4.2),
a connection that takes no SQLite lock and so never learns that the file
changed under it.  A result written into a file whose earlier tables QGIS was
reading, or a table dropped from it, gave those readers torn views
("database disk image is malformed", features missing).  A result's file is
written before any layer opens it, never written again, and deleted whole
once no layer reads it.

Projects saved before keep their ``<project>_results.gpkg`` (``LEGACY_SUFFIX``):
their layers read it as they did, a Save As copies their tables into files of
their own, and it is never written or trimmed any more.

Qt-free (``sqlite3`` and GDAL's ``osgeo.ogr``), so the rules can be tested and
reasoned about without QGIS.  ``tools/result_store.py`` is the QGIS side.

Only tables whose GeoPackage description is ``MARK`` were written by the
store; nothing here ever deletes any other file, so a user's own GeoPackage
that happens to sit in the folder loses nothing.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from geogpt_qgis.core.gpkg_metadata import copy_table_metadata
from geogpt_qgis.core.sqlite_text import sqlite_query

MARK = "GeoGPT result"
EXTENSION = ".gpkg"
FOLDER_SUFFIX = "_results"
LEGACY_SUFFIX = "_results.gpkg"
SCRATCH_PREFIX = "results-"
SCRATCH_MAX_AGE_DAYS = 7.0
MAX_TABLE_CHARS = 60
_RESERVED = ("gpkg_", "rtree_", "sqlite_", "gpkgext_")
_SIDECARS = ("", "-wal", "-shm", "-journal")
_RESULT_EXTENSIONS = (EXTENSION, ".tif")  # a name is unique across both kinds of result in a folder
_PLAIN_TABLE = re.compile(r"[0-9a-z_]+")  # what table_name makes


def results_folder_for(project_file: str | Path) -> Path:
    """``/maps/town.qgz`` -> ``/maps/town_results``: the project's results, one file each, named after it."""
    path = Path(project_file)
    return path.with_name(f"{path.stem}{FOLDER_SUFFIX}")


def legacy_results_path_for(project_file: str | Path) -> Path:
    """``/maps/town.qgz`` -> ``/maps/town_results.gpkg``: where projects saved before kept every result."""
    path = Path(project_file)
    return path.with_name(f"{path.stem}{LEGACY_SUFFIX}")


def table_name(wanted: str, taken: Iterable[str]) -> str:
    """A GeoPackage table name for a layer called ``wanted``: plain, lower case, unique in ``taken``.

    SQLite compares table names without case, so uniqueness is checked that way.
    """
    base = re.sub(r"[^0-9a-z_]+", "_", wanted.lower()).strip("_")[:MAX_TABLE_CHARS] or "result"
    if base[0].isdigit() or base.startswith(_RESERVED):
        base = f"result_{base}"
    folded = {name.lower() for name in taken}
    name, number = base, 2
    while name in folded:
        name = f"{base}_{number}"
        number += 1
    return name


def file_name(wanted: str, folder: Path, reserved: Iterable[Path] = (), extension: str = EXTENSION) -> Path:
    """A free ``<name><extension>`` in ``folder`` for a layer called ``wanted``: plain, lower case, and unique
    among the folder's results of either kind and the names ``reserved`` there (files not written yet)."""
    taken = {p.stem for p in folder.iterdir() if p.suffix in _RESULT_EXTENSIONS} if folder.is_dir() else set()
    taken |= {p.stem for p in reserved if p.parent == folder}
    return folder / f"{table_name(wanted, taken)}{extension}"


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)


def tables(path: Path) -> set[str]:
    """Every table and view name in the file (none if the file does not exist yet)."""
    if not path.is_file():
        return set()
    with contextlib.closing(_connect(path)) as db:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def row_count(path: Path, table: str) -> int:
    """The rows of a table of ``path``, counted by SQLite itself (independently of QGIS and GDAL)."""
    if not _PLAIN_TABLE.fullmatch(table):
        raise ValueError(f"not a table name table_name makes: {table!r}")
    with contextlib.closing(_connect(path)) as db:
        (count,) = db.execute(sqlite_query("SELECT count(*) FROM {}", table)).fetchone()
    return int(count)


def result_tables(path: Path) -> set[str]:
    """The tables of ``path`` that the store wrote (marked in ``gpkg_contents``)."""
    return tables_of_contents(path, MARK)


def result_files_in(folder: Path) -> set[Path]:
    """The GeoPackages of ``folder`` that the store wrote (a table in each marked as a result)."""
    if not folder.is_dir():
        return set()
    return {path for path in folder.glob(f"*{EXTENSION}") if not path.name.startswith(".") and result_tables(path)}


def drop_unused(folder: Path, used: Iterable[Path]) -> list[str]:
    """Delete the store's GeoPackages in ``folder`` that are not in ``used``; returns their names.

    A whole file goes, never a table out of a file that QGIS may be reading.
    """
    return delete_unused(result_files_in(folder), used, remove_file)


def delete_unused(found: Iterable[Path], used: Iterable[Path], remove: Callable[[Path], None]) -> list[str]:
    """``remove`` each of the result files ``found`` that is not in ``used`` (vector or raster); their names."""
    keep = {resolved(path) for path in used}
    dropped = []
    for path in sorted(found):
        if resolved(path) not in keep:
            remove(path)
            dropped.append(path.name)
    return dropped


def copy_result(source: Path, table: str, target: Path) -> None:
    """Copy the result ``table`` of ``source`` into the new GeoPackage ``target``, under the same table name.

    A file holding that table alone is copied page by page (fast, R-tree and metadata included); a table of
    a shared file (a project saved before results had files of their own) is copied by OGR with its metadata.
    """
    if tables_of_contents(source) == {table}:
        copy_file(source, target)
    else:
        copy_tables(source, target, {table: table})


def tables_of_contents(path: Path, description: str | None = None) -> set[str]:
    """The data tables of a GeoPackage (its ``gpkg_contents``), ours or not; with ``description``, those so marked.

    None if the file does not exist yet, or is not a GeoPackage.
    """
    if not path.is_file():
        return set()
    query = "SELECT table_name FROM gpkg_contents"
    values: tuple[str, ...] = ()
    if description is not None:
        query, values = f"{query} WHERE description = ?", (description,)
    with contextlib.closing(_connect(path)) as db:
        try:
            rows = db.execute(query, values).fetchall()
        except sqlite3.DatabaseError:
            return set()  # not a GeoPackage: never ours
    return {row[0] for row in rows}


def copy_file(source: Path, target: Path) -> None:
    """A consistent copy of the whole GeoPackage, even while QGIS has it open (SQLite's backup API)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with (
        contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=10)) as src,
        contextlib.closing(sqlite3.connect(str(target))) as dst,
    ):
        src.backup(dst)


def copy_tables(source: Path, target: Path, names: dict[str, str]) -> None:
    """Copy tables ``{name in source: name in target}`` into an existing or new GeoPackage, marked as results.

    Their metadata (``gpkg_metadata``: a result's provenance) is copied with them.
    """
    from osgeo import ogr

    src = ogr.Open(str(source), update=0)
    if src is None:
        raise OSError(f"cannot open {source}")
    driver = ogr.GetDriverByName("GPKG")
    target.parent.mkdir(parents=True, exist_ok=True)
    dst = ogr.Open(str(target), update=1) if target.is_file() else driver.CreateDataSource(str(target))
    if dst is None:
        raise OSError(f"cannot write {target}")
    try:
        for old, new in names.items():
            layer = src.GetLayerByName(old)
            if layer is None:
                raise OSError(f"no table {old} in {source}")
            options = [f"DESCRIPTION={MARK}"]
            if layer.GetFIDColumn():
                options.append(f"FID={layer.GetFIDColumn()}")
            if dst.CopyLayer(layer, new, options) is None:
                raise OSError(f"could not copy {old} into {target}")
    finally:
        src = dst = None  # closes both files
    copy_table_metadata(source, target, names)  # OGR copies features only: the provenance goes along


def remove_file(path: Path) -> None:
    """Delete a GeoPackage and its SQLite side files; a file still held open elsewhere is left for later."""
    for suffix in _SIDECARS:
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()


def prune_scratch(folder: Path, max_age_days: float = SCRATCH_MAX_AGE_DAYS, keep: Path | None = None) -> list[Path]:
    """Remove the scratch results of sessions that never saved, once nobody has touched them for ``max_age_days``.

    A session's scratch results are a folder ``results-<time>-<id>/`` (one GeoPackage each); a single
    ``results-<time>-<id>.gpkg`` is a session's from before results had files of their own.
    """
    if not folder.is_dir():
        return []
    cutoff = time.time() - max_age_days * 86400
    removed = []
    for path in folder.glob(f"{SCRATCH_PREFIX}*"):
        if path == keep or not (path.is_dir() or path.suffix == EXTENSION):
            continue
        if _newest_change(path) < cutoff:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                remove_file(path)
            removed.append(path)
    return removed


def _newest_change(path: Path) -> float:
    """The latest modification time of a scratch file (its WAL too) or of anything in a scratch folder."""
    members = list(path.iterdir()) if path.is_dir() else [Path(f"{path}{suffix}") for suffix in _SIDECARS]
    times = [p.stat().st_mtime for p in [path, *members] if p.exists()]
    return max(times, default=0.0)


def resolved(path: Path) -> Path:
    """``path`` resolved, or as it is where it cannot be (a file gone meanwhile)."""
    try:
        return path.resolve()
    except OSError:
        return path
