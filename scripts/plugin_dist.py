"""Assemble the plugin folder, zip it for the plugin repository, or install it into a QGIS profile.

    python scripts/plugin_dist.py package dist/            # dist/geogpt_qgis-<version>.zip, checked
    python scripts/plugin_dist.py install --profiles-path .qgis-profile [--profile geogpt] [--set key=value ...]

The installed or zipped folder is what QGIS expects: the package with
``metadata.txt``, ``resources/``, ``i18n/`` (compiled translations), the
licence and ``requirements.txt`` (read by the in-plugin installer and by qpip)
inside, no caches, no tests.  ``package`` refuses to write a zip the plugin
repository would refuse (``package_checks``), its upload scan (Bandit with the repository's tests,
detect-secrets) included.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from configparser import ConfigParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "geogpt_qgis"
SKIP_DIRS = {"__pycache__"}
SKIP_SUFFIXES = {".pyc", ".pyo", ".ts", ".pro"}

sys.path.insert(0, str(Path(__file__).resolve().parent))
import package_checks  # noqa: E402 - a sibling script, found through the line above


class PackageError(Exception):
    """The plugin would be refused by the repository; ``problems`` says why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def version() -> str:
    parser = ConfigParser(interpolation=None)
    parser.read(REPO / "metadata.txt", encoding="utf-8")
    return parser["general"]["version"]


def _copy_tree(source: Path, target: Path) -> None:
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if any(part in SKIP_DIRS for part in relative.parts) or path.suffix in SKIP_SUFFIXES:
            continue
        destination = target / relative
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)


GUIDE = "help"  # the user guide's folder in the plugin (geogpt_qgis/toolbelt/help.py opens it)
# What the built guide never uses: source maps, and the search scripts (search is off: see mkdocs.yml).
GUIDE_UNUSED = ("assets/javascripts/lunr", "assets/javascripts/workers")


def build_guide(target: Path) -> list[str]:
    """The user guide (``make docs``) built into ``target``, so Help opens it from disk; problems, if any.

    MkDocs runs once per process for the same sources: a test session assembles the plugin a dozen times
    (packages, profiles), and each later guide is a copy of the first, made from the very same files.
    """
    key = _guide_sources_key()
    built = _GUIDES_BUILT.get(key)
    if built is not None and (built / "index.html").is_file():
        shutil.copytree(built, target, dirs_exist_ok=True)
        return []
    problems = _run_mkdocs(target)
    if not problems:
        keep = Path(tempfile.mkdtemp(prefix="geogpt-guide-"))
        atexit.register(shutil.rmtree, keep, True)
        shutil.copytree(target, keep, dirs_exist_ok=True)
        _GUIDES_BUILT[key] = keep
    return problems


# Guides built by this process, by the digest of every file they are made from (_guide_sources_key).
_GUIDES_BUILT: dict[str, Path] = {}


def _guide_sources_key() -> str:
    """A digest of what the guide is built from: its pages, MkDocs's config and hook, the results files."""
    results = Path(os.environ.get("GEOGPT_RESULTS_ROOT") or REPO)  # as scripts/docs_results.py reads them
    sources = [REPO / "mkdocs.yml", REPO / "scripts" / "docs_results.py", *sorted((REPO / "docs").rglob("*"))]
    sources += [results / "bench" / "results.json", results / "evals" / "results.json"]
    sources += [results / "evals" / "results-real.json", results / "evals" / "traps.json"]
    digest = hashlib.sha256(str(results).encode())
    for path in sources:
        if path.is_file():
            digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _run_mkdocs(target: Path) -> list[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",  # not --quiet: it hides warnings from strict mode
            "-f",
            str(REPO / "mkdocs.yml"),
            "-d",
            str(target),
        ],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not (target / "index.html").is_file():
        shutil.rmtree(target, ignore_errors=True)
        return [f"the user guide did not build (make docs): {(done.stderr or done.stdout)[-2000:]}"]
    for unused in GUIDE_UNUSED:
        shutil.rmtree(target / unused, ignore_errors=True)
    for source_map in target.rglob("*.map"):
        source_map.unlink()
    return []


