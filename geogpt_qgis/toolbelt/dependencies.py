"""Which Python packages QGIS ships and must never be replaced, and how to pin them for pip.

Installing the plugin's dependencies with pip could pull a newer numpy (or
GDAL, pyproj, PyQt...) over the one QGIS and its compiled libraries were
built against, and break QGIS.  Pip is therefore always given constraints
that pin every protected package already present to its installed version.
Used by ``make`` (for the development environment) and by the in-plugin
installer.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata

# Distributions QGIS or its Python bindings depend on in compiled form.
PROTECTED_DISTRIBUTIONS = (
    "numpy",
    "GDAL",
    "pyproj",
    "PyQt5",
    "PyQt5-sip",
    "PyQt6",
    "PyQt6-sip",
    "shapely",
    "matplotlib",
    "scipy",
    "psycopg2",
    "lxml",
)


# What the agent imports, top-level modules only (finding a submodule's spec would import its
# parents), with the distribution that provides each: the dock names these when they are missing.
REQUIRED_MODULES = {
    "langgraph": "langgraph",
    "aiosqlite": "langgraph-checkpoint-sqlite",
    "langchain_core": "langchain-core",
    "langchain_ollama": "langchain-ollama",
    "langchain_openai": "langchain-openai",
    "pglast": "pglast",  # the SQL classifier (tools/safety/sql.py)
    "psycopg": "psycopg[binary]",  # PostGIS tools: extended query protocol
    "defusedxml": "defusedxml",  # capabilities documents from servers (tools/maps/web.py)
    "mcp": "mcp",  # the MCP server (mcp_server/), imported only when it starts
}


def installed_version(distribution: str, path: list[str] | None = None) -> str | None:
    """The version of ``distribution`` found on ``path`` (default ``sys.path``), or ``None``."""
    if path is None:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None
    found = next(iter(metadata.distributions(name=distribution, path=path)), None)
    return found.version if found is not None else None


def protected_versions(path: list[str] | None = None) -> dict[str, str]:
    """Name and version of every protected distribution present on ``path`` (default ``sys.path``)."""
    found = {name: installed_version(name, path) for name in PROTECTED_DISTRIBUTIONS}
    return {name: version for name, version in found.items() if version}


def protected_constraints(path: list[str] | None = None) -> list[str]:
    """``name==version`` for every protected distribution this Python already has."""
    return [f"{name}=={version}" for name, version in protected_versions(path).items()]


def missing_packages() -> list[str]:
    """Distributions the agent needs whose modules this QGIS cannot import."""
    missing = []
    for module, package in REQUIRED_MODULES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(package)
    return missing
