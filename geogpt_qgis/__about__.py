"""Plugin identity read once from ``metadata.txt``.

The metadata file sits inside the plugin folder when installed and at the top
of the repository during development; both places are tried so the title and
version live in exactly one file.
"""

from __future__ import annotations

from configparser import ConfigParser
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _find_metadata() -> Path:
    for candidate in (PACKAGE_DIR / "metadata.txt", PACKAGE_DIR.parent / "metadata.txt"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("metadata.txt not found next to or above the geogpt_qgis package")


def _read_metadata() -> dict[str, str]:
    parser = ConfigParser(interpolation=None)
    parser.read(_find_metadata(), encoding="utf-8")
    return dict(parser["general"])


_META = _read_metadata()

PLUGIN_ID = "geogpt_qgis"
TITLE: str = _META["name"]
VERSION: str = _META["version"]
DESCRIPTION: str = _META["description"]
TRACKER: str = _META["tracker"]
REPOSITORY: str = _META["repository"]
HOMEPAGE: str = _META.get("homepage") or _META["repository"]
QGIS_MINIMUM_VERSION: str = _META["qgisminimumversion"]
QGIS_MAXIMUM_VERSION: str = _META["qgismaximumversion"]
