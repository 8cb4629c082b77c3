"""The user's default QGIS profile folder, for processes that start QGIS themselves (``ask``, ``mcp``).

Shared by the command line and the stdio MCP server, which must read the
same settings, saved connections and keys as QGIS desktop.
"""

from __future__ import annotations

import os
from pathlib import Path


def user_profile_folder() -> str:
    """The folder of the QGIS profile the user starts QGIS with, so the command reads the same settings.

    Named as QGIS desktop names itself (organisation "QGIS", application
    "QGIS3") before ``QgsApplication`` exists: otherwise Qt files the settings
    under "Unknown Organization" and the saved connections, model server and
    key of the plugin are never seen.  The profile is the user's default one
    (``profiles.ini``), under ``$QGIS_CUSTOM_CONFIG_PATH`` when that is set, as
    QGIS does.  The folder goes to ``QgsApplication`` as its profile argument
    (3.22 and 3.40+ both take it, with the platform name "desktop"), and QSettings is pointed at it.
    """
    from qgis.core import QgsApplication, QgsUserProfileManager
    from qgis.PyQt.QtCore import QCoreApplication, QSettings, QStandardPaths

    QCoreApplication.setOrganizationName(QgsApplication.QGIS_ORGANIZATION_NAME)
    QCoreApplication.setOrganizationDomain(QgsApplication.QGIS_ORGANIZATION_DOMAIN)
    QCoreApplication.setApplicationName(QgsApplication.QGIS_APPLICATION_NAME)
    base = os.environ.get("QGIS_CUSTOM_CONFIG_PATH") or QStandardPaths.writableLocation(
        QStandardPaths.StandardLocation.AppDataLocation
    )
    root = Path(QgsUserProfileManager.resolveProfilesFolder(base))
    chosen = QSettings(str(root / "profiles.ini"), QSettings.Format.IniFormat).value("core/defaultProfile", "")
    name = str(chosen or "default")
    if not (root / name).is_dir():
        name = "default"
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    # As QGIS's main() does: settings are an .ini file in the profile (QgsApplication leaves this to it).
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    return str(folder)
