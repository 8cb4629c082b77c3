"""PostGIS tools against the real PostGIS server of the test set-up, through saved QGIS connections."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from qgis.core import QgsApplication, QgsAuthMethodConfig, QgsWkbTypes

from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.postgis.family import PostgisTools
from tests.support.model_server import ToolCall, Turn
from tests.support.net import free_port
from tests.support.postgis import READER_PASSWORD, connect, saved_connection
from tests.support.runs import call_in_thread, stop_midway, wait_until
from tests.support.saving import save

pytestmark = pytest.mark.postgis


@pytest.fixture(scope="module")
def fixtures_in_db():
    """Objects the tests need beyond the demo town: a function that writes, a table the reader may not read."""
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute(
            """
            CREATE SCHEMA IF NOT EXISTS geogpt_test;
            CREATE TABLE IF NOT EXISTS geogpt_test.audit (at timestamptz DEFAULT now(), note text);
            CREATE OR REPLACE FUNCTION geogpt_test.count_and_log() RETURNS bigint LANGUAGE sql VOLATILE AS
              $$ INSERT INTO geogpt_test.audit (note) VALUES ('called'); SELECT count(*) FROM geogpt_test.audit $$;
            CREATE TABLE IF NOT EXISTS geogpt_test.salaries (name text, salary int);
            REVOKE ALL ON geogpt_test.salaries FROM PUBLIC;
            GRANT USAGE ON SCHEMA geogpt_test TO geogpt_reader;
            GRANT SELECT ON public.schools TO geogpt_reader;
            COMMENT ON TABLE public.schools IS 'Schools of Elvbury';
            COMMENT ON COLUMN public.schools.pupils IS 'pupils enrolled in 2026';
            """
        )
        pg.commit()
    yield
    with connect() as pg, pg.cursor() as cursor:
        cursor.execute("DROP SCHEMA geogpt_test CASCADE; COMMENT ON TABLE public.schools IS NULL;")
        pg.commit()


@pytest.fixture
def elvbury(fixtures_in_db):
    with saved_connection("elvbury") as name:
        yield name


@pytest.fixture
def pg(tool_ctx, elvbury) -> PostgisTools:
    return PostgisTools(tool_ctx)


def call(tool, *args, **kwargs):
    return call_in_thread(tool, *args, **kwargs)


def sleeping_in_database() -> bool:
    """Whether a ``pg_sleep(30)`` query is running on the server."""
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
            "AND query LIKE '%%pg_sleep(30)%%' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0] > 0


def audit_rows() -> int:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM geogpt_test.audit")
        return cursor.fetchone()[0]


# -- connections -------------------------------------------------------------------
def test_saved_connections_are_found_and_can_be_restricted(pg, elvbury):
    assert pg.unavailable_reason() is None
    text = call(pg.describe_table).text  # no tables: the list; no connection named: the only one
    assert "- elvbury: geogpt@127.0.0.1:5432/geogpt_demo" in text
    assert "public.schools" in text
    assert "password" not in text
    PlgOptionsManager.set_value("postgis_connections", "another")
    assert pg.unavailable_reason() == "no saved PostgreSQL connection is enabled"
    with pytest.raises(ToolError, match="the connection 'elvbury' is not enabled for GeoGPT"):
        call(pg.describe_table, None, "elvbury")
    PlgOptionsManager.set_value("postgis_connections", "elvbury")
    with pytest.raises(ToolError, match="no connection 'elvbry'; did you mean 'elvbury'"):
        call(pg.describe_table, [], "elvbry")


def test_a_connection_with_an_authentication_configuration(tool_ctx, fixtures_in_db):
    manager = QgsApplication.authManager()
    if not manager.masterPasswordIsSet():
        assert manager.setMasterPassword("geogpt-test-master", True)
    config = QgsAuthMethodConfig()
    config.setName("geogpt test")
    config.setMethod("Basic")
    config.setConfig("username", "geogpt")
    config.setConfig("password", "geogpt")
    assert manager.storeAuthenticationConfig(config)[0]
    try:
        with saved_connection("elvbury-auth", authcfg=config.id()) as name:
            result = call(PostgisTools(tool_ctx).run_sql, "SELECT count(*) AS n FROM schools", name).text
            assert "| 31 |" in result
    finally:
        manager.removeAuthenticationConfig(config.id())


# -- catalogue -----------------------------------------------------------------------
def test_describe_table_without_tables_lists_geometry_srid_estimates_and_comments(pg, elvbury):
    text = call(pg.describe_table, None, elvbury).text
    assert "| public.schools | table | geom (POINT, SRID 25832) | ~31 | Schools of Elvbury |" in text
    assert "| public.roads | table | geom (LINESTRING, SRID 25832) | ~417 |" in text
    assert "spatial_ref_sys" not in text
    assert "geogpt_test.salaries" in text
    only = call(pg.describe_table, ["geogpt_test.*"], elvbury).text
    assert "public." not in only and "geogpt_test.salaries" in only
    assert call(pg.describe_table, ['"geogpt_test".*'], elvbury).text == only
    with pytest.raises(ToolError, match="no schema 'publc'; did you mean 'public'"):
        call(pg.describe_table, ["publc.*"], elvbury)
    with pytest.raises(ToolError, match="list one schema per call"):
        call(pg.describe_table, ["public.*", "schools"], elvbury)


def test_describe_table_from_statistics(pg, elvbury):
    text = call(pg.describe_table, ["schools"], elvbury)
    assert text.text.startswith("Table public.schools: ~31 rows — Schools of Elvbury")
    assert "Primary key: fid" in text.text
    assert "- type: character varying: primary 51.6%, secondary 38.7%, special 9.7%" in text.text
    assert "- pupils: integer — pupils enrolled in 2026: from 84 to 1188" in text.text
    assert "- geom: geometry(Point,25832): POINT, SRID 25832, 2D, extent ~BOX(" in text.text
    assert "(Values from the database's statistics.)" in text.text
    assert text.artifact.table_labels == (f"schools ({elvbury})",)  # for the Sources list: the table and its connection
    with pytest.raises(ToolError, match=r"no table or view 'schol'; did you mean 'public\.schools'"):
        call(pg.describe_table, ["schol"], elvbury)


def test_describe_samples_a_table_never_analysed(pg, elvbury):
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "DROP TABLE IF EXISTS geogpt_test.fresh; CREATE TABLE geogpt_test.fresh AS "
            "SELECT i AS id, (ARRAY['oak','oak','oak','beech','beech','pine'])[1 + i % 6] AS species "
            "FROM generate_series(1, 300) i"
        )
        conn.commit()
    text = call(pg.describe_table, ["geogpt_test.fresh"], elvbury).text
    assert "- species: text: oak 50.0%, beech 33.3%, pine 16.7%" in text
    assert "(Values sampled from up to 10,000 rows.)" in text


# -- queries ------------------------------------------------------------------------
def test_a_query_returns_a_table_and_the_total(pg, elvbury):
    sql = "SELECT name, pupils FROM schools ORDER BY pupils DESC, name"
    text = call(pg.run_sql, sql, elvbury).text
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(sql)
        expected = cursor.fetchall()
    assert len(expected) > 20
    assert text.startswith(f"{len(expected)} rows; first 20:")
    for name, pupils in expected[:20]:
        assert f"| {name} | {pupils} |" in text
    assert f"| {expected[20][0]} |" not in text


def test_numbers_are_shown_exactly_so_they_can_go_back_into_sql(pg, elvbury):
    """A float or numeric cell is the stored value (no rounding, exponent or commas): the model copies it into SQL."""
    values = "(1234567.891::float8), (0.00001234::float8), (55.976864::float8), (1e20::float8), (-2.5e-7::float8)"
    text = str(call(pg.run_sql, f"SELECT v, v::numeric AS n FROM (VALUES {values}) AS t(v)", elvbury).text)
    rows = [line.strip("|").split("|") for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 5, text
    for shown_float, shown_numeric in rows:
        assert "e" not in shown_float.lower() and "," not in shown_float, shown_float
        with connect() as conn, conn.cursor() as cursor:  # each shown value finds its row again in PostgreSQL
            cursor.execute(f"SELECT count(*) FROM (VALUES {values}) AS t(v) WHERE v = {shown_float.strip()}::float8")
            assert cursor.fetchone()[0] == 1, shown_float
            cursor.execute(f"SELECT count(*) FROM (VALUES {values}) AS t(v) WHERE v::numeric = {shown_numeric.strip()}")
            assert cursor.fetchone()[0] == 1, shown_numeric


def test_a_geometry_result_becomes_a_layer_copied_once(pg, elvbury, demo_project):
    text = call(pg.run_sql, "SELECT name, pupils, geom FROM schools WHERE type = 'secondary'", elvbury, "secondary_db")
    layer = demo_project.mapLayersByName("secondary_db")[0]
    assert layer.isValid()
    assert layer.providerType() == "ogr"  # a GeoPackage copy: reading it never runs SQL again
    assert layer.source().endswith("secondary_db.gpkg|layername=secondary_db")
    assert layer.crs().authid() == "EPSG:25832"
    assert QgsWkbTypes.displayString(layer.wkbType()) == "Point"
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM schools WHERE type = 'secondary'")
        expected = cursor.fetchone()[0]
    assert layer.featureCount() == expected == len(list(layer.getFeatures()))
    assert f"Added layer 'secondary_db': Point, {expected} features, EPSG:25832" in text.text
    # What the query read (from its parse tree) and the layer it added, without reading the text.
    assert text.artifact.table_labels == (f"schools ({elvbury})",)
    assert [(a.name, demo_project.mapLayer(a.layer_id)) for a in text.artifact.added] == [("secondary_db", layer)]
    assert sorted(layer.fields().names()) == ["fid", "name", "pupils"]
    assert "| POINT (SRID 25832) |" in text.text


def test_duplicate_names_and_a_second_geometry_survive_the_copy(pg, elvbury, demo_project):
    sql = "SELECT s.name, d.name, s.geom, d.geom AS district_geom FROM schools s JOIN districts d ON d.fid = 1 LIMIT 3"
    call(pg.run_sql, sql, elvbury, "pairs")
    layer = demo_project.mapLayersByName("pairs")[0]
    assert layer.fields().names() == ["fid", "name", "name_2", "district_geom"]
    feature = next(layer.getFeatures())
    assert feature["district_geom"].startswith(("POLYGON", "MULTIPOLYGON"))
    assert layer.featureCount() == 3


def test_a_query_layer_is_a_result_file_of_the_project_and_survives_saving(pg, elvbury, demo_project, tmp_path):
    """The copy was a file in QGIS's temporary folder, which QGIS deletes on exit: a saved project lost it."""
    from qgis.core import QgsProject

    from geogpt_qgis.core import result_files

    call(pg.run_sql, "SELECT name, pupils, geom FROM schools WHERE pupils > 300", elvbury, "big_schools")
    layer = demo_project.mapLayersByName("big_schools")[0]
    path = Path(layer.source().split("|")[0])
    assert path == result_files.results_folder_for(demo_project.fileName()) / "big_schools.gpkg"
    assert result_files.result_tables(path) == {"big_schools"}  # marked: moved on Save As, deleted once unused
    with connect() as db, db.cursor() as cursor:  # the same rows, asked of PostGIS itself
        cursor.execute("SELECT name FROM schools WHERE pupils > 300 ORDER BY name")
        expected = [name for (name,) in cursor.fetchall()]
    assert expected and sorted(f["name"] for f in layer.getFeatures()) == expected
    save(demo_project, file_name=tmp_path / "saved.qgz")
    reopened = QgsProject()
    try:
        assert reopened.read(str(tmp_path / "saved.qgz"))
        again = reopened.mapLayersByName("big_schools")[0]
        assert again.source().startswith(str(tmp_path / "saved_results" / "big_schools.gpkg"))
        assert sorted(f["name"] for f in again.getFeatures()) == expected
    finally:
        reopened.clear()


