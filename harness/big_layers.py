"""Large layers for cancellation and sampling tests, written fast with OGR."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

# QGIS expressions that are slow per feature (a regular expression on a cast),
# so a full scan of BIG_COUNT features takes seconds.  The first matches a
# handful of features (the scan runs inside QGIS's C++ iterator between
# matches); the second matches every feature (control returns to Python often).
SLOW_EXPRESSION = "regexp_match(to_string(\"v\"), '^9+$')"
SLOW_EXPRESSION_MATCHING_ALL = 'regexp_match(to_string("v") || "kind", \'^[0-9]+[a-z]+$\')'
BIG_COUNT = 200_000


def _gpkg_point(x: float, y: float, srs_id: int) -> bytes:
    """A GeoPackage geometry blob: the 8-byte 'GP' header (no envelope) then little-endian WKB."""
    return b"GP\x00\x01" + struct.pack("<i", srs_id) + struct.pack("<BIdd", 1, 1, x, y)


def write_big_points(path: Path, count: int = BIG_COUNT) -> Path:
    """A GeoPackage layer ``big`` of ``count`` points with fields ``v`` (int) and ``kind`` (text).

    OGR creates the table and metadata; the rows go in through sqlite3, which
    is much faster than one OGR feature at a time.
    """
    from osgeo import ogr, osr

    if path.exists():
        return path
    ogr.UseExceptions()
    source = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    layer = source.CreateLayer("big", srs, ogr.wkbPoint, options=["SPATIAL_INDEX=NO", "FID=fid", "GEOMETRY_NAME=geom"])
    layer.CreateField(ogr.FieldDefn("v", ogr.OFTInteger))
    layer.CreateField(ogr.FieldDefn("kind", ogr.OFTString))
    source = None
    kinds = ("residential", "commercial", "industrial", "retail")
    rows = (
        (_gpkg_point(560_000 + (i % 1000) * 8.0, 6_200_000 + (i // 1000) * 8.0, 25832), i, kinds[(i * 7) % 10 % 4])
        for i in range(count)
    )
    with sqlite3.connect(path) as connection:
        connection.executemany("INSERT INTO big (geom, v, kind) VALUES (?, ?, ?)", rows)
    return path
