"""What plugins.qgis.org checks on upload, checked before the zip leaves the machine.

The rules follow the repository's validator (QGIS-Plugins-Website, formerly
QGIS-Django, ``plugins/validator.py``) and its security scan (Bandit with the
site's enabled tests and detect-secrets over the extracted zip: any finding
blocks the version, see ``BANDIT_MANDATORY``): one top-level folder with a PEP 8 name, ``__init__.py``,
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


# plugins.qgis.org's upload scan, from qgis/QGIS-Plugins-Website (commit 73c20fa9, 2026-07-23):
# qgis-app/plugins/security_scanner.py runs ``bandit -r <extracted zip> -f json --quiet -t <enabled tests>``
# (every severity) and ``detect-secrets scan --all-files --exclude-files metadata\.txt
# --exclude-files \.secrets\.baseline --disable-plugin <disabled> .``; the rules are
# management/commands/data/bandit_rules.json and secrets_rules.json.  A finding of a mandatory test
# (``can_be_skipped: false``) blocks the version; one of a skippable test blocks it until the uploader
# waives it on the form.  Update these lists together when the site changes its rules.
BANDIT_MANDATORY = (
    "B102", "B103", "B105", "B106", "B107", "B111", "B201", "B202", "B301", "B302", "B304", "B305", "B306",
    "B307", "B312", "B321", "B323", "B401", "B402", "B412", "B413", "B501", "B502", "B503", "B505", "B506",
    "B507", "B601", "B602", "B604", "B605", "B609", "B610", "B611", "B612", "B613", "B615", "B701",
)  # fmt: skip
BANDIT_SKIPPABLE = (
    "B101", "B104", "B108", "B110", "B112", "B113", "B303", "B308", "B310", "B311", "B313", "B314", "B315",
    "B316", "B317", "B318", "B319", "B320", "B324", "B403", "B405", "B406", "B407", "B408", "B409", "B504",
    "B508", "B509", "B603", "B606", "B607", "B608", "B614", "B702", "B703", "B704",
)  # fmt: skip
BANDIT_DISABLED = ("B109", "B404", "B410", "B411")  # in the site's list, "enabled": false
SECRETS_DISABLED = ("IPPublicDetector",)  # every other detect-secrets plugin runs
SECRETS_EXCLUDED = (r"metadata\.txt", r"\.secrets\.baseline")
# A waiver in the code: ``# nosec B603 # why`` -- the test id, then the reason after a second ``#`` (Bandit
# reads the words between ``nosec`` and the next ``#`` as test names, so the reason goes after it).
NOSEC = re.compile(r"#\s*nosec\b")
NOSEC_WITH_REASON = re.compile(r"#\s*nosec\s+B\d{3}(\s*,\s*B\d{3})*\s*#\s*\S.{9,}")


def bandit_findings(plugin_dir: Path) -> list[dict]:
    """The site's scan: ``bandit -r <plugin> -f json -q -t <the site's enabled tests>``, every severity."""
    tests = ",".join((*BANDIT_MANDATORY, *BANDIT_SKIPPABLE))
    done = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", str(plugin_dir), "-f", "json", "-q", "-t", tests],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    try:
        report = json.loads(done.stdout)
    except ValueError as exc:
        raise RuntimeError(f"bandit failed (exit {done.returncode}): {done.stderr[-2000:]}") from exc
    if report.get("errors"):
        raise RuntimeError(f"bandit could not scan: {report['errors'][:5]}")
    return report.get("results", [])


def describe_bandit(finding: dict, plugin_dir: Path) -> str:
    """One finding as a line: test, severity, whether the site lets the uploader waive it, where, what."""
    relative = Path(finding["filename"]).resolve().relative_to(plugin_dir.resolve()).as_posix()
    where = f"{relative}:{finding['line_number']}"
    kind = "mandatory" if finding["test_id"] in BANDIT_MANDATORY else "skippable"
    return f"bandit {finding['test_id']} ({finding['issue_severity'].lower()}, {kind}) {where}: {finding['issue_text']}"


def check_bandit(plugin_dir: Path) -> list[str]:
    """Every finding of the site's enabled tests: each one blocks the upload (a skippable one until waived)."""
    return [describe_bandit(finding, plugin_dir) for finding in bandit_findings(plugin_dir)]


def secrets_findings(plugin_dir: Path) -> list[str]:
    """The site's ``detect-secrets scan --all-files``, run in the folder that holds the plugin folder."""
    root = plugin_dir.parent
    command = [sys.executable, "-m", "detect_secrets", "scan", "--all-files"]
    for pattern in SECRETS_EXCLUDED:
        command += ["--exclude-files", pattern]
    for plugin in SECRETS_DISABLED:
        command += ["--disable-plugin", plugin]
    done = subprocess.run([*command, "."], cwd=root, capture_output=True, text=True, check=False, timeout=600)
    try:
        results = json.loads(done.stdout)["results"]
    except (ValueError, KeyError) as exc:
        raise RuntimeError(f"detect-secrets failed (exit {done.returncode}): {done.stderr[-2000:]}") from exc
    return [
        f"detect-secrets {secret['type']} {path}:{secret['line_number']}"
        for path, secrets in sorted(results.items())
        for secret in secrets
    ]


def nosec_lines(plugin_dir: Path) -> tuple[int, list[str]]:
    """How many lines waive a Bandit test, and those that do not name the test and a reason."""
    count, problems = 0, []
    for path in sorted(plugin_dir.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if NOSEC.search(line):
                count += 1
                if not NOSEC_WITH_REASON.search(line):
                    where = f"{path.relative_to(plugin_dir).as_posix()}:{number}"
                    problems.append(f"{where}: a nosec must name its test and say why (# nosec B603 # why)")
    return count, problems


def upload_scan(plugin_dir: Path) -> list[str]:
    """Everything the site's scan would report (each blocks the version), and every nosec without its why."""
    return check_bandit(plugin_dir) + secrets_findings(plugin_dir) + nosec_lines(plugin_dir)[1]