def test_mixed_single_and_multi_parts_become_a_multi_layer(pg, elvbury, demo_project):
    sql = (
        "SELECT 'single' AS kind, geom FROM parks WHERE fid = 1 "
        "UNION ALL SELECT 'multi', ST_Multi(geom) FROM parks WHERE fid = 2"
    )
    call(pg.run_sql, sql, elvbury, "mixed_parts")
    layer = demo_project.mapLayersByName("mixed_parts")[0]
    assert QgsWkbTypes.displayString(layer.wkbType()) == "MultiPolygon"
    assert layer.featureCount() == 2


def test_non_spatial_results_can_be_added_as_a_table(pg, elvbury, demo_project):
    call(pg.run_sql, "SELECT type, count(*) AS n FROM schools GROUP BY type", elvbury)
    assert not demo_project.mapLayersByName("schools_sql")  # not named: shown only
    call(pg.run_sql, "SELECT type, count(*) AS n FROM schools GROUP BY type", elvbury, "school_types")
    table = demo_project.mapLayersByName("school_types")[0]
    assert not table.isSpatial()
    assert sorted(f["type"] for f in table.getFeatures()) == ["primary", "secondary", "special"]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELEC name FROM schools", 'syntax error at or near "SELEC" (position 1)\nSELEC name FROM schools\n^'),
        (  # "WHER" reads as a table alias: PostgreSQL stumbles on the next word
            "SELECT name FROM schools WHER type = 'x'",
            'at or near "type" (position 31)\n'
            "SELECT name FROM schools WHER type = 'x'\n                              ^",
        ),
        ("SELECT * FROM schol", 'relation "schol" does not exist; did you mean public.schools?'),
        ("SELECT pupil FROM schools", 'column "pupil" does not exist; did you mean schools.pupils?'),
        ("SELECT 1; SELECT 2", "send one statement per call (got 2: SELECT, SELECT)"),
        ("DELETE FROM schools", "DELETE changes the database or the session; run_sql without write=true only reads"),
        ("DROP TABLE schools", "DROP changes the database or the session; run_sql without write=true only reads"),
        (
            "WITH gone AS (DELETE FROM schools RETURNING *) SELECT count(*) FROM gone",
            "the WITH query 'gone' is a DELETE, which changes the database; run_sql without write=true only reads, "
            "so nothing ran. If the user asked for this change, call run_sql again with write=true",
        ),
        ("SELECT geogpt_test.count_and_log()", "geogpt_test.count_and_log() is VOLATILE in this database"),
        (
            "SELECT ST_SetSRID(ST_MakePoint(10, 56), 4326) AS g "
            "UNION ALL SELECT ST_SetSRID(ST_MakePoint(560000, 6200000), 25832)",
            "the geometry column 'g' mixes SRIDs 4326 and 25832; a layer needs one: use ST_Transform(g, 25832)",
        ),
    ],
)
def test_bad_queries_are_explained_and_change_nothing(pg, elvbury, demo_project, sql, message):
    before_layers, before_audit = sorted(demo_project.mapLayers()), audit_rows()
    with pytest.raises(ToolError) as info:
        call(pg.run_sql, sql, elvbury)
    assert message in str(info.value)
    assert sorted(demo_project.mapLayers()) == before_layers
    assert audit_rows() == before_audit
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM schools")
        assert cursor.fetchone()[0] == 31


