"""Where the user guide is, and opening it: the Help menu entry and the dock's links use this one place.

The guide is built with MkDocs (``make docs``) and shipped inside the plugin
zip as ``help/`` (``scripts/plugin_dist.py``), so it opens from disk with no
network, like the rest of the plugin.  From a clone, the guide that ``make
docs`` built in ``build/docs`` is used.  Only if neither exists (a plugin folder
assembled without it) does the plugin's home page from ``metadata.txt`` open.
"""

from __future__ import annotations

from pathlib import Path

from qgis.PyQt.QtCore import QUrl
from qgis.PyQt.QtGui import QDesktopServices

from geogpt_qgis.__about__ import HOMEPAGE, PACKAGE_DIR

GUIDE_FOLDER = "help"  # inside the installed plugin folder


def guide_folder() -> Path | None:
    """The folder of the built guide (with ``index.html``), shipped or built in the clone, or ``None``."""
    for candidate in (PACKAGE_DIR / GUIDE_FOLDER, PACKAGE_DIR.parent / "build" / "docs"):
        if (candidate / "index.html").is_file():
            return candidate
    return None


def guide_url(page: str = "index.html") -> QUrl:
    """The guide's ``page`` (``models.html``, ``threat-model.html``...) on disk, else the home page."""
    folder = guide_folder()
    if folder is None:
        return QUrl(HOMEPAGE)
    target = folder / page
    return QUrl.fromLocalFile(str(target if target.is_file() else folder / "index.html"))


def open_guide(page: str = "index.html") -> bool:
    """Open the guide in the system's browser; ``False`` when the system could not open it."""
    opened: bool = QDesktopServices.openUrl(guide_url(page))
    return opened
