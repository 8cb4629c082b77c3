"""A polygon shapefile written byte by byte: rings exactly as given (OGR would re-wind them on writing)."""

from __future__ import annotations

import struct
from pathlib import Path

from tests.traps.data import srs

Ring = list[tuple[float, float]]


def write_polygon_shapefile(path: Path, polygons: list[list[Ring]], epsg: int) -> Path:
    """``.shp``, ``.shx``, ``.dbf`` (one ``id`` field) and ``.prj``; each polygon a list of rings, wound as given."""
    records = []
    for rings in polygons:
        points = [p for ring in rings for p in ring]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        parts, start = [], 0
        for ring in rings:
            parts.append(start)
            start += len(ring)
        content = struct.pack("<i4d2i", 5, min(xs), min(ys), max(xs), max(ys), len(rings), len(points))
        content += struct.pack(f"<{len(parts)}i", *parts)
        content += b"".join(struct.pack("<2d", x, y) for x, y in points)
        records.append((content, (min(xs), min(ys), max(xs), max(ys))))
    box = (
        min(r[1][0] for r in records),
        min(r[1][1] for r in records),
        max(r[1][2] for r in records),
        max(r[1][3] for r in records),
    )

    def header(length_bytes: int) -> bytes:
        return struct.pack(">7i", 9994, 0, 0, 0, 0, 0, length_bytes // 2) + struct.pack(
            "<2i8d", 1000, 5, *box, 0, 0, 0, 0
        )

    shp, shx = b"", b""
    offset = 100
    for number, (content, _) in enumerate(records, start=1):
        shx += struct.pack(">2i", offset // 2, len(content) // 2)
        shp += struct.pack(">2i", number, len(content) // 2) + content
        offset += 8 + len(content)
    path.write_bytes(header(100 + len(shp)) + shp)
    path.with_suffix(".shx").write_bytes(header(100 + len(shx)) + shx)
    field = b"id".ljust(11, b"\0") + b"N" + b"\0" * 4 + bytes([10, 0]) + b"\0" * 14
    dbf = struct.pack("<B3BIHH20x", 3, 126, 1, 1, len(records), 32 + 32 + 1, 1 + 10) + field + b"\r"
    dbf += b"".join(b" " + str(i).rjust(10).encode() for i in range(1, len(records) + 1)) + b"\x1a"
    path.with_suffix(".dbf").write_bytes(dbf)
    path.with_suffix(".prj").write_text(srs(epsg).ExportToWkt(["FORMAT=WKT1_ESRI"]), encoding="ascii")
    return path
