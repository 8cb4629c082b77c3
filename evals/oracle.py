"""Expected results computed without the plugin: the demo GeoPackage read with sqlite3 and shapely."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

from shapely.geometry.base import BaseGeometry
from shapely.ops import unary_union

from harness.gpkg import read_layer


class Oracle:
    """The demo town as plain Python: rows of (attributes, geometry) per layer."""

    def __init__(self, gpkg: Path) -> None:
        self.gpkg = gpkg

    @functools.cache  # noqa: B019 - one oracle per run; the cache lives as long as it
    def rows(self, layer: str) -> list[tuple[dict[str, Any], BaseGeometry]]:
        return [(attrs, geom) for _, attrs, geom in read_layer(self.gpkg, layer)]

    def union(self, layer: str) -> BaseGeometry:
        return unary_union([g for _, g in self.rows(layer)])

    def layer_names(self) -> list[str]:
        with sqlite3.connect(self.gpkg) as db:
            return [name for (name,) in db.execute("SELECT table_name FROM gpkg_contents ORDER BY table_name")]

    def fields(self, layer: str) -> list[str]:
        with sqlite3.connect(self.gpkg) as db:
            return [row[1] for row in db.execute(f'PRAGMA table_info("{layer}")') if row[1] not in ("fid", "geom")]

    def epsg(self, layer: str) -> int:
        with sqlite3.connect(self.gpkg) as db:
            (srs,) = db.execute("SELECT srs_id FROM gpkg_geometry_columns WHERE table_name = ?", (layer,)).fetchone()
        return int(srs)

    def district(self, name: str) -> BaseGeometry:
        return next(g for a, g in self.rows("districts") if a["name"] == name)

    def density(self) -> dict[str, float]:
        """People per km² of each district, to three decimals."""
        return {a["name"]: round(a["population"] / (g.area / 1e6), 3) for a, g in self.rows("districts")}

    def count_per_district(self, points: list[BaseGeometry]) -> dict[str, int]:
        """How many of ``points`` each district's polygon intersects (as QGIS's count points in polygon)."""
        return {a["name"]: sum(poly.intersects(p) for p in points) for a, poly in self.rows("districts")}
