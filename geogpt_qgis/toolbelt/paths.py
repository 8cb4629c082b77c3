"""Where the plugin finds its resources and keeps its files.

Installed, ``resources/`` and ``i18n/`` sit inside the plugin folder; in the
repository they sit beside the package.  Data the plugin writes (the
conversation store, temporary outputs) lives in the QGIS user profile.
"""

from __future__ import annotations

from pathlib import Path

from geogpt_qgis.__about__ import PACKAGE_DIR, PLUGIN_ID


def _first_existing(*candidates: Path) -> Path:
    for candidate in candidates:
        if candidate.exists():
            return candidate
    return candidates[0]


def resources_dir() -> Path:
    """The folder holding icons and other static resources."""
    return _first_existing(PACKAGE_DIR / "resources", PACKAGE_DIR.parent / "resources")


def icon_path(name: str) -> Path:
    """Path of an icon file in ``resources/icons``."""
    return resources_dir() / "icons" / name


def i18n_dir() -> Path:
    """The folder holding compiled translations (``.qm``)."""
    return _first_existing(PACKAGE_DIR / "i18n", PACKAGE_DIR.parent / "i18n")


def requirements_file() -> Path:
    """The plugin's ``requirements.txt``: what the installer (and qpip) installs."""
    return _first_existing(PACKAGE_DIR / "requirements.txt", PACKAGE_DIR.parent / "requirements.txt")


def profile_data_dir() -> Path:
    """A folder of the plugin's own inside the active QGIS user profile, created on demand."""
    from qgis.core import QgsApplication

    folder = Path(QgsApplication.qgisSettingsDirPath()) / PLUGIN_ID
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def temp_dir() -> Path:
    """The plugin's temporary folder (in the profile): files written here need no approval."""
    folder = profile_data_dir() / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def edit_copies_dir(create: bool = True) -> Path:
    """Where an edit saved at once (headless: no window to discard it from) first keeps the features it changes.

    ``create=False`` only names it (an approval card describes, it makes no folder).
    """
    from qgis.core import QgsApplication

    folder = Path(QgsApplication.qgisSettingsDirPath()) / PLUGIN_ID / "edit-copies"
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    return folder
