"""The plugin's server-side sessions: named after the process that opened them, dropped when it dies.

Stop cancels a running statement on the server (``Database``).  A process
that is killed cannot: its query would run on until the statement timeout
(PostgreSQL only notices a vanished client when it next writes to it, and
``pg_sleep`` or a long aggregate writes nothing).  Two defences:

- every session asks the server to check its client's socket every second
  while a query runs (``client_connection_check_interval``, PostgreSQL 14+),
  so the server itself ends the query of a killed process within a second
  or two;
- every session's ``application_name`` carries the process id and a short
  tag of the machine, so the next start of the plugin or the headless
  command cancels (``pg_cancel_backend``) the queries still running for a
  process of this machine that no longer exists (older servers, a dropped
  network).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

from geogpt_qgis.core.run_log import process_alive

log = logging.getLogger(__name__)

APP_NAME = "GeoGPT for QGIS"
CHECK_INTERVAL_MS = 1000
CHECK_INTERVAL_SINCE = 140000  # server_version of PostgreSQL 14
SWEEP_CONNECT_TIMEOUT = 5
_TAGGED = re.compile(rf"^{re.escape(APP_NAME)} \[pid (\d+) on ([0-9a-f]{{8}})\]$")


def host_tag() -> str:
    """A short, stable tag of this machine (its name is not sent to the server)."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def application_name(pid: int | None = None) -> str:
    """``GeoGPT for QGIS [pid 1234 on 1a2b3c4d]``: what pg_stat_activity shows for our sessions (< 64 bytes)."""
    return f"{APP_NAME} [pid {os.getpid() if pid is None else pid} on {host_tag()}]"


def owner_pid(name: str) -> int | None:
    """The process id of a session named by ``application_name`` on this machine, else ``None``."""
    match = _TAGGED.match(name or "")
    if match is None or match.group(2) != host_tag():
        return None
    return int(match.group(1))


def watch_client(pg: Any) -> None:
    """Ask the server to end this session's query soon after the client goes away (PostgreSQL 14+).

    Set for the whole session (committed), so a rolled-back statement does not undo it.
    """
    info = getattr(pg, "info", None)  # psycopg 3 keeps it there, psycopg2 on the connection
    version = getattr(info, "server_version", 0) or getattr(pg, "server_version", 0)
    if version < CHECK_INTERVAL_SINCE:
        return
    with pg.cursor() as cursor:
        cursor.execute(f"SET client_connection_check_interval = {CHECK_INTERVAL_MS}")
    pg.commit()


def cancel_orphans(conninfo: str) -> list[int]:
    """Cancel queries still running for dead processes of this machine; return their backend pids.

    Only sessions named by ``application_name`` are looked at, and only those
    of the same database role can be cancelled (PostgreSQL's own rule).
    """
    pg = _driver().connect(conninfo, connect_timeout=SWEEP_CONNECT_TIMEOUT, application_name=application_name())
    try:
        pg.autocommit = True
        with pg.cursor() as cursor:
            cursor.execute(
                "SELECT pid, application_name FROM pg_stat_activity WHERE state <> 'idle' "
                "AND application_name LIKE %s AND pid <> pg_backend_pid()",
                [f"{APP_NAME} [pid %"],
            )
            orphans = [pid for pid, name in cursor.fetchall() if not _alive_owner(name)]
            for pid in orphans:
                cursor.execute("SELECT pg_cancel_backend(%s)", [pid])
        return orphans
    finally:
        pg.close()


def _driver() -> Any:
    """psycopg (3), else psycopg2: both connect and run these few statements alike."""
    try:
        import psycopg

        return psycopg
    except ImportError:
        import psycopg2

        return psycopg2


def _alive_owner(name: str) -> bool:
    pid = owner_pid(name)
    return pid is None or process_alive(pid)  # another machine's, or a live process: not ours to cancel


def sweep_in_background(conninfos: Iterable[str], done: Callable[[], None] | None = None) -> threading.Thread:
    """Run ``cancel_orphans`` on each connection in a daemon thread (start-up must not wait for a server)."""
    targets = list(conninfos)

    def sweep() -> None:
        for conninfo in targets:
            try:
                cancelled = cancel_orphans(conninfo)
            except Exception as exc:  # noqa: BLE001 - an unreachable server is not an error at start-up
                log.debug("orphan sweep skipped: %s", type(exc).__name__)
                continue
            if cancelled:
                log.info("cancelled %d query(ies) left running by a GeoGPT process that ended", len(cancelled))
        if done is not None:
            done()

    thread = threading.Thread(target=sweep, name="geogpt-pg-sweep", daemon=True)
    thread.start()
    return thread


def sweep_saved_connections() -> threading.Thread | None:
    """At start-up (main thread): sweep the saved connections the agent may use, in the background.

    Connections whose password sits behind a QGIS authentication configuration
    are skipped: reading it could ask for the master password at start-up.
    """
    import importlib.util

    if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is None:
        return None
    from qgis.core import QgsDataSourceUri

    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from geogpt_qgis.tools.postgis.connections import allowed_connection_names
    from geogpt_qgis.tools.thread_guard import provider_metadata

    names = allowed_connection_names(PlgOptionsManager.get_plg_settings().postgis_connections)
    if not names:
        return None
    saved = provider_metadata("postgres").connections()
    uris = [QgsDataSourceUri(saved[name].uri()) for name in names if name in saved]
    return sweep_in_background([uri.connectionInfo(False) for uri in uris if not uri.authConfigId()])
