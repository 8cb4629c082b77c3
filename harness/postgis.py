"""The PostGIS server that ``make test`` starts (scripts/postgis.sh), seeded with the demo town,
and saved QGIS connections to it made through QGIS's own connection API."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

DSN = os.environ.get("GEOGPT_TEST_PG", "host=127.0.0.1 port=5432 dbname=geogpt_demo user=geogpt password=geogpt")
PARAMS = dict(item.split("=", 1) for item in DSN.split())
READER_PASSWORD = "reader"  # the geogpt_reader role made by scripts/postgis.sh
SUPER_USER, SUPER_PASSWORD = "geogpt_super", "super"  # a SUPERUSER role made by scripts/postgis.sh


def connect(dsn: str = DSN):
    import psycopg2

    return psycopg2.connect(dsn, connect_timeout=5)


@contextmanager
def saved_connection(
    name: str,
    user: str | None = None,
    password: str | None = None,
    port: str | None = None,
    authcfg: str = "",
) -> Iterator[str]:
    """Save a PostgreSQL connection in QGIS (as the Data Source Manager does), remove it afterwards."""
    from qgis.core import QgsDataSourceUri, QgsProviderRegistry

    uri = QgsDataSourceUri()
    uri.setConnection(
        PARAMS["host"],
        port or PARAMS["port"],
        PARAMS["dbname"],
        "" if authcfg else (user if user is not None else PARAMS["user"]),
        "" if authcfg else (password if password is not None else PARAMS["password"]),
        QgsDataSourceUri.SslMode.SslDisable,
        authcfg,
    )
    metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
    connection = metadata.createConnection(uri.uri(False), {"saveUsername": True, "savePassword": True})
    metadata.saveConnection(connection, name)
    try:
        yield name
    finally:
        metadata.deleteConnection(name)
