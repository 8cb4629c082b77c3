"""The tables a SQL write names, resolved: which server and database, which table (its oid), what is done to it.

An approved ``DELETE FROM notes`` is a contract on the ``notes`` table that
existed when the card was shown, in the database the saved connection then
pointed to: a table dropped and made again under the same name has another
oid, and a connection edited to point elsewhere has another place, so the
call no longer matches what was approved (``core.targets``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgis.core import QgsDataSourceUri

from geogpt_qgis.core.secrets_scrub import scrub_value
from geogpt_qgis.core.targets import TABLE, Target

if TYPE_CHECKING:
    from geogpt_qgis.tools.postgis.connections import SavedConnection
    from geogpt_qgis.tools.postgis.database import Database
    from geogpt_qgis.tools.safety.sql import Classified

_RESOLVE = (
    "SELECT n.nspname, c.relname, c.oid::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.oid = to_regclass(%s)"
)


def connection_place(saved: SavedConnection) -> str:
    """Where a saved connection leads: service or host and port, database and role (never the password)."""
    uri = QgsDataSourceUri(saved.conninfo)
    server = f"service {uri.service()}" if uri.service() else f"{uri.host() or 'localhost'}:{uri.port() or '5432'}"
    return f"connection {saved.name!r}: {server}, database {uri.database()!r}, role {uri.username()!r}"


def table_targets(db: Database, saved: SavedConnection, statement: Classified) -> list[Target]:
    """The tables ``statement`` writes, each by its schema, name and oid in the connection's database now."""
    place = connection_place(saved)
    ops = (statement.kind.lower(),)
    targets = []
    for name in dict.fromkeys(statement.targets):
        found = db.rows(_RESOLVE, (name,))
        if found:
            schema, table, oid = found[0]
            targets.append(Target(TABLE, name, f"{saved.name}/{schema}.{table}", place, f"oid {oid}", ops))
        else:
            targets.append(Target(TABLE, name, f"{saved.name}/{name}", place, "absent", ops))
    return [Target.from_value(scrub_value(t.to_dict())) for t in targets]  # as the approval stored them
