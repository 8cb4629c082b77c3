"""Traps in counting and aggregation: points on shared boundaries, holes, overlapping zones, means of rates,
empty results from a layer without a CRS. Right answers from shapely (``covers``: a boundary point counts).
"""

from __future__ import annotations

import re

from osgeo import ogr
from shapely.geometry import Point

from tests.traps.data import shape, square, write_vector
from tests.traps.harness import Figure, Session, trap

X0, Y0 = 500000, 5500000


def _count_points(
    s: Session, points: list[Point], zones: list[str], zone_epsg: int = 25832, point_epsg: int | None = 25832
) -> float | None:
    write_vector(s.tmp / "zones.gpkg", zone_epsg, zones, [{"zone": f"z{i}"} for i in range(len(zones))], ogr.wkbPolygon)
    write_vector(
        s.tmp / "trees.gpkg", point_epsg, [p.wkt for p in points], [{"n": i} for i in range(len(points))], ogr.wkbPoint
    )
    s.load(s.tmp / "zones.gpkg", name="zones")
    s.load(s.tmp / "trees.gpkg", name="trees")
    s.run("native:countpointsinpolygon", output_name="counts", POLYGONS="zones", POINTS="trees", FIELD="NUMPOINTS")
    return s.total("counts", "NUMPOINTS")


@trap("boundary predicates", warns=r"boundar")
def test_points_on_a_shared_boundary(s: Session, defect: bool) -> Figure:
    """Twelve wells in two zones, four of them exactly on the zones' shared edge: all twelve are in the zones."""
    zones = [square(X0, Y0, 100), square(X0 + 100, Y0, 100)]
    inside = [Point(X0 + 10 + 25 * (i % 8), Y0 + 30 + 30 * (i // 8)) for i in range(8)]
    edge = [Point(X0 + 100 + (0 if defect else 1), Y0 + 20 * k) for k in (1, 2, 3, 4)]
    points = inside + edge
    assert sum(1 for p in points if any(shape(z).covers(p) for z in zones)) == 12
    return Figure(_count_points(s, points, zones), 12, abs=0.5)


@trap("holes", warns=r"\bhole")
def test_points_in_a_zones_hole(s: Session, defect: bool) -> Figure:
    """Ten trees in a park with a pond cut out: the three in the pond are not in the park."""
    park = shape(square(X0, Y0, 300))
    if defect:
        park = park.difference(shape(square(X0 + 100, Y0 + 100, 100)))
    points = [Point(X0 + 20 + 30 * i, Y0 + 50) for i in range(7)] + [
        Point(X0 + 150, Y0 + 120 + 20 * k) for k in range(3)
    ]
    expected = sum(1 for p in points if park.covers(p))
    return Figure(_count_points(s, points, [park.wkt]), expected, abs=0.5)


@trap("overlaps", warns=r"overlap")
def test_trees_in_overlapping_zones(s: Session, defect: bool) -> Figure:
    """Ten trees in two zones that overlap, four in the overlap: ten trees are in the zones, not fourteen."""
    a = square(X0, Y0, 200)
    b = square(X0 + (100 if defect else 200), Y0, 200)
    points = [Point(X0 + 10 + 19 * i, Y0 + 100) for i in range(10)]
    union = shape(a).union(shape(b))
    expected = sum(1 for p in points if union.covers(p))
    return Figure(_count_points(s, points, [a, b]), expected, abs=0.5)


@trap(
    "empty results",
    warns=r"no CRS|without (a |any )?CRS|unknown CRS|CRS (is )?(not set|unknown|missing)|undefined",
)
def test_points_without_a_crs_counted_in_zones(s: Session, defect: bool) -> Figure:
    """Wells stored without a CRS (coordinates in UTM 32N), counted in zones in EPSG:4326."""
    from tests.traps.data import to_lonlat

    zone = to_lonlat(shape(square(X0, Y0, 300)), 25832)
    points = [Point(X0 + 30 + 50 * i, Y0 + 100) for i in range(5)]
    return Figure(_count_points(s, points, [zone.wkt], 4326, None if defect else 25832), 5, abs=0.5)


def _mean_of(s: Session, layer: str, field: str) -> float | None:
    text = s.run("qgis:basicstatisticsforfields", INPUT_LAYER=layer, FIELD_NAME=field)
    found = re.search(r"\bMEAN[=:]\s*(-?[\d.,e+-]+)", text)
    return float(found.group(1).replace(",", "")) if found else None


@trap("weighting", warns=r"weight")
def test_rate_of_a_region_from_district_rates(s: Session, defect: bool) -> Figure:
    """The region's unemployment rate from its districts' rates: weighted by population, 0.70 %, not 13.67 %."""
    rates = [40.0, 0.5, 0.5]
    people = [100, 10000, 10000] if defect else [5000, 5000, 5000]
    zones = [square(X0 + 100 * i, Y0, 100) for i in range(3)]
    rows = [
        {"name": f"d{i}", "rate_pct": r, "population": p} for i, (r, p) in enumerate(zip(rates, people, strict=True))
    ]
    write_vector(s.tmp / "districts.gpkg", 25832, zones, rows, ogr.wkbPolygon)
    s.load(s.tmp / "districts.gpkg", name="districts")
    expected = sum(r * p for r, p in zip(rates, people, strict=True)) / sum(people)
    return Figure(_mean_of(s, "districts", "rate_pct"), expected, rel=1e-3)
