"""Traps in what the tools report about their own outputs: datum shifts the output check must not call a fault,
planar measures in a CRS's own units, optional outputs that hold the answer, and describe_table's ranges.

Right answers without QGIS: pyproj (best available operation, ``allow_ballpark=False``), shapely, numpy
over the raster GDAL wrote, and min()/max() read with psycopg2.
"""

from __future__ import annotations

import numpy as np
import pytest
from osgeo import ogr
from pyproj import Transformer
from shapely.ops import transform

from tests.traps.data import ellipsoidal_area, shape, square, write_raster, write_vector
from tests.traps.harness import Figure, Session, number, trap

FEET = r"\bft\b|\bftUS\b|\bfeet\b|\bfoot\b|survey f"
DEGREES = r"square degrees|not a true area|degrees are not"


def _latitude_after_reprojection(s: Session, epsg: int, lon: float, lat: float) -> Figure:
    """A well stored in ``epsg`` reprojected to WGS 84: its latitude as the tools give it ($y of the result)."""
    path = write_vector(s.tmp / "wells.gpkg", epsg, [f"POINT({lon} {lat})"], geometry_type=ogr.wkbPoint)
    s.load(path, name="wells")
    s.run("native:reprojectlayer", output_name="wells_wgs84", INPUT="wells", TARGET_CRS="EPSG:4326")
    best = Transformer.from_crs(f"EPSG:{epsg}", "EPSG:4326", always_xy=True, allow_ballpark=False)
    return Figure(s.measured("wells_wgs84", "$y"), best.transform(lon, lat)[1], rel=0, abs=2e-6)


@trap("datum shifts", warns=r"datum")
def test_monte_mario_reprojected_to_wgs84(s: Session, defect: bool) -> Figure:
    """Rome in EPSG:4806 (Monte Mario, Rome meridian): QGIS's Helmert shift is right; a ballpark is 74 m off.

    Was refused as "a fault in the processing" (the check compared with pyproj's ballpark default).
    Twin: the same well in ETRS89 (EPSG:4258), whose shift to WGS 84 is null.
    """
    if defect:
        return _latitude_after_reprojection(s, 4806, 0.0, 41.9)
    return _latitude_after_reprojection(s, 4258, 12.4523, 41.9)


@trap("linear units", warns=FEET)
def test_planar_area_function_in_us_survey_feet(s: Session, defect: bool) -> Figure:
    """area($geometry) of a 1,000 x 1,000 ftUS parcel: 1,000,000 is ft², the m² are 92,903.

    The figure in m² is asked; ``area()`` is planar in the layer's units, so the tools must say ftUS².
    Twin: the same parcel in UTM 11N (metres), where area() is m².
    """
    parcel = shape(square(6501000, 1840600, 1000))
    expected = ellipsoidal_area(parcel, 2229)
    if defect:
        stored, epsg = parcel, 2229
    else:
        move = Transformer.from_crs("EPSG:2229", "EPSG:26911", always_xy=True)
        stored, epsg = transform(move.transform, parcel), 26911
    path = write_vector(s.tmp / "parcels.gpkg", epsg, [stored.wkt], geometry_type=ogr.wkbPolygon)
    s.load(path, name="parcels")
    return Figure(s.measured("parcels", "area($geometry)"), expected, rel=2e-3)


@trap("geographic areas", warns=DEGREES)
def test_planar_area_function_in_degrees(s: Session, defect: bool) -> Figure:
    """area($geometry) of a lon/lat parcel is square degrees; the tools must say so. Twin: the parcel in UTM."""
    parcel = shape(square(500000, 4640000, 300))  # UTM 33N, near Rome
    expected = ellipsoidal_area(parcel, 32633)
    if defect:
        move = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)
        stored, epsg = transform(move.transform, parcel), 4326
    else:
        stored, epsg = parcel, 32633
    path = write_vector(s.tmp / "parcels.gpkg", epsg, [stored.wkt], geometry_type=ogr.wkbPolygon)
    s.load(path, name="parcels")
    return Figure(s.measured("parcels", "area($geometry)"), expected, rel=2e-3)


@trap("optional outputs", warns=r"optional output|only if you pass")
def test_class_table_of_a_unique_values_report(s: Session, defect: bool) -> Figure:
    """How many cells of class 2? native:rasterlayeruniquevaluesreport's table answers; it is optional.

    Trap: outputs left out, as the description teaches (only an HTML file was made, and the table
    asked for was named steep_report_output_table). Twin: the table asked for by name.
    """
    classes = np.random.default_rng(7).integers(1, 4, size=(30, 40)).astype(np.uint8)
    path = write_raster(s.tmp / "steep.tif", classes, 25832, (560000.0, 10.0, 0.0, 6200000.0, 0.0, -10.0))
    s.load(path, name="steep_cells")
    asked = {} if defect else {"OUTPUT_TABLE": "TEMPORARY_OUTPUT"}
    s.run("native:rasterlayeruniquevaluesreport", output_name="steep_report", INPUT="steep_cells", BAND=1, **asked)
    rows = {number(row.get("value", "")): row for row in s.rows("steep_report")}
    got = number(rows[2.0].get("count", "")) if 2.0 in rows else None
    return Figure(got, int((classes == 2).sum()), rel=0)


@pytest.fixture
def ranges_table():
    """A table whose minimum, 90, is also its most common value (the histogram leaves it out); and a twin."""
    from tests.support.postgis import connect

    with connect() as pg, pg.cursor() as cursor:
        cursor.execute(
            """
            CREATE SCHEMA IF NOT EXISTS geogpt_traps;
            DROP TABLE IF EXISTS geogpt_traps.schools, geogpt_traps.clubs;
            CREATE TABLE geogpt_traps.schools AS
              SELECT i AS id, CASE WHEN i <= 40 THEN 90 ELSE 120 + (i * 7) % 816 END AS pupils
              FROM generate_series(1, 400) i;
            CREATE TABLE geogpt_traps.clubs AS
              SELECT i AS id, 90 + (i * 7) % 846 AS pupils FROM generate_series(1, 400) i;
            ANALYZE geogpt_traps.schools; ANALYZE geogpt_traps.clubs;
            """
        )
        pg.commit()
    yield
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute("DROP SCHEMA geogpt_traps CASCADE")
        pg.commit()


def _smallest(table_name: str) -> int:
    from tests.support.postgis import connect

    with connect() as pg, pg.cursor() as cursor:
        cursor.execute(f"SELECT min(pupils) FROM geogpt_traps.{table_name}")
        return cursor.fetchone()[0]


@pytest.mark.postgis
@pytest.mark.usefixtures("ranges_table")
@trap("describe_table ranges", warns=r"approximate")
def test_smallest_school_from_describe_table(s: Session, defect: bool) -> Figure:
    """The smallest school's pupils, read from describe_table's range (a model copies it).

    Was "from 120 to 935" (pg_stats histogram bounds leave out the most common value, 90).
    Twin: a table whose minimum is not a common value (the histogram starts at it).
    """
    from tests.support.postgis import saved_connection

    name = "schools" if defect else "clubs"
    with saved_connection("traps"):
        text = s.call("describe_table", tables=[f"geogpt_traps.{name}"], connection="traps")
    line = next((line for line in text.splitlines() if line.startswith("- pupils")), "")
    at = line.find("from ")
    return Figure(number(line[at + 5 :]) if at >= 0 else None, _smallest(name), rel=0)