def test_permission_denied(tool_ctx, fixtures_in_db):
    with saved_connection("reader", user="geogpt_reader", password=READER_PASSWORD) as name:
        tools = PostgisTools(tool_ctx)
        assert "| 31 |" in call(tools.run_sql, "SELECT count(*) FROM schools", name).text
        with pytest.raises(
            ToolError, match="permission denied for table salaries: the database role of 'reader' may not read this"
        ):
            call(tools.run_sql, "SELECT * FROM geogpt_test.salaries", name)


def test_connection_refused_and_dropped(tool_ctx, fixtures_in_db):
    refused = r"cannot connect to 'nowhere' \(geogpt@127.0.0.1:\d+/geogpt_demo\):"
    with saved_connection("nowhere", port=str(free_port())) as name, pytest.raises(ToolError, match=refused):
        call(PostgisTools(tool_ctx).run_sql, "SELECT 1", name)
    with saved_connection("elvbury-drop") as name:
        tools = PostgisTools(tool_ctx)
        import threading

        done = threading.Event()
        killed: list[str] = []

        def kill_when_running() -> None:
            """End the query's connection as soon as it runs (on a loaded machine it may start late)."""
            # Each look is its own transaction (pg_stat_activity is a snapshot per transaction): autocommit, and no
            # ``with conn``, which opens a transaction even then (psycopg2 2.9).
            conn = connect()
            conn.autocommit = True
            with contextlib.closing(conn), conn.cursor() as cursor:
                while not done.is_set():
                    cursor.execute(
                        "SELECT query, pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name LIKE 'GeoGPT for QGIS%' AND query LIKE '%pg_sleep(5)%' "
                        "AND pid <> pg_backend_pid()"  # any state: the rows come by FETCH from a cursor
                    )
                    killed.extend(query for query, _ended in cursor.fetchall())
                    done.wait(0.02)  # polling the server for the query

        killer = threading.Thread(target=kill_when_running)
        killer.start()
        try:
            with pytest.raises(ToolError, match="the connection to 'elvbury-drop' was lost"):
                call(tools.run_sql, "SELECT pg_sleep(5) AS slept", name)
        finally:
            done.set()
            killer.join(10)
        assert killed, "the query was never seen running"


