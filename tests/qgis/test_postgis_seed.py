"""The PostGIS server of the test set-up holds the demo town, and QGIS reads it through its provider."""

from __future__ import annotations

import sqlite3

import pytest
from qgis.core import QgsDataSourceUri, QgsVectorLayer

from tests.support.demo import GPKG, ensure_demo
from tests.support.postgis import DSN, connect

pytestmark = pytest.mark.postgis

TABLES = ["districts", "roads", "rivers", "schools", "hospitals", "parks", "landuse"]


def test_the_demo_tables_match_the_geopackage():
    ensure_demo()
    with sqlite3.connect(GPKG) as gpkg, connect() as pg, pg.cursor() as cursor:
        cursor.execute("SELECT postgis_lib_version()")
        assert cursor.fetchone()[0].startswith("3.")
        for table in TABLES:
            cursor.execute(f"SELECT count(*), min(ST_SRID(geom)), max(ST_SRID(geom)) FROM {table}")
            count, low_srid, high_srid = cursor.fetchone()
            assert count == gpkg.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert low_srid == high_srid == 25832
        cursor.execute("SELECT type, count(*) FROM schools GROUP BY type ORDER BY type")
        assert (
            cursor.fetchall()
            == gpkg.execute("SELECT type, count(*) FROM schools GROUP BY type ORDER BY type").fetchall()
        )


def test_qgis_reads_the_tables_through_its_postgres_provider(qgis_app):
    params = dict(item.split("=", 1) for item in DSN.split())
    uri = QgsDataSourceUri()
    uri.setConnection(params["host"], params["port"], params["dbname"], params["user"], params["password"])
    uri.setDataSource("public", "schools", "geom", "", "fid")
    layer = QgsVectorLayer(uri.uri(False), "schools", "postgres")
    assert layer.isValid(), layer.error().summary()
    assert layer.crs().authid() == "EPSG:25832"
    with sqlite3.connect(GPKG) as gpkg:
        assert layer.featureCount() == gpkg.execute("SELECT count(*) FROM schools").fetchone()[0]
