"""PostGIS tools: a million geometries into the project, and describing a 10-million-row table.

1. ``run_sql`` on a query returning 1,000,000 points: the result appears in the
   project as a layer backed by the query (goal: 1 s or less).  Beside it, in
   the same run, the approach of web-map assistants: export the same result
   to GeoJSON and load the file.  Both times and the ratio are reported.
2. ``describe_table`` on a 10,000,000-row table (goal: 1 s or less).

The 10-million-row table (``bench.parcels_10m``, about 1 GB) is made once and
kept in the test database.

    python -m bench.postgis     prints one JSON line
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import headless_qgis, sized

ROWS = sized(10_000_000, 20_000)
RESULT_ROWS = sized(1_000_000, 5_000)
TABLE = sized("bench.parcels_10m", "bench.parcels_quick")
QUERY = f"SELECT id, landuse, geom FROM {TABLE} WHERE id <= {RESULT_ROWS}"
ROUNDS = sized(3, 1)
GOAL_SECONDS = 1.0


def ensure_big_table() -> None:
    from harness.postgis import connect

    with connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (TABLE,))
        found = cursor.fetchone()
        if found and found[0] >= ROWS * 0.99:
            return
        cursor.execute(
            f"""
            CREATE SCHEMA IF NOT EXISTS bench;
            DROP TABLE IF EXISTS {TABLE};
            CREATE TABLE {TABLE} AS
              SELECT i AS id,
                     (ARRAY['residential','commercial','industrial','farmland','forest'])[1 + i % 5] AS landuse,
                     (i::bigint * 7919 % 1000)::int AS value,
                     ST_SetSRID(ST_MakePoint(560000 + (i % 4000) * 2, 6200000 + (i / 4000) * 2), 25832)
                       ::geometry(Point, 25832) AS geom
              FROM generate_series(1, {ROWS}) i;
            ALTER TABLE {TABLE} ADD PRIMARY KEY (id);
            COMMENT ON TABLE {TABLE} IS 'Synthetic parcels for the benchmarks';
            ANALYZE {TABLE};
            """
        )
        conn.commit()


def geojson_round_trip(folder: Path) -> tuple[float, int]:
    """Export the result to a GeoJSON file and load it as a layer; seconds and features.

    The database writes the GeoJSON itself (the fastest way to produce it), so the
    comparison is not loaded against the file approach.
    """
    from qgis.core import QgsVectorLayer

    from harness.postgis import connect

    started = time.perf_counter()
    path = folder / "result.geojson"
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT json_build_object('type', 'FeatureCollection', 'features', "
            f"json_agg(ST_AsGeoJSON(t.*)::json))::text FROM ({QUERY}) t"
        )
        path.write_text(cursor.fetchone()[0])
    layer = QgsVectorLayer(str(path), "geojson", "ogr")
    count = layer.featureCount()
    return time.perf_counter() - started, count


def measure() -> dict[str, Any]:
    from qgis.core import QgsProject

    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools.base import ToolContext
    from geogpt_qgis.tools.postgis.family import PostgisTools
    from harness.postgis import saved_connection
    from harness.runs import call_in_thread

    ensure_big_table()
    project = QgsProject.instance()
    tools = PostgisTools(ToolContext(project=project, bridge=MainThreadBridge(), iface=None))
    tool_seconds, export_seconds, describe_seconds = [], [], []
    with saved_connection("bench") as name, tempfile.TemporaryDirectory() as work:
        for round_ in range(ROUNDS):
            started = time.perf_counter()
            call_in_thread(tools.run_sql, QUERY, name, f"parcels_{round_}")
            tool_seconds.append(time.perf_counter() - started)
            layer = project.mapLayersByName(f"parcels_{round_}")[0]
            assert layer.isValid()
            assert layer.featureCount() == RESULT_ROWS
            project.removeMapLayer(layer.id())
            if round_ == 0:  # takes minutes: once is enough for the comparison
                seconds, count = geojson_round_trip(Path(work))
                assert count == RESULT_ROWS
                export_seconds.append(seconds)
            started = time.perf_counter()
            text = call_in_thread(tools.describe_table, [TABLE], name).text
            describe_seconds.append(time.perf_counter() - started)
            assert "landuse" in text
    tool, export = statistics.median(tool_seconds), statistics.median(export_seconds)
    describe = statistics.median(describe_seconds)
    return {
        "result_rows": RESULT_ROWS,
        "table_rows": ROWS,
        "rounds": ROUNDS,
        "query_layer_seconds": [round(s, 3) for s in tool_seconds],
        "geojson_export_and_load_seconds": [round(s, 3) for s in export_seconds],
        "median_query_layer_seconds": round(tool, 3),
        "median_geojson_seconds": round(export, 3),
        "geojson_vs_query_layer_ratio": round(export / tool, 1),
        "describe_10m_seconds": [round(s, 3) for s in describe_seconds],
        "median_describe_10m_seconds": round(describe, 3),
        "goal_seconds": GOAL_SECONDS,
        "meets_layer_goal": tool <= GOAL_SECONDS,
        "meets_describe_goal": describe <= GOAL_SECONDS,
    }


if __name__ == "__main__":
    with headless_qgis():
        print(json.dumps(measure()))
