"""What plugins.qgis.org checks on upload, checked before the zip leaves the machine.

The rules follow the repository's validator (QGIS-Django ``plugins/validator.py``)
and its security scan (Bandit over the extracted plugin, medium and high
findings reported): one top-level folder with a PEP 8 name, ``__init__.py``,
``metadata.txt`` with the required keys spelled exactly (the server reads them
case-sensitively), ``LICENSE``, no ``__pycache__``/``.git``/``__MACOSX``, no
``.pyc``, no path tricks, 25 MB at most.  On top of that: no binaries of any
kind, no tests, an icon that exists, well-formed versions and URLs.  Each check
returns a list of problems (empty: fine) so the caller can show all of them.
"""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlparse

MAX_BYTES = 25_000_000  # the repository's PLUGIN_MAX_UPLOAD_SIZE
REQUIRED_KEYS = (
    "name",
    "qgisMinimumVersion",
    "description",
    "about",
    "version",
    "author",
    "email",
    "repository",
    "tracker",
)
OPTIONAL_KEYS = (
    "qgisMaximumVersion",
    "homepage",
    "changelog",
    "tags",
    "category",
    "icon",
    "experimental",
    "deprecated",
    "server",
    "hasProcessingProvider",
    "plugin_dependencies",
)
# Keys that neither QGIS (3.x's plugin manager, QGIS 4) nor the repository reads: QGIS 4 removed
# supportsQt6 (Qt 6 builds of QGIS 3 used it) and the repository flags it as deprecated; a license
# is the LICENSE file's job.  QGIS 4 compatibility is qgisMaximumVersion >= 4.0.
IGNORED_KEYS = ("supportsQt6", "license")
BOOLEAN_KEYS = ("experimental", "deprecated", "server")
# Keys QGIS's plugin manager fills in itself from the repository's plugins.xml; in metadata.txt they
# would be overridden at best, or make the manager show the wrong download, rating or trust.
FORBIDDEN_KEYS = (
    "download_url",
    "file_name",
    "downloads",
    "average_vote",
    "rating_votes",
    "trusted",
    "zip_repository",
    "version_available",
    "version_installed",
    "uploaded_by",
    "create_date",
    "update_date",
)
PLACEHOLDER_URLS = {"tracker": "http://bugs", "repository": "http://repo", "homepage": "http://homepage"}
BINARY_SUFFIXES = {
    ".so", ".dll", ".dylib", ".pyd", ".exe", ".pyc", ".pyo", ".o", ".obj", ".a", ".lib",
    ".bin", ".class", ".jar", ".whl", ".egg", ".msi", ".com", ".app", ".deb", ".rpm",
}  # fmt: skip
# Executable headers: ELF, Windows PE, Mach-O (both byte orders, 32/64-bit, universal).
BINARY_MAGIC = (b"\x7fELF", b"MZ", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xce", b"\xca\xfe\xba\xbe")
# Binary assets a plugin legitimately ships (icons, compiled translations).
ASSET_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".qm", ".svgz"}
FORBIDDEN_DIRS = {"__pycache__", ".git", "__MACOSX", "tests", "test", ".pytest_cache", ".ruff_cache"}
VERSION = re.compile(r"^\d+(\.\d+){1,3}([-.]?(alpha|beta|rc|dev|a|b)\.?\d*)?$", re.IGNORECASE)
QGIS_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
PACKAGE_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def check_metadata(plugin_dir: Path) -> list[str]:
    """Problems with ``plugin_dir/metadata.txt`` as the repository reads it."""
    meta = _read_metadata(plugin_dir / "metadata.txt")
    if isinstance(meta, str):
        return [meta]
    return _key_problems(meta) + _value_problems(meta, plugin_dir)


def _read_metadata(path: Path) -> dict[str, str] | str:
    """The ``[general]`` keys and values, or why they cannot be read."""
    if not path.is_file():
        return "metadata.txt is missing"
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign] - case-sensitive, like the repository
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (configparser.Error, UnicodeDecodeError) as exc:
        return f"metadata.txt cannot be read: {exc}"
    if not parser.has_section("general"):
        return "metadata.txt has no [general] section"
    return {key: value.strip() for key, value in parser.items("general")}


def _key_problems(meta: dict[str, str]) -> list[str]:
    """Keys missing, misspelt, or set by the repository itself."""
    problems = [f"metadata.txt: '{key}' is missing or empty" for key in REQUIRED_KEYS if not meta.get(key)]
    known = {key.lower(): key for key in (*REQUIRED_KEYS, *OPTIONAL_KEYS)}
    for key in meta:
        if key in FORBIDDEN_KEYS:
            problems.append(f"metadata.txt: '{key}' is set by the plugin repository and must not be in metadata.txt")
        elif key in IGNORED_KEYS:
            problems.append(f"metadata.txt: '{key}' is read by neither QGIS 4 nor the plugin repository: drop it")
        elif key not in known.values() and key.lower() in known:
            problems.append(f"metadata.txt: '{key}' must be spelled '{known[key.lower()]}'")
    return problems


