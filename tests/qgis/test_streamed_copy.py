"""A query's rows streamed into its GeoPackage (tools/postgis/streamed_copy.py), checked against PostGIS itself."""

from __future__ import annotations

import datetime as dt
import math
import sqlite3
from pathlib import Path

import pytest
from qgis.core import NULL, QgsWkbTypes

from geogpt_qgis.tools.postgis.family import PostgisTools
from tests.support.postgis import connect, saved_connection
from tests.support.runs import call_in_thread

pytestmark = pytest.mark.postgis

TYPED = """
SELECT i::int2 AS small, i * 100000 AS normal, i::bigint * 10000000000 AS big, i / 3.0::real AS single,
       i / 7.0::float8 AS double, (i / 8.0)::numeric(10, 3) AS exact, 'n' || i AS label, ('v' || i)::varchar(9) AS v,
       i % 2 = 0 AS even, DATE '2026-01-31' + i AS day,
       TIMESTAMP '2026-01-31 10:20:30.125' + i * interval '1 hour' AS at,
       TIMESTAMPTZ '2026-01-31 10:20:30.5+02' + i * interval '1 minute' AS at_tz,
       jsonb_build_object('i', i) AS doc, md5(i::text)::uuid AS id,
       CASE WHEN i = 2 THEN NULL ELSE 'x' END AS maybe,
       ST_SetSRID(ST_MakePoint(560000 + i * 10.125, 6200000 + i * 0.5), 25832) AS geom
FROM generate_series(1, 5) i
"""


@pytest.fixture
def pg(tool_ctx):
    with saved_connection("streamed") as name:
        yield PostgisTools(tool_ctx), name


def _layer(project, name):
    layer = project.mapLayersByName(name)[0]
    assert layer.isValid() and layer.providerType() == "ogr"
    return layer


def _stored(layer) -> Path:
    return Path(layer.source().split("|")[0])


