"""A query's rows streamed into a new GeoPackage: PostgreSQL encodes each value, SQLite stores it (worker thread).

GDAL's PostgreSQL driver reads a result at about 2 s per million points, most
of the time a query layer takes.  Here the rows come through a binary server
cursor of the tool's own read-only session (the statement checked again in
that session first), PostgreSQL writes each geometry as a GeoPackage blob
(header and ISO WKB, so Z and M travel), and a second thread stores batches
with multi-row INSERTs while the next batch is fetched: about 0.65 s per
million points here.  GDAL still makes the empty GeoPackage (its metadata
tables, the SRS, the result mark), so the file is the one GDAL would write.

Only what is mapped exactly is streamed: plain numbers, text, booleans,
dates and times, JSON and UUIDs, and linear geometry types.  Anything else (an
array, an interval, a curve, an SRS GDAL cannot name) is copied by GDAL as
before (``layers.copy_result``).
"""

from __future__ import annotations

import itertools
import queue
import sqlite3
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.core.result_files import MARK
from geogpt_qgis.core.sqlite_text import insert_rows, sqlite_query
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.query import GeometryColumn, QueryResult
from geogpt_qgis.tools.postgis.sql_text import compose, embedded, ident, join, literal

if TYPE_CHECKING:
    from psycopg.sql import Composable

BATCH_ROWS = 20_000  # rows per fetch; one batch is stored while the next is fetched
MAX_PARAMETERS = 999  # bound values per INSERT (SQLite before 3.32 allows no more)
_QUEUED_BATCHES = 4
Batch = list[tuple[Any, ...]]  # rows as fetched

# PostgreSQL type oid -> (OGR field type name, OGR subtype name, how the value is sent)
_VALUE = "{}"
_DATE = "to_char({}, 'YYYY-MM-DD')"
_TIMESTAMP = "to_char({}, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS')"
_TIMESTAMPTZ = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
_TYPES: dict[int, tuple[str, str, str]] = {
    16: ("OFTInteger", "OFSTBoolean", _VALUE),  # bool
    21: ("OFTInteger", "OFSTInt16", _VALUE),  # int2
    23: ("OFTInteger", "OFSTNone", _VALUE),  # int4
    20: ("OFTInteger64", "OFSTNone", _VALUE),  # int8
    700: ("OFTReal", "OFSTFloat32", _VALUE),  # float4
    701: ("OFTReal", "OFSTNone", _VALUE),  # float8
    1700: ("OFTReal", "OFSTNone", "{}::float8"),  # numeric: a double, as GDAL stores it
    25: ("OFTString", "OFSTNone", _VALUE),  # text
    1043: ("OFTString", "OFSTNone", _VALUE),  # varchar
    1042: ("OFTString", "OFSTNone", _VALUE),  # bpchar
    19: ("OFTString", "OFSTNone", "{}::text"),  # name
    114: ("OFTString", "OFSTJSON", "{}::text"),  # json
    3802: ("OFTString", "OFSTJSON", "{}::text"),  # jsonb
    2950: ("OFTString", "OFSTUUID", "{}::text"),  # uuid
    1082: ("OFTDate", "OFSTNone", _DATE),
    1114: ("OFTDateTime", "OFSTNone", _TIMESTAMP),
    1184: ("OFTDateTime", "OFSTNone", _TIMESTAMPTZ),
}
# The linear geometry types, by the name PostGIS gives them, as OGR names them (curves are left to GDAL).
_LINEAR = {
    "POINT": "wkbPoint",
    "LINESTRING": "wkbLineString",
    "POLYGON": "wkbPolygon",
    "MULTIPOINT": "wkbMultiPoint",
    "MULTILINESTRING": "wkbMultiLineString",
    "MULTIPOLYGON": "wkbMultiPolygon",
    "GEOMETRYCOLLECTION": "wkbGeometryCollection",
}


_SET_EXTENT = "UPDATE gpkg_contents SET min_x = ?, min_y = ?, max_x = ?, max_y = ? WHERE table_name = ?"


@dataclass(frozen=True)
class Expected:
    """What the query pass counted: the rows, and their extent (``None`` without geometry)."""

    rows: int
    extent: tuple[float, float, float, float] | None


@dataclass(frozen=True)
class Field:
    """One attribute column: its name in the layer, its OGR type, and the SQL that sends its value."""

    name: str
    ogr_type: str
    subtype: str
    value: Composable


