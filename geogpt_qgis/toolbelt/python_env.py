"""The plugin's private package folder in the QGIS profile, and the Python that can run pip for QGIS.

The packages GeoGPT needs are installed into
``<profile>/geogpt_qgis/python-packages/<major>.<minor>``: per profile (deleting
the profile removes them, nothing is written into QGIS's own installation) and
per Python version (compiled wheels only fit the Python they were built for; a
QGIS upgrade that brings a new Python starts a fresh folder).

QGIS embeds Python, so ``sys.executable`` is often QGIS itself (``/usr/bin/qgis``,
``qgis-bin.exe``, ``QGIS.app/Contents/MacOS/QGIS``): running it with ``-m pip``
would start another QGIS.  The interpreter that shares QGIS's site-packages is
looked for next to the Python home instead, per platform; the installer then
checks that a candidate really is the same Python version before using it.
Nothing here imports Qt (the one profile lookup imports ``qgis.core`` lazily).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

PACKAGES_FOLDER = "python-packages"
_PYTHON_NAME = re.compile(r"^python(3(\.\d+)?)?(\.exe)?$", re.IGNORECASE)


def packages_dir(plugin_data_dir: Path, version: tuple[int, int] | None = None) -> Path:
    """Where pip installs the plugin's packages: ``<plugin data>/python-packages/<major>.<minor>``."""
    major, minor = version or sys.version_info[:2]
    return plugin_data_dir / PACKAGES_FOLDER / f"{major}.{minor}"


def _is_site_dir(entry: str) -> bool:
    return Path(entry).name in ("site-packages", "dist-packages")


def activate(folder: Path, path: list[str] | None = None) -> bool:
    """Put ``folder`` on ``sys.path`` just before the first site-packages entry; ``True`` if it was added.

    Before the site-packages so a package that QGIS's Python has in a version too old
    for GeoGPT is found in the folder; after QGIS's own entries (its ``python``
    folder, the plugin folders), which keep their place.  The installer removes
    from the folder every package QGIS ships (numpy, GDAL, PyQt...) and every one
    QGIS's Python already has in a version that fits, so in practice the folder only
    adds what is missing.  The folder need not exist yet: the installer creates it
    and then calls ``importlib.invalidate_caches()``.
    """
    entries = sys.path if path is None else path
    entry = str(folder)
    if entry in entries:
        return False
    index = next((i for i, existing in enumerate(entries) if _is_site_dir(existing)), len(entries))
    entries.insert(index, entry)
    sys.path_importer_cache.pop(entry, None)  # a cached "not a directory" from before the install
    return True


def profile_packages_dir() -> Path:
    """The private package folder of the QGIS profile running now."""
    from qgis.core import QgsApplication

    from geogpt_qgis.__about__ import PLUGIN_ID

    return packages_dir(Path(QgsApplication.qgisSettingsDirPath()) / PLUGIN_ID)


def activate_profile_packages() -> Path:
    """Make packages installed earlier importable; called by ``classFactory`` before anything imports them."""
    folder = profile_packages_dir()
    activate(folder)
    return folder


def python_candidates(
    executable: str,
    exec_prefix: str,
    platform: str = sys.platform,
    version: tuple[int, int] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Path]:
    """Interpreters that may be QGIS's Python, most likely first (they need not exist).

    ``executable``, ``exec_prefix`` and ``platform`` are ``sys.executable``,
    ``sys.exec_prefix`` and ``sys.platform`` of the QGIS process; passing them makes
    the search testable with fake directory trees.
    """
    major, minor = version or sys.version_info[:2]
    env = environ or {}
    candidates: list[Path] = []
    exe = Path(executable) if executable else None
    if exe is not None and _PYTHON_NAME.match(exe.name.replace("pythonw", "python")):
        # Already a Python (a venv, a plain interpreter, pythonw.exe in a GUI): its python(.exe) sibling.
        candidates.append(exe.with_name("python.exe") if exe.suffix.lower() == ".exe" else exe)
    prefix = Path(exec_prefix)
    if platform.startswith("win"):
        candidates.append(prefix / "python.exe")
        roots = [Path(env["OSGEO4W_ROOT"])] if env.get("OSGEO4W_ROOT") else []
        if exe is not None and exe.parent.name.lower() == "bin":
            roots.append(exe.parent.parent)  # <root>/bin/qgis-bin.exe
        if prefix.parent.name.lower() == "apps":
            roots.append(prefix.parent.parent)  # <root>/apps/Python3x
        for root in dict.fromkeys(roots):
            candidates.append(root / "apps" / f"Python{major}{minor}" / "python.exe")
            candidates += sorted((root / "apps").glob(f"Python{major}*/python.exe"), reverse=True)
            candidates += [root / "bin" / name for name in ("python-qgis.bat", "python-qgis-ltr.bat", "python3.exe")]
            candidates.append(root / "bin" / "python.exe")
    else:
        if platform == "darwin" and exe is not None:
            # QGIS.app/Contents/MacOS/QGIS ships QGIS.app/Contents/MacOS/bin/python3.
            candidates += [exe.parent / "bin" / f"python{major}.{minor}", exe.parent / "bin" / f"python{major}"]
        names = (f"python{major}.{minor}", f"python{major}", "python")
        candidates += [prefix / "bin" / name for name in names]
    return list(dict.fromkeys(candidates))


def find_python_candidates() -> list[Path]:
    """The candidates for this process that exist, most likely first."""
    import os

    found = python_candidates(sys.executable, sys.exec_prefix, sys.platform, sys.version_info[:2], os.environ)
    return [candidate for candidate in found if candidate.is_file()]
