"""Which Python packages QGIS ships and must never be replaced, and how to pin them for pip.

Installing the plugin's dependencies with pip could pull a newer numpy (or
GDAL, pyproj, PyQt...) over the one QGIS and its compiled libraries were
built against, and break QGIS.  Pip is therefore always given constraints
that pin every protected package already present to its installed version.
Used by ``make`` (for the development environment) and by the in-plugin
installer.
"""

from __future__ import annotations

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


def installed_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def protected_constraints() -> list[str]:
    """``name==version`` for every protected distribution this Python already has."""
    pins = []
    for name in PROTECTED_DISTRIBUTIONS:
        version = installed_version(name)
        if version:
            pins.append(f"{name}=={version}")
    return pins
