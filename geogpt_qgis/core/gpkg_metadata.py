"""A results table's metadata in its GeoPackage: kept when the table is copied, and its description kept as is.

The store marks its tables by their ``gpkg_contents.description``
(``result_files.MARK``).  A layer's metadata lives in the GeoPackage metadata
extension (``gpkg_metadata`` and ``gpkg_metadata_reference``), where a fresh
layer on the table reads it back; handled here with plain SQLite, bound values:

- ``add_table_document`` writes one document for a table as QGIS's own writer
  does (tools/provenance.py says why not through QGIS), and leaves the
  table's description, the store's mark, alone;
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
_EXTENSION_URI = "http://www.geopackage.org/spec120/#extension_metadata"
# As the GeoPackage standard (1.2, annex F.8) defines them.
_EXTENSIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS gpkg_extensions (table_name TEXT, column_name TEXT, extension_name TEXT NOT NULL, "
    "definition TEXT NOT NULL, scope TEXT NOT NULL, CONSTRAINT ge_tce UNIQUE (table_name, column_name, extension_name))"
)
_METADATA_DDL = (
    "CREATE TABLE IF NOT EXISTS gpkg_metadata (id INTEGER CONSTRAINT m_pk PRIMARY KEY ASC NOT NULL, "
    "md_scope TEXT NOT NULL DEFAULT 'dataset', md_standard_uri TEXT NOT NULL, "
    "mime_type TEXT NOT NULL DEFAULT 'text/xml', metadata TEXT NOT NULL DEFAULT '')"
)
_REFERENCES_DDL = (
    "CREATE TABLE IF NOT EXISTS gpkg_metadata_reference (reference_scope TEXT NOT NULL, table_name TEXT, "
    "column_name TEXT, row_id_value INTEGER, "
    "timestamp DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')), md_file_id INTEGER NOT NULL, "
    "md_parent_id INTEGER, CONSTRAINT crmr_mfi_fk FOREIGN KEY (md_file_id) REFERENCES gpkg_metadata(id), "
    "CONSTRAINT crmr_mpi_fk FOREIGN KEY (md_parent_id) REFERENCES gpkg_metadata(id))"
)


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), timeout=_TIMEOUT_S)


def add_table_document(path: Path, table: str, standard_uri: str, document: str) -> None:
    """Add ``document`` (XML) as metadata of ``table``, making the metadata tables and their extension if needed."""
    with contextlib.closing(_open(path)) as db, db:
        _ensure_extension(db)
        _insert_document(db, table, ("dataset", standard_uri, "text/xml", document))


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

    The metadata tables are made in ``target`` (and registered as the
    GeoPackage extension) when it has none yet.
    """
    documents = {new: table_metadata(source, old) for old, new in names.items()}
    if not any(documents.values()):
        return 0
    with contextlib.closing(_open(target)) as db, db:
        _ensure_extension(db)
        for table, items in documents.items():
            for item in items:
                _insert_document(db, table, item)
    return sum(len(items) for items in documents.values())


def _ensure_extension(db: sqlite3.Connection) -> None:
    """The metadata tables as the standard defines them, registered once as the GeoPackage extension."""
    db.execute(_EXTENSIONS_DDL)
    db.execute(_METADATA_DDL)
    db.execute(_REFERENCES_DDL)
    registered = {
        row[0] for row in db.execute("SELECT table_name FROM gpkg_extensions WHERE extension_name = ?", (METADATA,))
    }
    db.executemany(
        "INSERT INTO gpkg_extensions VALUES (?, NULL, ?, ?, 'read-write')",
        [(name, METADATA, _EXTENSION_URI) for name in (METADATA, REFERENCES) if name not in registered],
    )


def _insert_document(db: sqlite3.Connection, table: str, item: tuple[str, str, str, str]) -> None:
    """One document (scope, standard URI, MIME type, text) and its reference to ``table``."""
    cursor = db.execute(
        "INSERT INTO gpkg_metadata (md_scope, md_standard_uri, mime_type, metadata) VALUES (?, ?, ?, ?)", item
    )
    db.execute(
        "INSERT INTO gpkg_metadata_reference (reference_scope, table_name, md_file_id) VALUES ('table', ?, ?)",
        (table, cursor.lastrowid),
    )


def _has_extension(db: sqlite3.Connection) -> bool:
    found = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", (METADATA, REFERENCES)
    ).fetchone()
    return bool(found and found[0] == 2)