def _value_problems(meta: dict[str, str], plugin_dir: Path) -> list[str]:
    """Values the repository would refuse: versions, addresses, booleans, the icon."""
    problems = []
    if meta.get("version") and not VERSION.match(meta["version"]):
        problems.append(f"metadata.txt: version '{meta['version']}' is not like 1.2.3 (or 1.2.3-beta1)")
    for key in ("qgisMinimumVersion", "qgisMaximumVersion"):
        if meta.get(key) and not QGIS_VERSION.match(meta[key]):
            problems.append(f"metadata.txt: {key} '{meta[key]}' is not like 3.22")
    low, high = meta.get("qgisMinimumVersion", ""), meta.get("qgisMaximumVersion", "")
    if QGIS_VERSION.match(low) and QGIS_VERSION.match(high) and _version_tuple(low) > _version_tuple(high):
        problems.append("metadata.txt: qgisMinimumVersion is above qgisMaximumVersion")
    if meta.get("email") and not re.match(r"^[^@\s]+@[^@\s]+\.[^@\s]+$", meta["email"]):
        problems.append(f"metadata.txt: email '{meta['email']}' is not an e-mail address")
    if "/" in meta.get("author", ""):
        problems.append("metadata.txt: author cannot contain slashes")
    for key in ("tracker", "repository", "homepage"):
        url = meta.get(key)
        if url and (
            url == PLACEHOLDER_URLS[key] or not all(urlparse(url)[:2]) or urlparse(url).scheme not in ("http", "https")
        ):
            problems.append(f"metadata.txt: {key} '{url}' is not a web address")
    for key in BOOLEAN_KEYS:
        if key in meta and meta[key].lower() not in ("true", "false", "1", "0"):
            problems.append(f"metadata.txt: {key} must be True or False, not '{meta[key]}'")
    icon = meta.get("icon", "")
    if not icon:
        problems.append("metadata.txt: no icon")
    elif not (plugin_dir / icon.removeprefix("./")).is_file():
        problems.append(f"metadata.txt: icon '{icon}' is not in the plugin folder")
    return problems


def check_files(plugin_dir: Path) -> list[str]:
    """Problems with what the plugin folder holds: binaries, caches, tests, a missing LICENSE or ``__init__.py``."""
    problems = []
    if not PACKAGE_NAME.match(plugin_dir.name):
        problems.append(f"folder name '{plugin_dir.name}' is not a PEP 8 package name")
    for required in ("__init__.py", "LICENSE"):
        if not (plugin_dir / required).is_file():
            problems.append(f"{required} is missing")
    for path in sorted(plugin_dir.rglob("*")):
        relative = path.relative_to(plugin_dir).as_posix()
        if path.is_dir():
            if path.name in FORBIDDEN_DIRS:
                problems.append(f"{relative}/: a {path.name} folder does not belong in the plugin")
            continue
        if path.name == "conftest.py" or (path.name.startswith("test_") and path.suffix == ".py"):
            problems.append(f"{relative}: tests do not belong in the plugin")
        if path.suffix.lower() in BINARY_SUFFIXES:
            problems.append(f"{relative}: binary files are not allowed ({path.suffix})")
        elif path.suffix.lower() not in ASSET_SUFFIXES:
            with path.open("rb") as handle:
                head = handle.read(4)
            if head.startswith(BINARY_MAGIC):
                problems.append(f"{relative}: an executable binary, which is not allowed")
    return problems


def check_archive(archive: Path, max_bytes: int = MAX_BYTES) -> list[str]:
    """Problems with the zip itself, as the repository's upload form sees it."""
    problems = []
    size = archive.stat().st_size
    if size > max_bytes:
        problems.append(f"{archive.name} is {size / 1e6:.1f} MB; the repository takes {max_bytes / 1e6:.1f} MB at most")
    with zipfile.ZipFile(archive) as zipped:
        names = zipped.namelist()
        bad = zipped.testzip()
    if bad:
        problems.append(f"{archive.name}: corrupt entry {bad}")
    tops = {name.split("/")[0] for name in names}
    if len(tops) != 1:
        problems.append(f"{archive.name} must hold exactly one top-level folder, not {sorted(tops)}")
    for name in names:
        parts = name.split("/")
        if ".." in parts or name.startswith("/"):
            problems.append(f"{archive.name}: '{name}' has path information")
        if name.endswith((".pyc", ".pyo")) or {"__pycache__", ".git", "__MACOSX"} & set(parts):
            problems.append(f"{archive.name}: '{name}' is not allowed")
    top = next(iter(tops)) if len(tops) == 1 else ""
    for required in ("__init__.py", "metadata.txt", "LICENSE"):
        if f"{top}/{required}" not in names:
            problems.append(f"{archive.name}: {top}/{required} is missing")
    return problems


def bandit_findings(plugin_dir: Path) -> list[dict]:
    """The repository's scan: ``bandit -r <plugin> -f json -q -ll`` (medium and high findings)."""
    done = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", str(plugin_dir), "-f", "json", "-q", "-ll"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    try:
        report = json.loads(done.stdout)
    except ValueError as exc:
        raise RuntimeError(f"bandit failed (exit {done.returncode}): {done.stderr[-2000:]}") from exc
    return report.get("results", [])


def check_bandit(plugin_dir: Path) -> tuple[list[str], list[str]]:
    """High-severity findings (problems) and medium ones (warnings, as the repository lists them)."""
    problems, warnings = [], []
    for finding in bandit_findings(plugin_dir):
        where = f"{Path(finding['filename']).relative_to(plugin_dir).as_posix()}:{finding['line_number']}"
        text = f"bandit {finding['test_id']} ({finding['issue_severity'].lower()}) {where}: {finding['issue_text']}"
        (problems if finding["issue_severity"] == "HIGH" else warnings).append(text)
    return problems, warnings
