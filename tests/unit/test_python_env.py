"""Finding QGIS's Python on Linux, Windows (OSGeo4W) and macOS, and the private package folder on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

from geogpt_qgis.toolbelt.python_env import activate, packages_dir, python_candidates


def _touch(root: Path, *relatives: str) -> None:
    for relative in relatives:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def _first_existing(candidates: list[Path]) -> Path | None:
    return next((c for c in candidates if c.is_file()), None)


def test_linux_qgis_binary_points_to_the_python_of_its_prefix(tmp_path):
    """sys.executable is /usr/bin/qgis in QGIS on Debian; the Python is <exec_prefix>/bin/python3.x."""
    _touch(tmp_path, "usr/bin/qgis", "usr/bin/python3.11", "usr/bin/python3")
    found = python_candidates(str(tmp_path / "usr/bin/qgis"), str(tmp_path / "usr"), "linux", (3, 11))
    assert tmp_path / "usr/bin/qgis" not in found
    assert _first_existing(found) == tmp_path / "usr/bin/python3.11"


def test_linux_without_versioned_name_falls_back_to_python3(tmp_path):
    _touch(tmp_path, "opt/qgis/bin/qgis", "opt/qgis/bin/python3")
    found = python_candidates(str(tmp_path / "opt/qgis/bin/qgis"), str(tmp_path / "opt/qgis"), "linux", (3, 12))
    assert _first_existing(found) == tmp_path / "opt/qgis/bin/python3"


def test_a_plain_python_is_used_as_it_is(tmp_path):
    _touch(tmp_path, "venv/bin/python", "usr/bin/python3.11")
    found = python_candidates(str(tmp_path / "venv/bin/python"), str(tmp_path / "usr"), "linux", (3, 11))
    assert found[0] == tmp_path / "venv/bin/python"


def test_windows_osgeo4w_uses_the_python_home_then_the_root(tmp_path):
    """OSGeo4W: qgis-bin.exe in <root>/bin, Python in <root>/apps/Python312 (= sys.exec_prefix)."""
    root = tmp_path / "OSGeo4W"
    _touch(root, "bin/qgis-bin.exe", "apps/Python312/python.exe", "bin/python-qgis.bat")
    found = python_candidates(
        str(root / "bin/qgis-bin.exe"), str(root / "apps/Python312"), "win32", (3, 12), {"OSGEO4W_ROOT": str(root)}
    )
    assert found[0] == root / "apps/Python312/python.exe"
    assert root / "bin/python-qgis.bat" in found
    assert found.index(root / "apps/Python312/python.exe") < found.index(root / "bin/python-qgis.bat")


def test_windows_finds_the_osgeo4w_python_when_the_prefix_is_elsewhere(tmp_path):
    """A standalone installer whose exec_prefix has no python.exe: <root>/apps/Python3x, found through OSGEO4W_ROOT."""
    root = tmp_path / "QGIS 3.40"
    _touch(root, "bin/qgis-ltr-bin.exe", "apps/Python312/python.exe", "apps/Python39/python.exe")
    found = python_candidates(
        str(root / "bin/qgis-ltr-bin.exe"), str(tmp_path / "elsewhere"), "win32", (3, 12), {"OSGEO4W_ROOT": str(root)}
    )
    assert _first_existing(found) == root / "apps/Python312/python.exe"


def test_windows_without_osgeo4w_root_derives_it_from_the_qgis_binary(tmp_path):
    root = tmp_path / "OSGeo4W"
    _touch(root, "bin/qgis-bin.exe", "bin/python-qgis-ltr.bat")
    found = python_candidates(str(root / "bin/qgis-bin.exe"), str(root / "apps/Python312"), "win32", (3, 12), {})
    assert _first_existing(found) == root / "bin/python-qgis-ltr.bat"


def test_windows_pythonw_means_its_python_exe(tmp_path):
    _touch(tmp_path, "py/pythonw.exe", "py/python.exe")
    found = python_candidates(str(tmp_path / "py/pythonw.exe"), str(tmp_path / "py"), "win32", (3, 12), {})
    assert found[0] == tmp_path / "py/python.exe"


def test_macos_app_bundle_python_next_to_the_qgis_binary(tmp_path):
    """QGIS.app/Contents/MacOS/QGIS ships QGIS.app/Contents/MacOS/bin/python3."""
    app = tmp_path / "QGIS.app/Contents"
    _touch(app, "MacOS/QGIS", "MacOS/bin/python3", "Frameworks/bin/python3.11")
    found = python_candidates(str(app / "MacOS/QGIS"), str(app / "Frameworks"), "darwin", (3, 11))
    assert _first_existing(found) == app / "MacOS/bin/python3"


def test_macos_framework_python_when_the_bundle_has_none(tmp_path):
    app = tmp_path / "QGIS.app/Contents"
    framework = app / "Frameworks/Python.framework/Versions/3.11"
    _touch(app, "MacOS/QGIS")
    _touch(framework, "bin/python3.11")
    found = python_candidates(str(app / "MacOS/QGIS"), str(framework), "darwin", (3, 11))
    assert _first_existing(found) == framework / "bin/python3.11"


def test_packages_dir_is_per_python_version(tmp_path):
    assert packages_dir(tmp_path, (3, 12)) == tmp_path / "python-packages" / "3.12"
    assert packages_dir(tmp_path) == tmp_path / "python-packages" / f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_activate_puts_the_folder_before_site_packages_once():
    path = ["/usr/share/qgis/python", "/profile/python/plugins", "/usr/lib/python3/dist-packages", "/x"]
    folder = packages_dir(Path("/profile/geogpt_qgis"))
    assert activate(folder, path) is True
    assert path.index(str(folder)) == 2  # after QGIS's own folders, before the site-packages
    assert activate(folder, path) is False
    assert path.count(str(folder)) == 1


def test_activate_appends_when_there_is_no_site_packages():
    path = ["/a", "/b"]
    activate(Path("/f"), path)
    assert path == ["/a", "/b", "/f"]
