"""What in a layer's geometries changes the figures measured on it, found with shapely (GEOS) from WKB.

A figure computed on invalid geometry looks right and is not: a self-crossing ("bowtie") parcel's
shoelace area is not its area; a hole stored as a second shell (a shapefile ring wound the wrong way)
is added instead of cut out; overlapping parts or zones are counted twice; a LineStringZ's length is
measured in 2D; one polygon among lines makes algorithms that write one type fail. ``inspect`` finds
these in a bounded list of geometries and ``notes`` says them in a line each, with what they change
(the area before and after making the geometries valid, the 3D length beside the 2D one, counts per type).

Qt-free: the caller reads WKB (``tools/geometry_checks.py`` on a worker thread) and caps how many.
Areas and lengths here are planar in the layer's CRS units: they size a difference, they are not figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MAX_OVERLAP_PAIRS = 5_000  # candidate pairs examined for overlapping polygons (bounded cost)
RELATIVE_CHANGE = 1e-6  # a change smaller than this share of the figure is not worth a word


@dataclass
class GeometryFindings:
    """The defects found in ``checked`` geometries (of ``total``; fewer when capped)."""

    checked: int = 0
    total: int = -1
    types: Counter[str] = field(default_factory=Counter)
    invalid: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    area_stored: float = 0.0  # planar area of the invalid polygons as stored (shoelace sums)
    area_valid: float = 0.0  # the same once made valid
    has_z: bool = False
    has_m: bool = False
    length_2d: float = 0.0
    length_3d: float = 0.0
    overlapping_pairs: int = 0
    overlap_area: float = 0.0

    @property
    def capped(self) -> bool:
        return self.total > self.checked


def _reason_kind(reason: str) -> str:
    """GEOS's reason without its coordinates: ``Self-intersection``, ``Nested shells``..."""
    return reason.split("[", 1)[0].strip() or "invalid"


def _length_3d(geometry: Any) -> float:
    """The length along Z of a (multi)linestring or polygon boundary (shapely measures 2D only)."""
    import numpy as np
    import shapely

    total = 0.0
    lines = shapely.get_parts(shapely.boundary(geometry) if geometry.geom_type.endswith("Polygon") else geometry)
    for line in lines:
        for part in shapely.get_parts(line):
            coords = shapely.get_coordinates(part, include_z=True)
            if len(coords) > 1:
                steps = np.diff(np.nan_to_num(coords), axis=0)
                total += float(np.sqrt((steps**2).sum(axis=1)).sum())
    return total


def inspect(wkbs: Iterable[bytes], total: int = -1) -> GeometryFindings:
    """Check each geometry (WKB; empty ones skipped): validity, ring nesting, Z, types, overlaps between polygons.

    Vectorised (shapely 2 works on arrays): only invalid geometries and lines with Z are looked at one by one.
    """
    import numpy as np
    import shapely

    found = GeometryFindings(total=total)
    raw = list(wkbs)
    found.checked = len(raw)
    found.has_m = any(_wkb_has_m(wkb) for wkb in raw)
    geometries = shapely.from_wkb(np.array(raw, dtype=object), on_invalid="ignore") if raw else np.array([])
    unreadable = int(shapely.is_missing(geometries).sum()) if len(geometries) else 0
    if unreadable:
        found.invalid += unreadable
        found.reasons["unreadable"] += unreadable
    geometries = geometries[~shapely.is_missing(geometries)] if len(geometries) else geometries
    geometries = geometries[~shapely.is_empty(geometries)] if len(geometries) else geometries
    if not len(geometries):
        return found
    kinds = shapely.get_type_id(geometries)
    for type_id, count in zip(*np.unique(kinds, return_counts=True), strict=True):
        found.types[_FAMILIES.get(int(type_id), "Other")] += int(count)
    lines = np.isin(kinds, (1, 5))  # LineString, MultiLineString
    with_z = shapely.has_z(geometries)
    if with_z.any():
        found.has_z = True
        for line in geometries[lines & with_z]:
            found.length_2d += line.length
            found.length_3d += _length_3d(line)
    valid = shapely.is_valid(geometries)
    polygons = np.isin(kinds, (3, 6))
    for geometry in geometries[~valid]:
        found.invalid += 1
        found.reasons[_reason_kind(shapely.is_valid_reason(geometry))] += 1
        if geometry.geom_type.endswith("Polygon"):
            found.area_stored += _stored_area(geometry)
            found.area_valid += shapely.make_valid(geometry).area
    shapes = geometries[polygons].copy()
    broken = ~valid[polygons]
    if broken.any():
        shapes[broken] = shapely.make_valid(shapes[broken])
    _overlaps(found, list(shapes))
    return found