def test_every_streamed_type_reads_back_as_postgis_holds_it(pg, demo_project):
    tools, connection = pg
    call_in_thread(tools.run_sql, TYPED, connection, "typed")
    layer = _layer(demo_project, "typed")
    with connect() as db, db.cursor() as cursor:
        cursor.execute(f"SELECT *, ST_X(geom), ST_Y(geom) FROM ({TYPED}) q ORDER BY small")
        expected = cursor.fetchall()
    features = sorted(layer.getFeatures(), key=lambda f: f["small"])
    assert len(features) == len(expected) == layer.featureCount() == 5
    for feature, row in zip(features, expected, strict=True):
        small, normal, big, single, double, exact, label, v, even, day, at, at_tz, doc, uid, maybe = row[:15]
        assert (feature["small"], feature["normal"], feature["big"]) == (small, normal, big)
        assert feature["single"] == pytest.approx(single, rel=1e-7) and feature["double"] == double
        assert feature["exact"] == float(exact)
        assert (feature["label"], feature["v"], bool(feature["even"])) == (label, v, even)
        assert feature["day"].toPyDate() == day
        assert feature["at"].toPyDateTime() == at
        stored_tz = feature["at_tz"].toUTC().toPyDateTime().replace(tzinfo=dt.UTC)
        assert stored_tz == at_tz
        assert feature["doc"] == doc  # read back as JSON by QGIS
        assert feature["id"] == str(uid)
        assert feature["maybe"] == (NULL if maybe is None else maybe)
        point = feature.geometry().asPoint()
        assert (point.x(), point.y()) == (row[-2], row[-1])  # the same doubles, no rounding on the way
    # What the GeoPackage records of itself: its extent from the rows, the count, the result mark.
    with sqlite3.connect(_stored(layer)) as gpkg:
        extent = gpkg.execute("SELECT min_x, min_y, max_x, max_y, description FROM gpkg_contents").fetchone()
        count = gpkg.execute("SELECT feature_count FROM gpkg_ogr_contents").fetchone()[0]
        triggers = {n for (n,) in gpkg.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    gpkg.close()
    xs, ys = [r[-2] for r in expected], [r[-1] for r in expected]
    assert extent == (min(xs), min(ys), max(xs), max(ys), "GeoGPT result")
    assert count == 5
    assert "trigger_insert_feature_count_typed" in triggers  # GDAL's own triggers are back for later writers


def test_a_column_named_fid_stays_a_field_and_may_repeat(pg, demo_project):
    """GDAL took a column called fid as the key: a join repeating it failed with a UNIQUE constraint error."""
    tools, connection = pg
    text = call_in_thread(tools.run_sql, "SELECT 7 AS fid, name, geom FROM schools", connection, "same_fid").text
    layer = _layer(demo_project, "same_fid")
    with connect() as db, db.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM schools")
        schools = cursor.fetchone()[0]
    assert f"{schools} features" in text
    assert layer.fields().names()[:3] == ["fid_2", "fid", "name"]
    assert {f["fid"] for f in layer.getFeatures()} == {7}
    assert len(list(layer.getFeatures())) == schools


def test_z_and_m_are_kept_and_named(pg, demo_project):
    """GeometryType() says POINT for a 3D point: the layer was declared 2D and its heights dropped."""
    tools, connection = pg
    sql = "SELECT i, ST_SetSRID(ST_MakePoint(560000 + i, 6200000, 40.5 + i), 25832) AS geom "
    sql += "FROM generate_series(1, 3) i"
    text = call_in_thread(tools.run_sql, sql, connection, "heights").text
    assert "have Z values (heights); the layer keeps them" in text
    layer = _layer(demo_project, "heights")
    assert QgsWkbTypes.hasZ(layer.wkbType())
    assert sorted(f.geometry().constGet().z() for f in layer.getFeatures()) == [41.5, 42.5, 43.5]
    sql = "SELECT ST_SetSRID(ST_MakePointM(560000, 6200000, 7), 25832) AS geom"
    call_in_thread(tools.run_sql, sql, connection, "measured")
    layer = _layer(demo_project, "measured")
    assert QgsWkbTypes.hasM(layer.wkbType()) and not QgsWkbTypes.hasZ(layer.wkbType())
    assert next(layer.getFeatures()).geometry().constGet().m() == 7


def test_empty_and_missing_geometries_stay_what_they_are(pg, demo_project):
    tools, connection = pg
    sql = (
        "SELECT 1 AS k, 'SRID=25832;POINT EMPTY'::geometry AS geom UNION ALL SELECT 2, NULL "
        "UNION ALL SELECT 3, 'SRID=25832;POINT(560001 6200002)'"
    )
    call_in_thread(tools.run_sql, sql, connection, "gaps")
    layer = _layer(demo_project, "gaps")
    geometries = {f["k"]: f.geometry() for f in layer.getFeatures()}
    assert geometries[1].isEmpty() and not geometries[1].isNull()
    assert geometries[2].isNull()
    assert geometries[3].asPoint().x() == 560001
    extent = layer.extent()
    assert (extent.xMinimum(), extent.yMaximum()) == (560001, 6200002)


def test_types_only_gdal_maps_are_still_copied(pg, demo_project):
    """An array, an interval and a curve have no exact streamed form: GDAL copies them as before."""
    tools, connection = pg
    sql = "SELECT ARRAY[1, 2] AS pair, interval '1 day' AS span, 'SRID=25832;POINT(560000 6200000)'::geometry AS geom"
    call_in_thread(tools.run_sql, sql, connection, "arrays")
    feature = next(_layer(demo_project, "arrays").getFeatures())
    assert feature["span"] == "1 day" and "1,2" in str(feature["pair"]).replace(" ", "")  # GDAL 3.6 and 3.10 alike
    arc = "'SRID=25832;CIRCULARSTRING(560000 6200000, 560001 6200001, 560002 6200000)'::geometry"
    call_in_thread(tools.run_sql, f"SELECT {arc} AS g", connection, "arc")
    layer = _layer(demo_project, "arc")
    assert QgsWkbTypes.isCurvedType(layer.wkbType())
    length = next(layer.getFeatures()).geometry().length()
    assert math.isclose(length, math.pi, rel_tol=1e-3)  # a half circle of radius 1, not its chord


def test_stop_while_rows_stream_leaves_nothing_behind(pg, demo_project):
    """Stop during the count or the stream: the call ends at once, its storing thread too, and no file is left."""
    import threading

    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from geogpt_qgis.tools.result_store import result_store
    from tests.support.runs import stop_midway

    tools, connection = pg
    PlgOptionsManager.set_value("sql_row_cap", 5_000_000)
    sql = (
        "SELECT i, ST_SetSRID(ST_MakePoint(560000 + i % 1000, 6200000 + i / 1000), 25832) AS geom "
        "FROM generate_series(1, 3000000) i"
    )
    ended, seconds = stop_midway(tools.run_sql, sql, connection, "stopped_rows", after=1.5)
    assert ended == "cancelled"
    assert seconds < 2.0
    assert not demo_project.mapLayersByName("stopped_rows")
    assert not [t for t in threading.enumerate() if t.name == "geogpt-query-copy"]
    folder = result_store(demo_project).location(demo_project)
    assert not list(folder.glob("stopped_rows*"))


def test_a_capped_result_records_the_extent_of_the_rows_it_kept(pg, demo_project):
    """The query pass's extent covers one row more than a capped layer keeps: the stored rows' own is recorded."""
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    tools, connection = pg
    PlgOptionsManager.set_value("sql_row_cap", 1_000)
    sql = (
        "SELECT i, ST_SetSRID(ST_MakePoint(560000 + i, 6200000 + i * 2), 25832) AS geom FROM generate_series(1, 5000) i"
    )
    text = call_in_thread(tools.run_sql, sql, connection, "capped").text
    assert text.startswith("more than 1,000 rows (capped at 1,000")
    layer = _layer(demo_project, "capped")
    points = [f.geometry().asPoint() for f in layer.getFeatures()]
    assert len(points) == 1_000
    with sqlite3.connect(_stored(layer)) as gpkg:
        extent = gpkg.execute("SELECT min_x, min_y, max_x, max_y FROM gpkg_contents").fetchone()
    gpkg.close()
    xs, ys = [p.x() for p in points], [p.y() for p in points]
    assert extent == (min(xs), min(ys), max(xs), max(ys))


def test_a_writer_that_fails_after_the_last_batch_ends_instead_of_waiting(tmp_path):
    """A failure after the end was taken (here: no gpkg_ogr_contents to count into) must not wait for more rows."""
    import queue
    import threading

    from geogpt_qgis.tools.postgis.streamed_copy import _Writer

    path = tmp_path / "bare.gpkg"
    sqlite3.connect(path).close()
    batches: queue.Queue = queue.Queue()
    batches.put(None)  # the fetching thread's end: no rows
    writer = _Writer(path, ["a"], batches, None)
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive()
    assert isinstance(writer.error, sqlite3.OperationalError) and "gpkg_ogr_contents" in str(writer.error)
