"""The PostgreSQL connections the user saved in QGIS, and which of them the agent may use (main thread).

Credentials come from where QGIS keeps them (the connection itself, an
authentication configuration, or a pg_service entry): the agent never asks
for a password, and never shows one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgis.core import QgsDataSourceUri, QgsProviderRegistry

from geogpt_qgis.core import secrets_scrub
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.thread_guard import provider_metadata

ALL = "*"


@dataclass(frozen=True)
class SavedConnection:
    """A saved connection resolved for use: ``conninfo`` carries credentials and is never shown."""

    name: str
    uri: str  # QGIS data source URI (keeps authcfg references) for layers
    conninfo: str = field(repr=False)  # libpq connection string, credentials expanded
    label: str = ""

    def __post_init__(self) -> None:
        # The expanded password (from the connection or its authentication configuration) is a secret from now on.
        expanded = QgsDataSourceUri(self.conninfo)
        secrets_scrub.register_password(expanded.password(), expanded.username(), expanded.database())


def saved_connection_names() -> list[str]:
    # Names only (QGIS's settings): safe on any thread, unlike resolve_connection.
    metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
    return sorted(metadata.connections().keys()) if metadata is not None else []


def allowed_connection_names(setting: str) -> list[str]:
    """Saved connections the setting allows (``*`` for all, else a comma-separated list)."""
    names = saved_connection_names()
    wanted = [n.strip() for n in (setting or "").split(",") if n.strip()]
    if ALL in wanted:
        return names
    return [n for n in names if n in wanted]


def _label(uri: QgsDataSourceUri) -> str:
    if uri.service():
        return f"service {uri.service()}"
    user = f"{uri.username()}@" if uri.username() else ""
    return f"{user}{uri.host() or 'localhost'}:{uri.port() or '5432'}/{uri.database()}"


def resolve_connection(name: str, allowed: list[str]) -> SavedConnection:
    """The saved connection called ``name``, if the agent may use it; no name means the only one."""
    name = (name or "").strip()
    if not name and len(allowed) == 1:
        name = allowed[0]
    elif not name and allowed:
        raise ToolError(f"name the connection, one of: {', '.join(allowed)}")
    if name not in allowed:
        if name in saved_connection_names():
            raise ToolError(f"the connection {name!r} is not enabled for GeoGPT (see the plugin settings)")
        if not allowed:
            raise ToolError("no saved PostgreSQL connection is enabled for GeoGPT")
        raise ToolError(did_you_mean(name, allowed, "connection"))
    metadata = provider_metadata("postgres")  # main thread: expanding an authcfg asks QGIS's auth manager
    connection = metadata.connections()[name]
    uri = QgsDataSourceUri(connection.uri())
    return SavedConnection(name, connection.uri(), uri.connectionInfo(True), _label(uri))


def describe_connections(allowed: list[str]) -> str:
    """One line per usable connection: name and where it points (no credentials)."""
    if not allowed:
        return "No saved PostgreSQL connection is enabled for GeoGPT."
    metadata = provider_metadata("postgres")
    lines = [f"{len(allowed)} PostgreSQL connection(s):"]
    for name in allowed:
        uri = QgsDataSourceUri(metadata.connections()[name].uri())
        lines.append(f"- {name}: {_label(uri)}")
    return "\n".join(lines)