def test_a_huge_result_is_capped_and_the_model_is_told(pg, elvbury, demo_project):
    PlgOptionsManager.set_value("sql_row_cap", 100_000)
    sql = (
        "SELECT i AS id, ST_SetSRID(ST_MakePoint(560000 + i % 1000, 6200000 + i / 1000), 25832) AS geom "
        "FROM generate_series(1, 10000000) i"
    )
    started = time.monotonic()
    text = call(pg.run_sql, sql, elvbury, "ten_million").text
    assert time.monotonic() - started < 20
    assert text.startswith("more than 100,000 rows (capped at 100,000; refine the query); first 20:")
    layer = demo_project.mapLayersByName("ten_million")[0]
    assert layer.featureCount() == 100_000


def test_a_statement_timeout_is_explained(pg, elvbury):
    PlgOptionsManager.set_value("sql_timeout", 1.0)
    with pytest.raises(ToolError, match=r"the query ran longer than 1 s \(the statement timeout\) and was stopped"):
        call(pg.run_sql, "SELECT pg_sleep(3)", elvbury)


def test_stop_cancels_the_query_in_the_database(pg, elvbury):
    ended, seconds = stop_midway(pg.run_sql, "SELECT pg_sleep(30) AS slept", elvbury, after=0.5)
    assert ended == "cancelled"
    assert seconds < 1.0
    # The server stopped it, not just the client: the query is gone well before its 30 s (the cancel reaches the
    # server at once; on a loaded machine the backend may need a moment to end it).
    deadline = time.monotonic() + 10
    while sleeping_in_database():
        assert time.monotonic() < deadline, "the query still runs on the server 10 s after Stop"
        time.sleep(0.05)


