"""A results table's metadata in its GeoPackage: kept when the table is copied, and its description kept as is.

The store marks its tables by their ``gpkg_contents.description``
(``result_files.MARK``), and QGIS writes a layer's metadata into the
GeoPackage metadata extension (``gpkg_metadata`` and
``gpkg_metadata_reference``), where a fresh layer on the table reads it back.
Two things get in the way, both handled here with plain SQLite:

- QGIS's writer (through OGR) also sets the table's description to the
  abstract, which would unmark the table as a result: ``description`` and
  ``set_description`` read it before and put it back after;
- OGR's ``CopyLayer`` (``result_files.copy_tables``, used when results move
  beside a project saved under a new name) copies features, not metadata:
  ``copy_table_metadata`` copies the rows that refer to each copied table.

Qt-free; any thread (SQLite locks the file for the few rows written).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

METADATA = "gpkg_metadata"
REFERENCES = "gpkg_metadata_reference"
_TIMEOUT_S = 10.0


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), timeout=_TIMEOUT_S)


def description(path: Path, table: str) -> str | None:
    """The table's ``gpkg_contents.description`` (``None``: no such table, or not a GeoPackage)."""
    if not path.is_file():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=_TIMEOUT_S)) as db:
        try:
            row = db.execute("SELECT description FROM gpkg_contents WHERE table_name = ?", (table,)).fetchone()
        except sqlite3.DatabaseError:
            return None
    return None if row is None else str(row[0] or "")


def set_description(path: Path, table: str, text: str) -> None:
    """Set the table's ``gpkg_contents.description`` back to ``text``."""
    with contextlib.closing(_open(path)) as db, db:
        db.execute("UPDATE gpkg_contents SET description = ? WHERE table_name = ?", (text, table))


def table_metadata(path: Path, table: str) -> list[tuple[str, str, str, str]]:
    """The metadata documents that refer to ``table``: (scope, standard URI, MIME type, document), oldest first."""
    if not path.is_file():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=_TIMEOUT_S)) as db:
        if not _has_extension(db):
            return []
        rows = db.execute(
            "SELECT m.md_scope, m.md_standard_uri, m.mime_type, m.metadata FROM gpkg_metadata m "
            "JOIN gpkg_metadata_reference r ON r.md_file_id = m.id "
            "WHERE r.table_name = ? AND r.reference_scope = 'table' "
            "ORDER BY m.id",
            (table,),
        ).fetchall()
    return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]


def copy_table_metadata(source: Path, target: Path, names: dict[str, str]) -> int:
    """Copy the table-level metadata of ``{table in source: table in target}`` into ``target``; returns how many.

    The metadata tables are made in ``target`` as ``source`` defines them
    (and registered as the GeoPackage extension) when it has none yet.
    """
    documents = {new: table_metadata(source, old) for old, new in names.items()}
    if not any(documents.values()):
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=_TIMEOUT_S)) as src:
        schema = src.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", (METADATA, REFERENCES)
        ).fetchall()
        extensions = src.execute(
            "SELECT table_name, column_name, extension_name, definition, scope FROM gpkg_extensions "
            "WHERE table_name IN (?, ?)",
            (METADATA, REFERENCES),
        ).fetchall()
    copied = 0
    with contextlib.closing(_open(target)) as db, db:
        present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for name, sql in sorted(schema, key=lambda row: row[0] != METADATA):  # gpkg_metadata first: referenced
            if name not in present:
                db.execute(sql)
        registered = set(db.execute("SELECT table_name, extension_name FROM gpkg_extensions").fetchall())
        db.executemany(
            "INSERT INTO gpkg_extensions VALUES (?, ?, ?, ?, ?)",
            [row for row in extensions if (row[0], row[2]) not in registered],
        )
        for table, items in documents.items():
            for scope, standard, mime, document in items:
                cursor = db.execute(
                    "INSERT INTO gpkg_metadata (md_scope, md_standard_uri, mime_type, metadata) VALUES (?, ?, ?, ?)",
                    (scope, standard, mime, document),
                )
                db.execute(
                    "INSERT INTO gpkg_metadata_reference (reference_scope, table_name, md_file_id) "
                    "VALUES ('table', ?, ?)",
                    (table, cursor.lastrowid),
                )
                copied += 1
    return copied


def _has_extension(db: sqlite3.Connection) -> bool:
    found = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", (METADATA, REFERENCES)
    ).fetchone()
    return bool(found and found[0] == 2)