def stream_result(db: Database, result: QueryResult, path: Path, cancel: CancelToken) -> bool:
    """Stream ``result``'s rows into the new GeoPackage ``path`` (table ``path.stem``); ``False`` if GDAL must copy.

    ``db`` is the read-only session in which ``result.statement`` was just
    checked again.  On failure the file is left for the caller to delete.
    """
    source = compose("({}\n) AS r", embedded(result.layer_sql()))
    described = db.execute(compose("SELECT * FROM {} LIMIT 0", source)).description
    geometry = result.geometry
    fields = _fields(described, geometry.layer_column if geometry else None)
    geometry_type = _ogr_geometry_type(geometry.wkb_type) if geometry else 0
    if fields is None or geometry_type is None:
        return False
    columns = ([geometry.layer_column] if geometry else []) + [f.name for f in fields]  # the table's, after its key
    key = _key_name(columns)
    srs_id = _create(path, fields, key, columns, geometry_type, geometry)
    if srs_id is None:
        return False
    values = [f.value for f in fields]
    if geometry:
        values.insert(0, _blob_sql(ident("r", geometry.layer_column), srs_id))
    query = compose("SELECT {} FROM {}", join(", ", values), source)
    # The query pass's extent holds for these rows if they are as many (a capped result's are another cut).
    expected = None if result.capped else Expected(result.total, result.extent)
    writer = _stream(db, query, path, columns, cancel, expected)
    if geometry and not writer.extent_recorded:
        _record_extent(path, writer.stored)
    return True


def _fields(described: Any, geometry_column: str | None) -> list[Field] | None:
    """The attribute columns as OGR fields, or ``None`` if one has a type this path does not map exactly."""
    fields = []
    for column in described:
        if column.name == geometry_column:
            continue
        mapped = _TYPES.get(column.type_code)
        if mapped is None:
            return None
        ogr_type, subtype, template = mapped
        value = compose(template, ident("r", column.name))
        fields.append(Field(column.name, ogr_type, subtype, value))
    return fields


def _ogr_geometry_type(wkb_type: str) -> int | None:
    """``POINTZ`` -> OGR's code for a 3D point; ``None`` for curves (GDAL registers their extension)."""
    from osgeo import ogr

    base, suffix = wkb_type.upper(), ""
    for ending in ("ZM", "Z", "M"):
        if base.endswith(ending) and base[: -len(ending)] in _LINEAR:
            base, suffix = base[: -len(ending)], ending
            break
    if base not in _LINEAR:
        return None
    code: int = getattr(ogr, _LINEAR[base])
    if "Z" in suffix:
        code = ogr.GT_SetZ(code)
    if "M" in suffix:
        code = ogr.GT_SetM(code)
    return code


def _key_name(names: list[str]) -> str:
    """``fid``, unless the query has a column of that name (its values are kept as they are, never as keys)."""
    taken = {n.lower() for n in names}
    candidates = itertools.chain(["fid"], (f"fid_{n}" for n in itertools.count(2)))
    return next(k for k in candidates if k not in taken)


def _create(
    path: Path, fields: list[Field], key: str, columns: list[str], geometry_type: int, geometry: GeometryColumn | None
) -> int | None:
    """The empty GeoPackage, made by GDAL; the ``srs_id`` its geometries carry (0 without geometry), or ``None``."""
    from osgeo import ogr, osr

    options = ["SPATIAL_INDEX=NO", f"DESCRIPTION={MARK}", f"FID={key}"]
    if geometry:
        options.append(f"GEOMETRY_NAME={geometry.layer_column}")
    dataset: Any = None
    layer: Any = None
    try:  # GDAL raises only when exceptions are on (another plugin may turn them on)
        srs = None
        if geometry:
            srs = osr.SpatialReference()
            if srs.SetFromUserInput(f"EPSG:{geometry.srid}") != 0:
                return None  # an SRID GDAL cannot name: its own copy says why
        dataset = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
        if dataset is None:
            return None
        layer = dataset.CreateLayer(path.stem, srs, geometry_type if geometry else ogr.wkbNone, options)
        if layer is None:
            return None
        for field in fields:
            definition = ogr.FieldDefn(field.name, getattr(ogr, field.ogr_type))
            definition.SetSubType(getattr(ogr, field.subtype))
            if layer.CreateField(definition) != 0:
                return None
    except RuntimeError:
        return None
    finally:
        layer = dataset = None  # closes the file: nothing ever opens it for writing again but the writer
    db = sqlite3.connect(path)
    try:
        made = [row[1] for row in db.execute(sqlite_query("PRAGMA table_info({})", path.stem))]
        found = db.execute("SELECT srs_id FROM gpkg_geometry_columns WHERE table_name = ?", (path.stem,)).fetchone()
    finally:
        db.close()
    if made != [key, *columns]:
        return None  # a name GDAL changed: the rows would not fit, so GDAL copies them itself
    if not geometry:
        return 0
    return int(found[0]) if found else None


