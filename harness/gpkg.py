"""Read the demo GeoPackage with sqlite3 and shapely: answers computed without QGIS."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from shapely import wkb
from shapely.geometry.base import BaseGeometry

_ENVELOPE_BYTES = {0: 0, 1: 32, 2: 48, 3: 48, 4: 64}


def geometry_from_gpkg(blob: bytes) -> BaseGeometry:
    """Decode a GeoPackage geometry blob (the 'GP' header, then WKB)."""
    if blob[:2] != b"GP":
        raise ValueError("not a GeoPackage geometry")
    flags = blob[3]
    envelope = _ENVELOPE_BYTES[(flags >> 1) & 0b111]
    return wkb.loads(blob[8 + envelope :])


def read_layer(gpkg: Path, table: str) -> list[tuple[int, dict[str, Any], BaseGeometry]]:
    """``(fid, attributes, geometry)`` for every row of ``table``."""
    with sqlite3.connect(gpkg) as db:
        cursor = db.execute(f'SELECT * FROM "{table}" ORDER BY fid')
        columns = [c[0] for c in cursor.description]
        rows = []
        for row in cursor:
            record = dict(zip(columns, row, strict=True))
            geometry = geometry_from_gpkg(record.pop("geom"))
            rows.append((record.pop("fid"), record, geometry))
    return rows