# -- through the agent -----------------------------------------------------------------
def test_which_district_has_the_most_schools(model_server, worker, elvbury):
    from geogpt_qgis.agent.config import ModelConfig
    from tests.support.runs import RunRecorder

    sql = (
        "SELECT d.name, count(s.fid) AS schools FROM districts d JOIN schools s ON ST_Contains(d.geom, s.geom) "
        "GROUP BY d.name ORDER BY schools DESC LIMIT 3"
    )
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(sql)
        top = cursor.fetchall()
    answer = f"**{top[0][0]}** has the most schools: {top[0][1]}, ahead of {top[1][0]} ({top[1][1]})."
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("list_tables")]),  # the old name of describe_table without tables
            Turn(
                tool_calls=[ToolCall("describe_table", {"connection": "elvbury", "tables": ["districts", "schools"]})]
            ),
            Turn(tool_calls=[ToolCall("run_sql", {"connection": "elvbury", "sql": sql})]),
            Turn(text=answer),
        ]
    )
    recorder = RunRecorder(worker)
    run = worker.submit(
        "Which district has the most schools?", ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=30)
    )
    finished = recorder.wait(run, 60)
    assert finished.status == "finished", finished.error
    results = recorder.tool_results(run)
    assert [r.name for r in results] == ["list_tables", "describe_table", "run_sql"]
    assert all(r.ok for r in results)
    assert "| public.schools | table |" in results[0].result
    for name, count in top:
        assert f"| {name} | {count} |" in results[-1].result
    assert recorder.text(run) == answer
    tools_sent = [t["function"]["name"] for t in model_server.chat_requests()[0].body["tools"]]
    assert {"describe_table", "run_sql"} <= set(tools_sent) and "list_tables" not in tools_sent


def test_stop_in_the_dock_cancels_a_running_query(qgis_iface, demo_project, tmp_path, model_server, elvbury):
    from geogpt_qgis.gui.dock import ChatDock

    PlgOptionsManager.set_value("ollama_url", model_server.url)
    PlgOptionsManager.set_value("ollama_model", "qwen3:8b")
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("run_sql", {"connection": "elvbury", "sql": "SELECT pg_sleep(30) AS slept"})]),
            Turn(text="x"),
        ]
    )
    dock = ChatDock(qgis_iface, demo_project, store_path=tmp_path / "store.sqlite")
    dock.show()
    panel = dock.panel
    statuses: list[str] = []
    panel.run_finished.connect(statuses.append)
    panel.runs.send("sleep in the database")

    wait_until(sleeping_in_database, 15)
    pressed = time.monotonic()
    panel.runs.stop()
    wait_until(lambda: statuses == ["cancelled"], 5)
    assert time.monotonic() - pressed < 1.0
    wait_until(lambda: not sleeping_in_database(), 3)
    dock.shutdown()
    dock.deleteLater()
