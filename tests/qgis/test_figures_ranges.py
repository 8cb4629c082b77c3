"""describe_table ranges are exact (or marked approximate), not PostgreSQL's histogram bounds.

Trap: a column whose minimum is also its most common value; ``histogram_bounds`` leave the
most common values out, so the range read "from 120 to 935" when the minimum is 90.  The
true figures are read with psycopg2 beside the tools.  When reading them would cost more
than the bound, the statistics' range is given and marked approximate, and the session
goes on (the timed-out scan is rolled back to a savepoint).
"""

from __future__ import annotations

import pytest

from geogpt_qgis.tools.postgis import ranges
from geogpt_qgis.tools.postgis.family import PostgisTools
from tests.support.postgis import connect, saved_connection
from tests.support.runs import call_in_thread

pytestmark = pytest.mark.postgis


@pytest.fixture(scope="module")
def tables():
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute(
            """
            CREATE SCHEMA IF NOT EXISTS geogpt_ranges;
            DROP TABLE IF EXISTS geogpt_ranges.schools, geogpt_ranges.big;
            CREATE TABLE geogpt_ranges.schools AS
              SELECT i AS id, CASE WHEN i <= 40 THEN 90 ELSE 120 + (i * 7) % 816 END AS pupils,
                     (i * 3.5)::numeric AS budget
              FROM generate_series(1, 400) i;
            CREATE TABLE geogpt_ranges.big AS SELECT i AS id, (i % 9973) * 1.5 AS v FROM generate_series(1, 600000) i;
            ANALYZE geogpt_ranges.schools; ANALYZE geogpt_ranges.big;
            GRANT USAGE ON SCHEMA geogpt_ranges TO geogpt_reader;
            """
        )
        pg.commit()
    yield
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute("DROP SCHEMA geogpt_ranges CASCADE")
        pg.commit()


@pytest.fixture
def pg(tool_ctx, tables):
    with saved_connection("ranges") as name:
        yield PostgisTools(tool_ctx), name


def true_range(table: str, column: str) -> tuple:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"SELECT min({column}), max({column}) FROM geogpt_ranges.{table}")
        return cursor.fetchone()


def histogram(table: str, column: str) -> list[str]:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT histogram_bounds::text::text[] FROM pg_stats "
            "WHERE schemaname = 'geogpt_ranges' AND tablename = %s AND attname = %s",
            [table, column],
        )
        return cursor.fetchone()[0]


def test_a_most_common_minimum_is_in_the_range(pg):
    tools, connection = pg
    low, high = true_range("schools", "pupils")
    assert low == 90 and histogram("schools", "pupils")[0] != "90"  # the trap: the histogram leaves 90 out
    text = call_in_thread(tools.describe_table, ["geogpt_ranges.schools"], connection).text
    assert f"- pupils: integer: from 90 to {high};" in text, text
    budget_low, budget_high = true_range("schools", "budget")
    assert f"from {float(budget_low):g} to {float(budget_high):g};" in text  # numerics as plain decimals
    assert "approximate" not in text


def test_a_range_too_costly_to_read_is_marked_approximate(pg, monkeypatch):
    tools, connection = pg
    monkeypatch.setattr(ranges, "RANGE_TIMEOUT_MS", 1)  # any scan of 600,000 rows takes longer
    text = call_in_thread(tools.describe_table, ["geogpt_ranges.big", "geogpt_ranges.schools"], connection).text
    bounds = histogram("big", "v")
    assert f"from {bounds[0]} to {bounds[-1]} (approximate, from the database's statistics" in text, text
    low, high = true_range("schools", "pupils")  # the session went on after the timed-out scan:
    assert f"- pupils: integer: from {low} to {high};" in text, text  # the next table's ranges are read


def test_a_computed_numeric_reads_plainly_and_still_filters(pg):
    """avg() of integers is 466.6666666666666667: rounded to 15 digits, said, and round() finds it again."""
    tools, connection = pg
    values = "(VALUES (100), (200), (1100)) AS t(x)"
    text = str(call_in_thread(tools.run_sql, f"SELECT avg(x) AS mean, sum(x) AS total FROM {values}", connection).text)
    assert "| 466.666666666667 | 1400 |" in text, text
    assert "Note: numeric values of 'mean' with more than 15 significant digits are rounded to 15" in text
    with connect() as conn, conn.cursor() as cursor:
        shown = "466.666666666667"
        cursor.execute(f"SELECT count(*) FROM (SELECT avg(x) AS a FROM {values}) s WHERE round(a, 12) = {shown}")
        assert cursor.fetchone()[0] == 1


@pytest.mark.parametrize(
    ("sql", "unit", "method"),
    [
        ("SELECT name, ST_Area(geom) AS a FROM districts", "m²", "planar in EPSG:25832"),
        ("SELECT name, round(ST_Area(ST_Transform(geom, 4326)::geography)) AS a FROM districts", "m²", "ellipsoidal"),
        ("SELECT name, ST_Area(ST_Transform(geom, 4326)) AS a FROM districts", "square degrees", "planar in EPSG:4326"),
    ],
)
def test_sql_measure_columns_say_their_unit_and_method(tool_ctx, sql, unit, method):
    """A bare ST_Area column is named for what it is; checked against shapely (planar) and pyproj (ellipsoidal)."""
    from pyproj import Geod, Transformer
    from shapely import wkb
    from shapely.ops import transform

    with saved_connection("demo_pg") as name:
        text = call_in_thread(PostgisTools(tool_ctx).run_sql, sql + " ORDER BY name LIMIT 1", name)
    (figure,) = text.artifact.figures
    assert figure.unit == unit and figure.method.startswith(method), figure
    assert f"column 'a' (st_area): {figure.basis}" in text.text, text.text
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT ST_AsBinary(geom) FROM districts ORDER BY name LIMIT 1")
        district = wkb.loads(bytes(cursor.fetchone()[0]))
    shown = float(text.text.split("\n")[3].strip("|").split("|")[1])
    if unit == "m²" and method.startswith("planar"):
        assert shown == pytest.approx(district.area, rel=1e-9)
    elif unit == "m²":
        lonlat = transform(Transformer.from_crs(25832, 4326, always_xy=True).transform, district)
        assert shown == pytest.approx(abs(Geod(ellps="WGS84").geometry_area_perimeter(lonlat)[0]), abs=1)
    else:
        assert "Not a true measure" in figure.warning and "geography" in figure.warning
