"""metadata.txt as QGIS's plugin manager and the plugin repository read it: QGIS 3.22 up to every QGIS 4.

The repository lists a plugin for QGIS 4 when ``qgisMaximumVersion`` is 4.0 or more (the temporary
``supportsQt6`` flag is deprecated there and QGIS 4 removed it); QGIS's plugin manager refuses a
plugin outside ``qgisMinimumVersion``..``qgisMaximumVersion``, compared by its own
``pyplugin_installer.version_compare.isCompatible``, which this test runs.
"""

from __future__ import annotations

import configparser
import sys
from pathlib import Path

import pytest
from qgis.core import QgsApplication

ROOT = Path(__file__).resolve().parents[2]
# Every key QGIS's plugin manager or the plugin repository reads from metadata.txt (and that we use).
READ_KEYS = {
    "name", "qgisMinimumVersion", "qgisMaximumVersion", "description", "about", "version", "author", "email",
    "tracker", "repository", "homepage", "changelog", "tags", "category", "icon", "experimental", "deprecated",
    "hasProcessingProvider", "server",
}  # fmt: skip


@pytest.fixture(scope="module")
def general() -> dict[str, str]:
    """The [general] keys, case-sensitive as the repository's validator reads them."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(ROOT / "metadata.txt", encoding="utf-8")
    return dict(parser["general"])


@pytest.fixture(scope="module")
def is_compatible():
    """QGIS's own check of a QGIS version against a plugin's minimum and maximum."""
    sys.path.insert(0, str(Path(QgsApplication.pkgDataPath()) / "python"))
    try:
        from pyplugin_installer.version_compare import isCompatible
    finally:
        sys.path.pop(0)
    return isCompatible


def test_versions_span_qgis_3_22_to_every_qgis_4(general, is_compatible):
    assert general["qgisMinimumVersion"] == "3.22"
    assert general["qgisMaximumVersion"] == "4.99"
    low, high = general["qgisMinimumVersion"], general["qgisMaximumVersion"]
    for qgis in ("3.22.16", "3.34.0", "3.40.6", "3.44.15", "4.0.0", "4.2.1", "4.99.0"):
        assert is_compatible(qgis, low, high), qgis
    for qgis in ("3.16.0", "3.20.3", "5.0.0"):
        assert not is_compatible(qgis, low, high), qgis


def test_only_keys_that_qgis_4_or_the_repository_read(general):
    assert set(general) <= READ_KEYS, sorted(set(general) - READ_KEYS)
    assert "supportsQt6" not in general and "license" not in general
    assert (ROOT / "LICENSE").is_file()  # what the repository checks instead of a license key


def test_the_package_check_refuses_keys_qgis_4_ignores(tmp_path):
    """make package fails on supportsQt6 or license, so they do not come back."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import package_checks
    finally:
        sys.path.pop(0)
    plugin = tmp_path / "geogpt_qgis"
    (plugin / "resources" / "icons").mkdir(parents=True)
    (plugin / "resources" / "icons" / "geogpt.svg").write_text((ROOT / "resources/icons/geogpt.svg").read_text())
    text = (ROOT / "metadata.txt").read_text(encoding="utf-8")
    (plugin / "metadata.txt").write_text(text)
    before = package_checks.check_metadata(plugin)
    (plugin / "metadata.txt").write_text(text + "supportsQt6=True\nlicense=GPL-2.0-or-later\n")
    after = package_checks.check_metadata(plugin)
    assert sorted(set(after) - set(before)) == [
        "metadata.txt: 'license' is read by neither QGIS 4 nor the plugin repository: drop it",
        "metadata.txt: 'supportsQt6' is read by neither QGIS 4 nor the plugin repository: drop it",
    ]
