"""The results GeoPackage as a file: where it lives, its table names, copying and pruning it.

Qt-free (``sqlite3`` and GDAL's ``osgeo.ogr``), so the rules can be tested and
reasoned about without QGIS.  ``tools/result_store.py`` is the QGIS side.

Only tables whose GeoPackage description is ``MARK`` were written by the
store; nothing here ever drops any other table, so a user's own GeoPackage
that happens to carry the same name loses nothing.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from geogpt_qgis.core.gpkg_metadata import copy_table_metadata
from geogpt_qgis.core.sqlite_text import sqlite_query

MARK = "GeoGPT result"
SUFFIX = "_results.gpkg"
SCRATCH_PREFIX = "results-"
SCRATCH_MAX_AGE_DAYS = 7.0
MAX_TABLE_CHARS = 60
_RESERVED = ("gpkg_", "rtree_", "sqlite_", "gpkgext_")
_SIDECARS = ("", "-wal", "-shm", "-journal")
_PLAIN_TABLE = re.compile(r"[0-9a-z_]+")  # what table_name makes


def results_path_for(project_file: str | Path) -> Path:
    """``/maps/town.qgz`` -> ``/maps/town_results.gpkg``: one file per project, named after it."""
    path = Path(project_file)
    return path.with_name(f"{path.stem}{SUFFIX}")


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
    if not path.is_file():
        return set()
    with contextlib.closing(_connect(path)) as db:
        try:
            rows = db.execute("SELECT table_name FROM gpkg_contents WHERE description = ?", (MARK,)).fetchall()
        except sqlite3.DatabaseError:
            return set()  # not a GeoPackage: never ours
    return {row[0] for row in rows}


def drop_tables(path: Path, names: Iterable[str]) -> list[str]:
    """Drop the named tables the store wrote (GDAL removes their GeoPackage metadata and index too).

    Tables not marked as results are left alone.  Returns what was dropped.
    """
    from osgeo import ogr

    wanted = set(names) & result_tables(path)
    if not wanted:
        return []
    dataset = ogr.Open(str(path), update=1)
    if dataset is None:
        return []
    dropped = []
    try:
        for index in reversed(range(dataset.GetLayerCount())):
            name = dataset.GetLayer(index).GetName()
            if name in wanted and dataset.DeleteLayer(index) == ogr.OGRERR_NONE:
                dropped.append(name)
    finally:
        dataset = None  # closes the file
    if dropped:
        _vacuum(path)
    return sorted(dropped)


def _vacuum(path: Path) -> None:
    """Give the dropped tables' pages back to the file system (skipped if QGIS is reading it right now)."""
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(str(path), timeout=1)) as db:
        db.execute("VACUUM")


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
    """Remove scratch files of sessions that never saved, once nobody has touched them for ``max_age_days``."""
    if not folder.is_dir():
        return []
    cutoff = time.time() - max_age_days * 86400
    removed = []
    for path in folder.glob(f"{SCRATCH_PREFIX}*.gpkg"):
        if path == keep:
            continue
        newest = max((p.stat().st_mtime for p in (path, Path(f"{path}-wal")) if p.exists()), default=0.0)
        if newest < cutoff:
            remove_file(path)
            removed.append(path)
    return removed
