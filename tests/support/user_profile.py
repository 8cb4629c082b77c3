"""The plugin's settings written where a headless process (``python -m geogpt_qgis ask|mcp``) reads them.

Those processes read the user's default QGIS profile (``toolbelt.qgis_profile``): on Linux
``$XDG_DATA_HOME/QGIS/QGIS3/profiles/default/QGIS/QGIS3.ini`` when ``$QGIS_CUSTOM_CONFIG_PATH`` is
unset.  A setting saved through this test process's ``PlgOptionsManager`` lands in pytest-qgis's own
profile instead, which no child process reads (issue 37: a check of the CLI relied on exactly that).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def settings_file(data_home: Path) -> Path:
    """The QGIS3.ini a child process started with ``child_env(data_home)`` reads."""
    return data_home / "QGIS" / "QGIS3" / "profiles" / "default" / "QGIS" / "QGIS3.ini"


def save_plugin_settings(data_home: Path, **values: Any) -> Path:
    """Write the plugin's settings (``PlgOptionsManager`` keys) as QGIS desktop would; returns the file."""
    from qgis.PyQt.QtCore import QSettings

    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    ini = settings_file(data_home)
    saved = QSettings(str(ini), QSettings.Format.IniFormat)
    for key, value in values.items():
        saved.setValue(f"{PlgOptionsManager.GROUP}/{key}", value)
    saved.sync()
    assert saved.status() == QSettings.Status.NoError, ini
    return ini


def child_env(data_home: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a headless child: its profile under ``data_home``, no key, offscreen."""
    env = {k: v for k, v in os.environ.items() if k not in ("QGIS_CUSTOM_CONFIG_PATH", "OPENAI_API_KEY")}
    return {**env, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(data_home), **extra}
