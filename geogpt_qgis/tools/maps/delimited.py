"""CSV/TSV files as point (or WKT) layers: delimiter, coordinate columns and CRS told from the file (worker).

The delimiter comes from Python's ``csv.Sniffer``; the coordinate columns
from the header (``lon``/``lat``, ``x``/``y``, ``easting``/``northing``...,
or a WKT column); the CRS from the ``crs`` the model gave, else guessed from
the value ranges, and the answer says it was guessed and why.  The layer is
QGIS's delimited-text provider reading the file itself, so it stays linked to it.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.core.text import single_line
from geogpt_qgis.tools.base import ToolError

DELIMITED_SUFFIXES = frozenset({".csv", ".tsv", ".txt"})
SNIFF_BYTES = 64 * 1024
MAX_SCANNED_ROWS = 1_000_000  # the value ranges come from at most this many rows
CANCEL_EVERY = 5_000
# Header names of coordinate columns, normalised (lower case, letters and digits only), best first.
X_NAMES = ("lon", "lng", "long", "longitude", "x", "easting", "east", "xcoord", "coordx", "pointx", "utmx")
Y_NAMES = ("lat", "latitude", "y", "northing", "north", "ycoord", "coordy", "pointy", "utmy")
WKT_NAMES = ("wkt", "geom", "geometry", "thegeom", "wktgeom", "shape", "geometrywkt")
_WKT_START = re.compile(r"^\s*(SRID=\d+;)?\s*(MULTI)?(POINT|LINESTRING|POLYGON)|^\s*GEOMETRYCOLLECTION", re.I)
_DECIMAL_COMMA = re.compile(r"^-?\d+,\d+$")
_DECIMAL_DOT = re.compile(r"^-?\d*\.\d+$")
_SRID = re.compile(r"^\s*SRID=(\d+);", re.I)
# 50°06'36"N, 8 40 48 E, -50:06:36.5, 50°06.6'N: degrees, minutes (seconds), with a sign or a hemisphere letter.
_DMS = re.compile(
    r"^\s*([-+])?\s*(\d{1,3})\s*(?:°|º|d|:|\s)\s*(\d{1,2}(?:[.,]\d+)?)\s*(?:'|′|m|:|\s)?\s*"
    r"(?:(\d{1,2}(?:[.,]\d+)?)\s*(?:\"|″|''|s)?)?\s*([NSEWnsew])?\s*$"
)
_PADDED = re.compile(r"^0\d+$")
SNIFF_ROWS = 10_000  # the decimal comma is told from every column of at most this many rows
GEOGRAPHIC = "EPSG:4326"
MAX_LISTED = 30


@dataclass(frozen=True)
class ProjectFrame:
    """What the CRS guess knows of the project: its CRS and its layers' extent in that CRS (main thread).

    ``near`` is that extent, grown by half, in longitude/latitude: transformed on
    the main thread (QGIS 3.22's transforms on a later worker thread can fail).
    """

    crs: str
    extent: tuple[float, float, float, float] | None
    near: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class CsvLayout:
    """A delimited file's shape: delimiter, header, the coordinate columns, and the values' range."""

    delimiter: str
    header: list[str]
    x: str = ""
    y: str = ""
    wkt: str = ""
    decimal_comma: bool = False
    rows: int = 0
    bounds: tuple[float, float, float, float] | None = None
    points: int = 0  # rows whose coordinates the csv module reads (a layer of none from these is a failed read)
    srid: str = ""  # ``EPSG:n`` when every EWKT row says ``SRID=n;``
    dms: bool = False  # coordinates written in degrees, minutes, seconds (50°06'36"N): read as such
    seconds_quote: bool = False  # a DMS value ends its seconds with '"': QGIS must not read it as a quote
    padded: tuple[str, ...] = ()  # columns of digit codes with leading zeros ("001"), which QGIS reads as numbers

    @property
    def columns_used(self) -> str:
        if self.wkt:
            return f"WKT column {self.wkt!r}"
        dms = " (degrees, minutes, seconds, read as such)" if self.dms else ""
        return f"X={self.x!r}, Y={self.y!r}{dms}"

    @property
    def notes(self) -> tuple[str, ...]:
        """What in the file's other columns changes what is read (codes with leading zeros)."""
        return tuple(
            f"Column {name!r} holds codes with leading zeros ('001'): QGIS reads it as whole numbers, so 001 becomes 1 "
            f"and a join or filter with the text codes finds nothing; compare with lpad(to_string(\"{name}\"), n, '0')."
            for name in self.padded
        )


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _pick(header: list[str], names: tuple[str, ...]) -> str:
    normalised = {_norm(h): h for h in reversed(header)}
    return next((normalised[n] for n in names if n in normalised), "")


def _sniff(sample: str, suffix: str) -> str:
    if suffix == ".tsv":
        return "\t"
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        first = sample.splitlines()[0] if sample else ""
        counts = {d: first.count(d) for d in ",;\t|"}
        best = max(counts, key=lambda d: counts[d])
        if not counts[best]:
            raise ToolError("cannot tell the delimiter of this text file (one column only?)") from None
        return best


def _listed(header: list[str]) -> str:
    """The header as a short line: at most ``MAX_LISTED`` names, each cut to 40 characters."""
    names = [single_line(name)[:40] for name in header[:MAX_LISTED]]
    return ", ".join(names) + (f", ... ({len(header)} columns)" if len(header) > MAX_LISTED else "")


def inspect_csv(path: Path, cancel: CancelToken, columns: str = "") -> CsvLayout:
    """Read ``path``'s header and values: delimiter, coordinate columns and their range (worker thread).

    ``columns`` (``"X,Y"``, the tool's ``layer``) names the coordinate columns, e.g. to read them swapped.
    """
    with path.open(newline="", encoding="utf-8-sig", errors="replace") as handle:
        return _inspect(handle, path.suffix.lower(), path.name, cancel, columns)


def inspect_csv_text(text: str, suffix: str, name: str, cancel: CancelToken, columns: str = "") -> CsvLayout:
    """``inspect_csv`` of text already read (the start of a remote CSV): the range is that of its rows."""
    return _inspect(io.StringIO(text.removeprefix("\ufeff"), newline=""), suffix, name, cancel, columns)


def _named_columns(header: list[str], columns: str, name: str) -> tuple[str, str]:
    """The X and Y columns ``"X,Y"`` names (exactly, else ignoring case and punctuation)."""
    parts = [part.strip() for part in columns.split(",")]
    found = [part if part in header else _pick(header, (_norm(part),)) for part in parts]
    if len(parts) != 2 or not all(found):
        raise ToolError(
            f"layer {columns!r} does not name two columns of {name} as 'X,Y'; its header is: {_listed(header)}"
        )
    return found[0], found[1]


def _inspect(handle: TextIO, suffix: str, name: str, cancel: CancelToken, columns: str = "") -> CsvLayout:
    sample = handle.read(SNIFF_BYTES)
    handle.seek(0)
    delimiter = _sniff(sample, suffix)
    reader = csv.reader(handle, delimiter=delimiter)
    header = [h.strip() for h in next(reader, [])]
    if not any(header):
        raise ToolError(f"{name} is empty: no header line")
    if columns.strip():
        x, y = _named_columns(header, columns, name)
    else:
        x, y = _pick(header, X_NAMES), _pick(header, Y_NAMES)
    wkt = "" if (x and y) else _pick(header, WKT_NAMES)
    first = next(reader, None)
    if not (x and y) and not wkt and first:
        wkt = next((h for h, v in zip(header, first, strict=False) if _WKT_START.match(v or "")), "")
    if not (x and y) and not wkt:
        raise ToolError(
            f"{name} has no coordinate columns; its header is: {_listed(header)}. Name the X/Y columns "
            "lon/lat, x/y or easting/northing (or add a WKT column), or join the table to a layer instead."
        )
    rows: Iterator[list[str]] = itertools.chain([first], reader) if first else iter(())
    if wkt:
        return _scan_wkt(CsvLayout(delimiter, header, wkt=wkt), rows, cancel)
    return _scan_xy(CsvLayout(delimiter, header, x=x, y=y), rows, cancel)


def dms_degrees(text: str) -> float | None:
    """Decimal degrees of ``50°06'36"N``-like text (``None`` if it is not written so); S and W are negative."""
    found = _DMS.match(text)
    if not found:
        return None
    sign, degrees, minutes, seconds, hemisphere = found.groups()
    value = int(degrees) + float(minutes.replace(",", ".")) / 60 + float((seconds or "0").replace(",", ".")) / 3600
    negative = sign == "-" or (hemisphere or "").upper() in ("S", "W")
    return -value if negative else value


def _padded_columns(header: list[str], sample: list[list[str]], skip: set[int]) -> tuple[str, ...]:
    """Columns whose values are all digits and some start with 0 ("001"): codes QGIS would read as numbers."""
    found = []
    for index, name in enumerate(header):
        values = [row[index].strip() for row in sample if len(row) > index and row[index].strip()]
        if index in skip or not values:
            continue
        if all(v.isdigit() for v in values) and any(_PADDED.match(v) for v in values):
            found.append(name)
    return tuple(found)


def _scan_xy(layout: CsvLayout, rows: Iterator[list[str]], cancel: CancelToken) -> CsvLayout:
    ix, iy = layout.header.index(layout.x), layout.header.index(layout.y)
    xs: list[float] = []
    ys: list[float] = []
    dms = seconds_quote = False
    sample: list[list[str]] = []
    # "10,5" in a field (after ";" between columns, or quoted after ","): a decimal comma, unless a "10.5" shows
    # decimal points; every column counts (a ";" file with whole-number coordinates may have "12,5" readings).
    commas = dots = False
    count = 0
    for count, row in enumerate(rows, start=1):
        if count % CANCEL_EVERY == 0:
            cancel.raise_if_cancelled()
        if count <= SNIFF_ROWS:
            sample.append(row)
            for field in row:
                value = field.strip()
                commas = commas or bool(_DECIMAL_COMMA.match(value))
                dots = dots or bool(_DECIMAL_DOT.match(value))
        if count > MAX_SCANNED_ROWS or len(row) <= max(ix, iy):
            continue
        raw_x, raw_y = row[ix].strip(), row[iy].strip()
        commas = commas or bool(_DECIMAL_COMMA.match(raw_x) or _DECIMAL_COMMA.match(raw_y))
        dots = dots or "." in raw_x or "." in raw_y
        try:
            x, y = float(raw_x.replace(",", ".")), float(raw_y.replace(",", "."))
        except ValueError:
            x, y = dms_degrees(raw_x), dms_degrees(raw_y)  # type: ignore[assignment]
            if x is None or y is None:
                continue
            dms = True
            seconds_quote = seconds_quote or '"' in raw_x + raw_y
        xs.append(x)
        ys.append(y)
    if not xs:
        raise ToolError(f"the columns {layout.x!r} and {layout.y!r} hold no numbers")
    bounds = (min(xs), min(ys), max(xs), max(ys))
    return CsvLayout(
        layout.delimiter,
        layout.header,
        layout.x,
        layout.y,
        "",
        commas and not dots and not dms,
        count,
        bounds,
        len(xs),
        dms=dms,
        seconds_quote=seconds_quote,
        padded=_padded_columns(layout.header, sample, {ix, iy}),
    )


def _scan_wkt(layout: CsvLayout, rows: Iterator[list[str]], cancel: CancelToken) -> CsvLayout:
    from shapely import wkt as shapely_wkt
    from shapely.errors import ShapelyError

    index = layout.header.index(layout.wkt)
    boxes = []
    srids: set[str] = set()
    count = 0
    for count, row in enumerate(rows, start=1):
        if count % CANCEL_EVERY == 0:
            cancel.raise_if_cancelled()
        if count > MAX_SCANNED_ROWS or len(row) <= index or not row[index].strip():
            continue
        said = _SRID.match(row[index])
        text = row[index][said.end() :] if said else row[index]
        try:
            geometry = shapely_wkt.loads(text)
        except (ShapelyError, ValueError):
            continue
        if not geometry.is_empty:
            boxes.append(geometry.bounds)
            srids.add(f"EPSG:{int(said.group(1))}" if said else "")
    if not boxes:
        raise ToolError(f"the column {layout.wkt!r} holds no WKT geometry")
    bounds = (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
    srid = srids.pop() if len(srids) == 1 else ""  # rows that disagree (or say none) are guessed from their values
    return CsvLayout(
        layout.delimiter, layout.header, wkt=layout.wkt, rows=count, bounds=bounds, points=len(boxes), srid=srid
    )


def guess_crs(layout: CsvLayout, frame: ProjectFrame) -> tuple[str, str]:
    """The CRS the values are most likely in, and how that was guessed (for the answer).

    Raises ``ToolError`` when neither longitude/latitude nor the project's CRS fits.
    """
    from qgis.core import (
        QgsCoordinateReferenceSystem,
        QgsCoordinateTransform,
        QgsCoordinateTransformContext,
        QgsRectangle,
    )

    bounds = layout.bounds
    if bounds is None:  # the scan raises first when no value was read; a layout built elsewhere may lack them
        raise ToolError("the file's coordinates were not read, so its CRS cannot be guessed: give crs")
    xmin, ymin, xmax, ymax = bounds
    if -180 <= xmin <= xmax <= 180 and -90 <= ymin <= ymax <= 90:
        how = "guessed EPSG:4326 (longitude/latitude): all values lie within ±180/±90"
        return GEOGRAPHIC, how + _far_from_project(layout, frame)
    project = QgsCoordinateReferenceSystem(frame.crs) if frame.crs else QgsCoordinateReferenceSystem()
    if project.isValid() and not project.isGeographic():
        if frame.extent is not None and _overlaps(bounds, _grown(frame.extent)):
            return frame.crs, f"guessed the project's CRS {frame.crs}: the values fall within the project's layers"
        area = project.bounds()  # the CRS's area of use, in longitude/latitude
        try:
            to_lonlat = QgsCoordinateTransform(
                project, QgsCoordinateReferenceSystem(GEOGRAPHIC), QgsCoordinateTransformContext()
            )
            box = to_lonlat.transformBoundingBox(QgsRectangle(xmin, ymin, xmax, ymax))
        except Exception:  # noqa: BLE001 - QgsCsException: the values are outside the CRS's domain
            box = None
        if box is not None and not area.isEmpty() and area.contains(box):
            return frame.crs, f"guessed the project's CRS {frame.crs}: the values lie in its area of use"
    low_x, high_x, low_y, high_y = (plain_number(v) for v in (xmin, xmax, ymin, ymax))
    raise ToolError(
        f"cannot tell the CRS of the coordinates (X {low_x} to {high_x}, Y {low_y} to {high_y}): they are not "
        f"longitude/latitude nor inside the project's CRS ({frame.crs or 'none'}); pass crs, the EPSG code they are in"
    )


def near_in_lonlat(
    crs: str, extent: tuple[float, float, float, float] | None
) -> tuple[float, float, float, float] | None:
    """The project's extent grown by half, in longitude/latitude; ``None`` when it cannot be told (main thread)."""
    from qgis.core import (
        QgsCoordinateReferenceSystem,
        QgsCoordinateTransform,
        QgsCoordinateTransformContext,
        QgsRectangle,
    )

    project = QgsCoordinateReferenceSystem(crs) if crs else QgsCoordinateReferenceSystem()
    if extent is None or not project.isValid():
        return None
    to_lonlat = QgsCoordinateTransform(
        project, QgsCoordinateReferenceSystem(GEOGRAPHIC), QgsCoordinateTransformContext()
    )
    if not to_lonlat.isValid():  # the box would pass on untransformed
        return None
    try:
        box = to_lonlat.transformBoundingBox(QgsRectangle(*_grown(extent)))
    except Exception:  # noqa: BLE001 - QgsCsException: the project's extent is outside its CRS's domain
        return None
    near = (box.xMinimum(), box.yMinimum(), box.xMaximum(), box.yMaximum())
    return near if all(math.isfinite(v) for v in near) else None


def _far_from_project(layout: CsvLayout, frame: ProjectFrame) -> str:
    """``""``, or a warning that the longitude/latitude lie away from the project's layers (and if swapped, do not).

    A file whose X column holds latitudes still lies within ±180/±90: its points
    land thousands of kilometres away.  The project's extent (grown by half) is
    compared in longitude/latitude; without layers there is nothing to compare.
    """
    near = frame.near
    if near is None or layout.bounds is None:
        return ""
    xmin, ymin, xmax, ymax = layout.bounds
    if _overlaps(layout.bounds, near):
        return ""
    note = "; but they lie far from the project's layers"
    if layout.wkt or not (-180 <= ymin <= ymax <= 180 and -90 <= xmin <= xmax <= 90):
        return note
    if not _overlaps((ymin, xmin, ymax, xmax), near):
        return note
    return (
        f"{note}; read swapped (X from {layout.y!r}, Y from {layout.x!r}) they lie among them: if so, remove this "
        f"layer and load the file again with layer='{layout.y},{layout.x}' (the X,Y columns)"
    )


def _grown(extent: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """The project's extent with a margin of half its size: sensors just outside the town still count."""
    xmin, ymin, xmax, ymax = extent
    dx, dy = (xmax - xmin) / 2 or 1000.0, (ymax - ymin) / 2 or 1000.0
    return xmin - dx, ymin - dy, xmax + dx, ymax + dy


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def delimited_uri(path: Path, layout: CsvLayout, crs: str) -> str:
    """The delimited-text provider's URI for ``path`` (its path encoded as a file URL, options as its query)."""
    from qgis.PyQt.QtCore import QUrl, QUrlQuery

    items = [
        ("type", "csv"),
        ("delimiter", "\\t" if layout.delimiter == "\t" else layout.delimiter),
        ("detectTypes", "yes"),
        ("crs", crs),
        ("spatialIndex", "no"),
        ("subsetIndex", "no"),
        ("watchFile", "no"),
    ]
    if layout.wkt:
        items.append(("wktField", layout.wkt))
    else:
        items += [("xField", layout.x), ("yField", layout.y), ("geomType", "point")]
    if layout.decimal_comma:
        items.append(("decimalPoint", ","))
    if layout.dms:
        items.append(("xyDms", "yes"))
    if layout.seconds_quote:  # 36"N: read '"' as a character (QGIS would take it for a quote and drop the row)
        items += [("quote", ""), ("escape", "")]
    query = QUrlQuery()
    for key, value in items:
        query.addQueryItem(key, value)
    url = QUrl.fromLocalFile(str(path))
    url.setQuery(query.query(QUrl.ComponentFormattingOption.FullyEncoded), QUrl.ParsingMode.StrictMode)
    return bytes(url.toEncoded()).decode("ascii")


def remote_csv_uri(url: str, layout: CsvLayout) -> str | None:
    """The ogr provider's URI reading the CSV at ``url`` as points (or WKT) through ``/vsicurl/``; ``None``: it cannot.

    GDAL's CSV driver takes the columns as open options (``|option:``), which
    QGIS's ogr provider passes on; it knows no decimal comma, and a column name
    holding ``,`` or ``|`` would split its option.
    """
    columns = [layout.wkt] if layout.wkt else [layout.x, layout.y]
    if layout.decimal_comma or any("," in c or "|" in c for c in columns):
        return None
    if layout.wkt:
        options = [f"GEOM_POSSIBLE_NAMES={layout.wkt}"]
    else:
        options = [f"X_POSSIBLE_NAMES={layout.x}", f"Y_POSSIBLE_NAMES={layout.y}"]
    return "/vsicurl/" + url + "".join(f"|option:{o}" for o in [*options, "KEEP_GEOM_COLUMNS=YES"])