def assemble(target: Path, guide_required: bool = False) -> Path:
    """Write the plugin folder at ``target/geogpt_qgis`` (replacing it) and return it.

    The user guide is built into it; without MkDocs (a venv not set up by ``make``) an
    installed development copy goes without (Help then opens the home page), a package never does.
    """
    folder = target / PACKAGE
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    _copy_tree(REPO / PACKAGE, folder)
    _copy_tree(REPO / "resources", folder / "resources")
    _copy_tree(REPO / "i18n", folder / "i18n")
    for name in ("metadata.txt", "LICENSE", "requirements.txt"):
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, folder / name)
    problems = build_guide(folder / GUIDE)
    if problems and guide_required:
        raise PackageError(problems)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    return folder


def package(
    out_dir: Path,
    max_bytes: int = package_checks.MAX_BYTES,
    bandit: bool = True,
    prepare: Callable[[Path], None] | None = None,
) -> Path:
    """The zip for plugins.qgis.org: one top-level folder named like the package, checked.

    ``prepare`` may change the assembled folder before the checks (tests plant bad
    files with it).  Raises :class:`PackageError` (and leaves no zip) when a check fails.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = out_dir / "staging"
    archive = out_dir / f"{PACKAGE}-{version()}.zip"
    archive.unlink(missing_ok=True)
    try:
        folder = assemble(staging, guide_required=True)
        if prepare is not None:
            prepare(folder)
        problems = package_checks.check_metadata(folder) + package_checks.check_files(folder)
        if bandit:
            problems += package_checks.upload_scan(folder)
        if problems:
            raise PackageError(problems)
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    zipped.write(path, path.relative_to(staging))
        problems = package_checks.check_archive(archive, max_bytes)
        if problems:
            archive.unlink()
            raise PackageError(problems)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return archive


def install(profiles_path: Path, profile: str, settings: dict[str, str]) -> Path:
    """Copy the plugin into a QGIS profile, enable it, and store plugin settings."""
    profile_dir = profiles_path / "profiles" / profile
    plugin_dir = assemble(profile_dir / "python" / "plugins")
    enable(profile_dir, settings)
    return plugin_dir


def install_zip(archive: Path, profile_dir: Path, settings: dict[str, str]) -> Path:
    """What "Install from ZIP" does: extract into ``<profile>/python/plugins`` and enable the plugin."""
    plugins = profile_dir / "python" / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(plugins)
    enable(profile_dir, settings)
    return plugins / PACKAGE


def enable(profile_dir: Path, settings: dict[str, str]) -> None:
    """Enable the plugin in the profile's QGIS3.ini, with no start-up network calls, and store plugin settings."""
    from qgis.PyQt.QtCore import QSettings

    ini = QSettings(str(profile_dir / "QGIS" / "QGIS3.ini"), QSettings.Format.IniFormat)
    ini.setValue(f"PythonPlugins/{PACKAGE}", True)
    ini.setValue("app/plugin_installer/checkOnStart", False)  # no network calls at start
    ini.setValue("qgis/checkVersion", False)
    ini.setValue(f"{PACKAGE}/dock_visible", True)
    for key, value in settings.items():
        ini.setValue(f"{PACKAGE}/{key}", value)
    ini.sync()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pack = commands.add_parser("package", help="build the plugin zip")
    pack.add_argument("out_dir", type=Path)
    inst = commands.add_parser("install", help="install into a QGIS profile and enable it")
    inst.add_argument("--profiles-path", type=Path, required=True)
    inst.add_argument("--profile", default="geogpt")
    inst.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a plugin setting")
    args = parser.parse_args(argv)
    if args.command == "package":
        try:
            print(package(args.out_dir))
        except PackageError as error:
            for problem in error.problems:
                print(f"error: {problem}", file=sys.stderr)
            return 1
    else:
        settings = dict(item.split("=", 1) for item in args.set)
        print(install(args.profiles_path, args.profile, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