_FAMILIES = {0: "Point", 4: "Point", 1: "LineString", 2: "LineString", 5: "LineString", 3: "Polygon", 6: "Polygon"}


def _wkb_has_m(wkb: bytes) -> bool:
    """Whether the WKB's geometry type carries M (ISO codes 2xxx/3xxx, or the EWKB flag)."""
    import struct

    if len(wkb) < 5:
        return False
    (code,) = struct.unpack("<I" if wkb[0] == 1 else ">I", wkb[1:5])
    return bool(code & 0x40000000) or (code & 0xFFFF) // 1000 in (2, 3)


def _stored_area(geometry: Any) -> float:
    """The area a shoelace formula gives for the geometry as stored: the sum of its parts' ring areas."""
    import shapely

    total = 0.0
    for part in shapely.get_parts(geometry):
        shell = shapely.Polygon(part.exterior).area
        holes = sum(shapely.Polygon(ring).area for ring in part.interiors)
        total += shell - holes
    return total


def _overlaps(found: GeometryFindings, polygons: list[Any]) -> None:
    """Pairs of polygons that share area (not only a boundary), up to ``MAX_OVERLAP_PAIRS`` candidates."""
    if len(polygons) < 2:
        return
    import numpy as np
    import shapely

    shapes = np.array(polygons, dtype=object)
    left, right = shapely.STRtree(shapes).query(shapes, predicate="intersects")
    keep = left < right
    left, right = left[keep][:MAX_OVERLAP_PAIRS], right[keep][:MAX_OVERLAP_PAIRS]
    if not len(left):
        return
    shared = shapely.area(shapely.intersection(shapes[left], shapes[right]))
    smaller = np.minimum(shapely.area(shapes[left]), shapely.area(shapes[right]))
    overlapping = shared > RELATIVE_CHANGE * smaller
    found.overlapping_pairs = int(overlapping.sum())
    found.overlap_area = float(shared[overlapping].sum())


def _size(value: float, units: str) -> str:
    return f"{value:,.6g} {units}".rstrip()


def notes(found: GeometryFindings, declared: str = "", units: str = "") -> list[str]:
    """One line per finding that changes figures (none when nothing does)."""
    lines: list[str] = []
    area_units = f"{units}²" if units else ""
    basis = f" (checked the first {found.checked:,} of {found.total:,} features)" if found.capped else ""
    if found.invalid:
        reasons = ", ".join(f"{kind} {count:,}" for kind, count in found.reasons.most_common())
        line = f"Invalid geometries: {found.invalid:,} ({reasons}){basis}."
        if "Nested shells" in found.reasons:
            line += (
                " A polygon part lies inside another: a hole stored as a second shell (in a shapefile, a ring wound "
                "like an outer ring) is read as two shells, so its area is added instead of cut out."
            )
        if found.area_stored or found.area_valid:
            line += (
                f" Their area as stored is {_size(found.area_stored, area_units)}; made valid "
                f"(native:fixgeometries) it is {_size(found.area_valid, area_units)} (planar): "
                "fix them before measuring."
            )
        lines.append(line)
    families = [kind for kind in ("Point", "LineString", "Polygon") if found.types.get(kind)]
    if len(families) > 1:
        counts = ", ".join(f"{found.types[kind]:,} {kind}" for kind in families)
        told = f" in a layer declared {declared}" if declared else ""
        lines.append(
            f"Mixed geometry types: {counts}{told}{basis}. Algorithms that write one type fail ('Could not write "
            "feature') or skip the others, and $length/$area are 0 on the other types: extract one type first "
            "(native:extractbyexpression with geometry_type($geometry) = 'Line', 'Polygon' or 'Point')."
        )
    if found.has_z and found.length_3d > found.length_2d * (1 + 1e-4):
        lines.append(
            f"Z values: lengths ($length, measures, algorithms) are 2D, along the ground plan; along the Z values "
            f"the lines are {100 * (found.length_3d / found.length_2d - 1):.3g}% longer "
            f"({_size(found.length_2d, units)} 2D, {_size(found.length_3d, units)} 3D, planar{basis})."
        )
    if found.overlapping_pairs:
        pairs = f"{found.overlapping_pairs:,} pair{'s' if found.overlapping_pairs != 1 else ''}"
        lines.append(
            f"Overlapping polygons: {pairs} share {_size(found.overlap_area, area_units)} "
            f"(planar){basis}. A sum of their areas, or of counts per polygon, counts the overlap once per polygon: "
            "dissolve them first for the area covered, or say that totals double-count."
        )
    return lines
