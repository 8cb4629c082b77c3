"""After pip: take out of the private package folder what QGIS's Python already provides.

``pip install --target`` ignores what is installed, so the folder receives a full
copy of every dependency: numpy included, even when pinned to QGIS's own version.
The folder comes before site-packages on ``sys.path``, so such a copy would shadow
QGIS's.  Therefore:

- every protected distribution (numpy, GDAL, pyproj, PyQt...) that QGIS's Python
  has is removed from the folder, always;
- every other distribution QGIS's Python already has, in a version that satisfies
  everything that uses it, is removed as well: QGIS's copy goes on serving;
- what stays is what QGIS lacks, plus the few distributions QGIS has in a version
  too old for GeoGPT: those shadow QGIS's copy and are reported as such.

Requirement markers and version specifiers are read with ``packaging`` (QGIS's
or the copy vendored in pip); without it only the protected distributions are
removed, which still leaves a consistent set (the one pip resolved).
"""

from __future__ import annotations

import csv
import importlib
import logging
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name (``PyQt5_sip`` and ``pyqt5-sip`` are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Dist:
    """One installed distribution: what the cleanup needs to know about it."""

    name: str
    version: str
    requires: list[str]
    distribution: metadata.Distribution | None = None


@dataclass
class CleanupResult:
    """What was taken out of the folder, and what stays there shadowing QGIS's copy."""

    removed_protected: list[str] = field(default_factory=list)
    deduplicated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    shadowing: list[str] = field(default_factory=list)


def read_dists(path: list[str]) -> dict[str, Dist]:
    """Distributions found on ``path``, by canonical name; the first one found wins, as for imports."""
    found: dict[str, Dist] = {}
    for dist in metadata.distributions(path=path):
        name = dist.metadata["Name"]
        if not name or canonical(name) in found:
            continue
        found[canonical(name)] = Dist(canonical(name), dist.version, list(dist.requires or []), dist)
    return found


def _packaging() -> Any:
    """``packaging.requirements.Requirement`` from QGIS's Python or from pip; ``None`` if neither has it."""
    for module in ("packaging.requirements", "pip._vendor.packaging.requirements"):
        try:
            return importlib.import_module(module).Requirement
        except ImportError:
            continue
    return None


def _parse(requirement_cls: Any, texts: Iterable[str]) -> list[Any]:
    parsed = []
    for text in texts:
        try:
            parsed.append(requirement_cls(text))
        except Exception:  # noqa: BLE001 - an unparsable line in someone's metadata is skipped, not fatal
            log.debug("skipped requirement %r", text)
    return parsed


def _satisfies(requirement: Any, version: str) -> bool:
    try:
        fits: bool = requirement.specifier.contains(version, prereleases=True)
        return fits
    except Exception:  # noqa: BLE001 - an unparsable version (some distro builds) is treated as not fitting
        return False


def plan_cleanup(
    target: dict[str, Dist], base: dict[str, Dist], protected: Iterable[str], top_level: Iterable[str]
) -> CleanupResult:
    """Decide which of ``target``'s distributions go, given what QGIS's Python (``base``) has.

    ``top_level``: the requirement lines pip was given.  Starts by dropping every
    duplicate and puts a duplicate back whenever some requirement in use (of a
    distribution kept in the folder, of QGIS's copy of a dropped one, or a
    top-level line) does not accept the version that would then be imported.
    """
    protected_names = {canonical(name) for name in protected}
    result = CleanupResult(removed_protected=sorted(n for n in target if n in protected_names))
    requirement_cls = _packaging()
    candidates = {n for n in target if n in base and n not in protected_names}
    pruned = set(candidates) if requirement_cls is not None else set()
    top = _parse(requirement_cls, top_level) if requirement_cls is not None else []
    while pruned:
        kept = set(target) - protected_names - pruned
        in_use: list[tuple[str | None, Any]] = [(None, r) for r in top]
        for owner in kept:
            in_use += [(owner, r) for r in _parse(requirement_cls, target[owner].requires)]
        for owner in pruned:
            in_use += [(owner, r) for r in _parse(requirement_cls, base[owner].requires)]
        extras: dict[str, set[str]] = {}
        for _, requirement in in_use:
            extras.setdefault(canonical(requirement.name), set()).update(requirement.extras)
        put_back = set()
        for user, requirement in in_use:
            wanted = {"", *extras.get(user or "", set())}
            if requirement.marker is not None and not any(requirement.marker.evaluate({"extra": e}) for e in wanted):
                continue
            dep = canonical(requirement.name)
            if dep in pruned and not _satisfies(requirement, base[dep].version):
                put_back.add(dep)  # QGIS's copy is too old (or too new) for a user of it
            elif user in pruned and dep in kept and not _satisfies(requirement, target[dep].version):
                put_back.add(user)  # QGIS's copy of the user cannot live with the folder's copy of dep
        if not put_back:
            break
        pruned -= put_back
    result.deduplicated = sorted(pruned)
    result.kept = sorted(set(target) - protected_names - pruned)
    result.shadowing = sorted(n for n in result.kept if n in base)
    return result


def record_paths(dist: metadata.Distribution) -> list[str]:
    """The paths in a distribution's RECORD, as written (``../../bin/x`` included).

    Read directly: the ``importlib_metadata`` backport, once imported, answers
    ``distributions()`` too and its ``files`` leaves out paths that do not exist
    where RECORD says, such as the scripts pip moved into ``<target>/bin``.
    """
    text = dist.read_text("RECORD")
    if text is None:
        return [str(file) for file in dist.files or []]
    return [row[0] for row in csv.reader(text.splitlines()) if row and row[0]]


def top_level_names(dist: metadata.Distribution) -> set[str]:
    """First path parts of the files a distribution installed (packages, modules, ``*.libs``)."""
    names = set()
    for file in record_paths(dist):
        parts = Path(file).parts
        if not parts or parts[0] in ("..", "bin", "Scripts", "__pycache__") or parts[0].endswith(".dist-info"):
            continue
        names.add(parts[0][:-3] if len(parts) == 1 and parts[0].endswith(".py") else parts[0])
    return names


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def remove_distribution(folder: Path, dist: metadata.Distribution, claimed: set[str]) -> None:
    """Delete a distribution's files from ``folder`` (pip's ``--target`` layout).

    Files listed in its RECORD are deleted; a script recorded as ``../../bin/x``
    (pip writes RECORD before moving scripts into ``<target>/bin``) is found in
    ``bin``; its top-level folders go unless another distribution still uses them
    (``claimed``, namespace packages).
    """
    info_dirs = set()
    for file in record_paths(dist):
        parts = Path(file).parts
        if parts and parts[0].endswith((".dist-info", ".egg-info")):
            info_dirs.add(parts[0])
        path = folder / file
        if ".." in parts:
            path = folder / ("Scripts" if "Scripts" in parts else "bin") / parts[-1]
        if _inside(path, folder) and (path.is_file() or path.is_symlink()):
            path.unlink()
            _remove_empty_parents(path.parent, folder)
    for name in top_level_names(dist) - claimed:
        if (folder / name).is_dir() and _inside(folder / name, folder):
            shutil.rmtree(folder / name, ignore_errors=True)
    info_path = getattr(dist, "_path", None)  # PathDistribution's metadata folder
    if info_path is not None:
        info_dirs.add(Path(info_path).name)
    for name in info_dirs:
        if (folder / name).is_dir():
            shutil.rmtree(folder / name, ignore_errors=True)


def _remove_empty_parents(directory: Path, folder: Path) -> None:
    while directory != folder and _inside(directory, folder) and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def clean(folder: Path, base_path: list[str], protected: Iterable[str], top_level: Iterable[str]) -> CleanupResult:
    """Remove from ``folder`` what :func:`plan_cleanup` says goes; return the plan."""
    target = read_dists([str(folder)])
    base = read_dists(base_path)
    result = plan_cleanup(target, base, protected, top_level)
    leaving = set(result.removed_protected) | set(result.deduplicated)
    claimed: set[str] = set()
    for name, dist in target.items():
        if name not in leaving and dist.distribution is not None:
            claimed |= top_level_names(dist.distribution)
    for name in sorted(leaving):
        leaving_dist = target[name].distribution
        if leaving_dist is not None:
            remove_distribution(folder, leaving_dist, claimed)
    return result


def protected_left(folder: Path, protected: Iterable[str]) -> list[str]:
    """Protected distributions still present in ``folder`` (must be none after :func:`clean`)."""
    names = {canonical(name) for name in protected}
    return sorted(name for name in read_dists([str(folder)]) if name in names)


def loaded_modules_of(folder: Path, names: Iterable[str]) -> list[str]:
    """Which of the distributions ``names`` in ``folder`` have a module this process already imported.

    Those keep their old version until QGIS restarts.
    """
    wanted = set(names)
    loaded = []
    for name, dist in read_dists([str(folder)]).items():
        modules = top_level_names(dist.distribution) if dist.distribution is not None else set()
        if name in wanted and any(module in sys.modules for module in modules):
            loaded.append(name)
    return sorted(loaded)
