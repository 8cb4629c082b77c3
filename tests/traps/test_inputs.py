"""Traps where data enters: axis order, swapped columns, DMS coordinates, CSV keys with leading zeros, datum shifts."""

from __future__ import annotations

from osgeo import ogr
from pyproj import Geod, Transformer
from pyproj.transformer import TransformerGroup

from tests.traps.data import rows_of, shape, square, write_vector
from tests.traps.harness import Figure, Session, table, trap

FRANKFURT = (8.68, 50.11)


def _first_x(s: Session, layer: str) -> float | None:
    values = [
        v
        for v in [s.measured(layer, "x(transform($geometry, layer_property(@layer, 'crs'), 'EPSG:4326'))", "xs")]
        if v is not None
    ]
    return values[0] if values else None


def _x_in_lonlat(s: Session, layer: str) -> float | None:
    s.run(
        "native:fieldcalculator",
        output_name="lonlat",
        INPUT=layer,
        FIELD_NAME="lon",
        FIELD_TYPE=0,
        FIELD_LENGTH=20,
        FIELD_PRECISION=8,
        FORMULA="x(transform($geometry, layer_property(@layer, 'crs'), 'EPSG:4326'))",
    )
    found = s.values("lonlat", "lon")
    return found[0] if found else None


@trap("axis order", warns=r"swap")
def test_csv_with_latitude_first(s: Session, defect: bool) -> Figure:
    """A CSV whose columns are lat, lon (latitude first): the point is in Frankfurt either way."""
    lon, lat = FRANKFURT
    header, row = ("id,lat,lon", f"1,{lat},{lon}") if defect else ("id,lon,lat", f"1,{lon},{lat}")
    s.load(rows_of(s.tmp / "sites.csv", [header, row]), name="sites")
    return Figure(_x_in_lonlat(s, "sites"), lon, abs=1e-6)


@trap("axis order", warns=r"swap")
def test_csv_with_swapped_values(s: Session, defect: bool) -> Figure:
    """A CSV whose lon column holds latitudes (and lat longitudes), beside a layer of Frankfurt's districts."""
    lon, lat = FRANKFURT
    district = shape(square(lon - 0.05, lat - 0.05, 0.1))
    write_vector(s.tmp / "districts.gpkg", 4326, [district.wkt], [{"name": "centre"}], ogr.wkbPolygon)
    s.load(s.tmp / "districts.gpkg", name="districts")
    values = f"1,{lat},{lon}" if defect else f"1,{lon},{lat}"
    s.load(rows_of(s.tmp / "sites.csv", ["id,lon,lat", values]), name="sites")
    return Figure(_x_in_lonlat(s, "sites"), lon, abs=1e-6)


@trap("DMS coordinates", warns=r"\bDMS\b|minutes|seconds|sexagesimal")
def test_csv_with_degrees_minutes_seconds(s: Session, defect: bool) -> Figure:
    """Coordinates written 50°06'36"N 8°40'48"E: 8.68°E."""
    if defect:
        lines = ["id;lat;lon", "1;50°06'36\"N;8°40'48\"E", "2;50°07'12\"N;8°41'24\"E"]
    else:
        lines = ["id;lat;lon", "1;50.11;8.68", "2;50.12;8.69"]
    s.load(rows_of(s.tmp / "sites.csv", lines), name="sites")
    return Figure(_x_in_lonlat(s, "sites"), 8.68, abs=1e-6)


@trap("CSV key typing", warns=r"leading zero|as text|zero-padded|padded")
def test_csv_codes_with_leading_zeros(s: Session, defect: bool) -> Figure:
    """District codes 001, 002, 010 in a CSV: a code is text, 001 is not 1."""
    codes = ["001", "002", "010"] if defect else ["A01", "A02", "A10"]
    lines = ["code,name,lon,lat", *[f"{c},d{i},{8.6 + i / 100},{50.1}" for i, c in enumerate(codes)]]
    s.load(rows_of(s.tmp / "codes.csv", lines), name="codes")
    rows = table(s.call("read_features", layer="codes", fields=["code"]))
    got = rows[0].get("code") if rows else None
    return Figure(got, codes[0])


def _reprojection_error(s: Session, epsg: int, x: float, y: float) -> float | None:
    """Metres between where QGIS's reprojection to EPSG:4326 puts a point and where PROJ's best operation does."""
    write_vector(s.tmp / "marks.gpkg", epsg, [f"POINT({x} {y})"], [{"n": 1}], ogr.wkbPoint)
    s.load(s.tmp / "marks.gpkg", name="marks")
    s.run("native:reprojectlayer", output_name="marks_wgs84", INPUT="marks", TARGET_CRS="EPSG:4326")
    lon = lat = None
    for axis in ("x", "y"):
        s.run(
            "native:fieldcalculator",
            output_name=f"coord_{axis}",
            INPUT="marks_wgs84",
            FIELD_NAME="c",
            FIELD_TYPE=0,
            FIELD_LENGTH=20,
            FIELD_PRECISION=9,
            FORMULA=f"{axis}($geometry)",
        )
        found = s.values(f"coord_{axis}", "c")
        if not found or found[0] is None:
            return None
        lon, lat = (found[0], lat) if axis == "x" else (lon, found[0])
    # PROJ's best-ranked operation (a datum shift where one is known; never the ballpark when there is one).
    best = TransformerGroup(f"EPSG:{epsg}", "EPSG:4326", always_xy=True).transformers[0]
    best_lon, best_lat = best.transform(x, y)
    return Geod(ellps="WGS84").inv(lon, lat, best_lon, best_lat)[2]


@trap("datum shifts", warns=r"datum")
def test_monte_mario_to_wgs84(s: Session, defect: bool) -> Figure:
    """A benchmark in Rome in Monte Mario (EPSG:4806, Rome meridian) reprojected to WGS 84, as PROJ's best does."""
    if defect:
        return Figure(_reprojection_error(s, 4806, 0.0, 41.9), 0.0, abs=2.0)
    return Figure(_reprojection_error(s, 4258, 12.45, 41.9), 0.0, abs=2.0)


@trap("datum shifts", warns=r"datum")
def test_ordnance_survey_to_wgs84(s: Session, defect: bool) -> Figure:
    """A point in London in British National Grid (OSGB36, EPSG:27700) to WGS 84: about 100 m of datum shift."""
    if defect:
        return Figure(_reprojection_error(s, 27700, 530000, 180000), 0.0, abs=2.0)
    lon, lat = Transformer.from_crs("EPSG:27700", "EPSG:4326", always_xy=True).transform(530000, 180000)
    x, y = Transformer.from_crs("EPSG:4326", "EPSG:32630", always_xy=True).transform(lon, lat)
    return Figure(_reprojection_error(s, 32630, x, y), 0.0, abs=2.0)
