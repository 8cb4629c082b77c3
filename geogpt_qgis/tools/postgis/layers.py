"""A query's result as a layer that can never run SQL again: its rows copied once, read-only, into a GeoPackage.

A layer whose source is the query itself would be read by QGIS's postgres
provider on its own connection, over and over (counting, extents, every
redraw), outside any read-only transaction: QGIS 3.22 passes no libpq
``options`` through a layer's URI, so that connection cannot be made
read-only.  So the rows are copied exactly once, in a session that is
read-only and time-limited, and the layer reads the GeoPackage: read-only by
construction, whatever the query calls.  The rows are streamed
(``streamed_copy``: the tool's own session, about three times faster) when
every column has an exact streamed form; otherwise GDAL's PostgreSQL driver
copies them on a connection opened with ``default_transaction_read_only=on``.
The GeoPackage is one of the project's result files (``tools.result_store``,
its table named after the file and marked as a result), so the layer survives
saving like any other result.
"""

from __future__ import annotations

from pathlib import Path

from qgis.core import QgsVectorLayer

from geogpt_qgis.core.cancel import CancelToken, RunCancelled
from geogpt_qgis.core.result_files import MARK
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layer_errors import not_opened_message
from geogpt_qgis.tools.postgis.backends import application_name
from geogpt_qgis.tools.postgis.connections import SavedConnection
from geogpt_qgis.tools.postgis.database import Database
from geogpt_qgis.tools.postgis.query import QueryResult
from geogpt_qgis.tools.postgis.streamed_copy import stream_result
from geogpt_qgis.tools.thread_guard import vector_layer


def read_only_conninfo(conninfo: str, timeout_ms: int) -> str:
    """``conninfo`` plus session options that make every transaction read-only and time-limited."""
    options = (
        f"-c default_transaction_read_only=on -c statement_timeout={int(timeout_ms)} -c standard_conforming_strings=on"
    )
    return f"{conninfo} options='{options}' application_name='{application_name()}'"


def copy_result(
    connection: SavedConnection, result: QueryResult, path: Path, cancel: CancelToken, timeout_seconds: float
) -> Path:
    """Copy ``result``'s rows into the new GeoPackage ``path``, table ``path.stem`` (worker thread); returns it.

    Whatever built ``result``, its statement is checked again first (one plain
    read, no function acting outside the query): GDAL sends the copy query
    through the simple protocol, so only a statement PostgreSQL's grammar
    reads as one query is ever embedded in it.
    """
    from osgeo import gdal

    with Database(connection, cancel, timeout_seconds) as db:
        db.check_read(result.statement)
        try:
            if stream_result(db, result, path, cancel):
                return path
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        path.unlink(missing_ok=True)  # a type only GDAL maps: it copies instead
    timeout_ms = max(1, int(timeout_seconds * 1000))
    options: dict = {
        "format": "GPKG",
        "SQLStatement": result.layer_sql(),
        "layerName": path.stem,
        "callback": lambda *_args: 0 if cancel.cancelled else 1,
        # Building the R-tree takes three quarters of the copy (11 s of 14 for a million points); without it
        # QGIS scans the file per redraw, still far cheaper than re-running the query as a query layer did.
        "layerCreationOptions": ["SPATIAL_INDEX=NO", f"DESCRIPTION={MARK}"],  # a result: kept, moved, cleaned
    }
    if result.geometry:
        options.update(geometryType=result.geometry.wkb_type, dstSRS=f"EPSG:{result.geometry.srid}", reproject=False)
    else:
        options.update(geometryType="NONE")
    source = "PG:" + read_only_conninfo(connection.conninfo, timeout_ms)
    handler = _Errors()
    gdal.PushErrorHandler(handler)
    try:
        copied = gdal.VectorTranslate(str(path), source, **options)
        ok = copied is not None
        copied = None  # closes and flushes the file
    except RuntimeError as exc:  # GDAL raises when exceptions are on (another plugin may turn them on)
        ok = False
        handler.messages.append(str(exc))
    finally:
        gdal.PopErrorHandler()
    if cancel.cancelled:
        path.unlink(missing_ok=True)
        raise RunCancelled("stopped by the user")
    if not ok or not path.is_file():
        path.unlink(missing_ok=True)
        detail = handler.messages[0] if handler.messages else "unknown error"  # PostgreSQL's own error comes first
        raise ToolError(f"copying the result into a layer failed: {_scrub(detail, connection.conninfo)}")
    return path


class _Errors:
    """Collects GDAL's messages instead of printing them."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __call__(self, _level: int, _number: int, message: str) -> None:
        self.messages.append(" ".join(message.split()))


def _scrub(message: str, conninfo: str) -> str:
    """Never show the connection string (it may carry a password)."""
    return message.replace(conninfo, "<connection>")


def result_layer(path: Path, name: str) -> QgsVectorLayer:
    """The GeoPackage copy as a layer (main thread)."""
    layer = vector_layer(f"{path}|layername={path.stem}", name, "ogr")
    if not layer.isValid():
        message = not_opened_message("the copied result", layer)
        del layer  # freed here, on the main thread (a traceback would free it on whichever thread drops it)
        raise ToolError(message)
    return layer