def _blob_sql(column: Composable, srs_id: int) -> Composable:
    """SQL giving each geometry as a GeoPackage blob: the header (little-endian, no envelope) and ISO WKB.

    An empty geometry's header says so; a NULL geometry stays NULL.
    """
    header = b"GP\x00\x01" + struct.pack("<i", srs_id)
    empty = b"GP\x00\x11" + struct.pack("<i", srs_id)
    return compose(
        "CASE WHEN ST_IsEmpty({c}) THEN {empty} ELSE {header} END || ST_AsBinary({c}, 'NDR')",
        c=column,
        empty=literal(empty),
        header=literal(header),
    )


def _stream(
    db: Database, query: Composable, path: Path, columns: list[str], cancel: CancelToken, expected: Expected | None
) -> _Writer:
    """Fetch batches here and store them on a second thread; the writer, done, says what it stored."""
    batches: queue.Queue[Batch | None] = queue.Queue(_QUEUED_BATCHES)
    writer = _Writer(path, columns, batches, expected)
    thread = threading.Thread(target=writer.run, name="geogpt-query-copy", daemon=True)
    thread.start()
    try:
        with db.server_cursor(query, BATCH_ROWS) as cursor:
            while writer.error is None:
                cancel.raise_if_cancelled()
                rows = db.fetch(cursor, BATCH_ROWS)
                if not rows:
                    break
                _put(batches, rows, thread)
    finally:
        _put(batches, None, thread)
        thread.join()
    if writer.error is not None:
        raise writer.error
    if cancel.cancelled:
        raise RunCancelled("stopped by the user")
    return writer


def _put(batches: queue.Queue[Batch | None], item: Batch | None, thread: threading.Thread) -> None:
    """Queue ``item`` unless the writer has ended (it never reads again then)."""
    while thread.is_alive():
        try:
            batches.put(item, timeout=0.1)
            return
        except queue.Full:
            continue


class _Writer:
    """Stores each queued batch with multi-row INSERTs into the one table of a new file (its own thread)."""

    def __init__(
        self, path: Path, columns: list[str], batches: queue.Queue[Batch | None], expected: Expected | None
    ) -> None:
        self.path = path
        self.columns = columns
        self.batches = batches
        self.expected = expected
        self.stored = 0
        self.extent_recorded = False
        self.error: BaseException | None = None
        self._ended = False  # the end (None) was taken from the queue: nothing more comes

    def run(self) -> None:
        try:
            self._store()
        except BaseException as exc:  # noqa: BLE001 - handed to the fetching thread, which raises it
            self.error = exc
            # Let the fetching thread finish (it stops at its next batch); after the end nothing more comes, and
            # waiting then (a failed final commit) would hang both threads.
            while not self._ended and self._next() is not None:
                pass

    def _next(self) -> Batch | None:
        rows = self.batches.get()
        self._ended = rows is None
        return rows

    def _store(self) -> None:
        table = self.path.stem
        per_statement = max(1, MAX_PARAMETERS // len(self.columns))
        db = sqlite3.connect(self.path)
        try:
            db.execute("PRAGMA synchronous = OFF")  # a new file no one reads yet: a crash leaves it to be deleted
            db.execute("PRAGMA journal_mode = OFF")
            counters = db.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (table,)
            ).fetchall()
            for name, _sql in counters:  # GDAL's feature-count triggers: one UPDATE per row otherwise
                db.execute(sqlite_query("DROP TRIGGER {}", name))
            full = insert_rows(table, self.columns, per_statement)
            while (rows := self._next()) is not None:
                for start in range(0, len(rows), per_statement):
                    part = rows[start : start + per_statement]
                    statement = full if len(part) == per_statement else insert_rows(table, self.columns, len(part))
                    db.execute(statement, list(itertools.chain.from_iterable(part)))
                self.stored += len(rows)
            db.execute("UPDATE gpkg_ogr_contents SET feature_count = ? WHERE table_name = ?", (self.stored, table))
            known = self.expected
            if known is not None and known.extent is not None and known.rows == self.stored:
                db.execute(_SET_EXTENT, (*known.extent, table))
                self.extent_recorded = True
            for _name, sql in counters:
                db.execute(sql)
            db.commit()
        finally:
            db.close()


def _record_extent(path: Path, stored: int) -> None:
    """Record the extent of the stored geometries in ``gpkg_contents`` (read from them by GDAL)."""
    from osgeo import ogr

    dataset = ogr.Open(str(path))
    layer = None if dataset is None else dataset.GetLayer(0)
    if layer is None or layer.GetGeomType() == ogr.wkbNone or stored == 0:
        return
    xmin, xmax, ymin, ymax = layer.GetExtent(force=1)
    layer = dataset = None
    db = sqlite3.connect(path)
    try:
        db.execute(_SET_EXTENT, (xmin, ymin, xmax, ymax, path.stem))
        db.commit()
    finally:
        db.close()
