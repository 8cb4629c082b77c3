"""The PostGIS server that ``make test`` starts (scripts/postgis.sh), seeded with the demo town."""

from __future__ import annotations

import os

DSN = os.environ.get("GEOGPT_TEST_PG", "host=127.0.0.1 port=5432 dbname=geogpt_demo user=geogpt password=geogpt")


def connect():
    import psycopg2

    return psycopg2.connect(DSN, connect_timeout=5)
