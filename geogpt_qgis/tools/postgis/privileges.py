"""What a connection's database role could change, for the options page's warning (background thread).

GeoGPT's SQL runs read-only whatever the role may do, but the safest role
for an agent is one that can only SELECT: then even a flaw in every other
wall changes nothing.  This asks the server (read-only, short timeouts)
whether the role is a superuser, may create roles or databases, may insert,
update, delete or truncate in some table, or may create objects in some
schema or in the database.
"""

from __future__ import annotations

CONNECT_TIMEOUT = 5
SHOWN_TABLES = 3

_ROLE_SQL = (
    "SELECT current_user, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, "
    "has_database_privilege(current_database(), 'CREATE') FROM pg_roles WHERE rolname = current_user"
)
_TABLES_SQL = (
    "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'p', 'v', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname NOT LIKE 'pg_toast%' AND (has_table_privilege(c.oid, 'INSERT') "
    "OR has_table_privilege(c.oid, 'UPDATE') OR has_table_privilege(c.oid, 'DELETE') "
    "OR has_table_privilege(c.oid, 'TRUNCATE')) ORDER BY 1"
)
_SCHEMAS_SQL = (
    "SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND nspname NOT LIKE 'pg_%' AND has_schema_privilege(oid, 'CREATE') ORDER BY 1"
)


def write_powers(conninfo: str) -> tuple[str, list[str]]:
    """``(role, what it could change)``; an empty list means the role can only read."""
    import psycopg

    with psycopg.connect(
        conninfo,
        connect_timeout=CONNECT_TIMEOUT,
        application_name="GeoGPT for QGIS (settings)",
        options="-c default_transaction_read_only=on -c statement_timeout=10000",
    ) as pg:
        row = pg.execute(_ROLE_SQL).fetchone()
        if row is None:  # only if the session's role was dropped while connected
            raise LookupError("the server does not list this connection's role in pg_roles")
        role, superuser, create_role, create_db, bypass_rls, create_in_db = row
        tables = [name for (name,) in pg.execute(_TABLES_SQL).fetchall()]
        schemas = [name for (name,) in pg.execute(_SCHEMAS_SQL).fetchall()]
    powers = []
    if superuser:
        powers.append("is a superuser (can do anything, including reading server files and ending sessions)")
    if create_role:
        powers.append("can create roles")
    if create_db:
        powers.append("can create databases")
    if bypass_rls:
        powers.append("bypasses row-level security")
    if tables:
        shown = ", ".join(tables[:SHOWN_TABLES]) + (", ..." if len(tables) > SHOWN_TABLES else "")
        powers.append(f"can insert, update or delete in {len(tables)} table(s) ({shown})")
    if schemas:
        powers.append(f"can create objects in schema(s) {', '.join(schemas)}")
    if create_in_db:
        powers.append("can create schemas in the database")
    return role, powers
