"""Check that every runtime requirement installs from binary wheels on the Pythons QGIS ships elsewhere.

    python scripts/check_wheels.py [-r requirements.txt] [--target win_amd64:3.12 ...] [--pip-arg=ARG ...]

Most users install GeoGPT into the Python of QGIS on Windows or macOS, where
the in-plugin installer runs pip without a compiler: a requirement (or
anything it pulls in) that has no wheel for that platform fails there, while
it installs fine on this Linux machine.  For each target this asks pip to
resolve ``requirements.txt`` for that platform and Python with
``--only-binary :all:`` (``pip install --dry-run --ignore-installed --report``:
only the packages' metadata is fetched, never a whole wheel), and fails,
naming the package and the target, when one has no wheel.  It prints what
each target resolved to, and warns when a package resolves to another version
on one target than on the others (an older version kept only for its wheels).

The default targets are what QGIS's installers carry: Windows x86-64 with
Python 3.12 (the OSGeo4W and standalone installers), macOS on Apple silicon
(wheels for macOS 11 or older) and on Intel (macOS 10.15 or older), Python
3.12.  pip needs PyPI (or the index pip is configured with): a cold run
takes about a minute.  A passing result is kept in ``.stamps/wheel-check.json``
for a day, keyed on the requirements file, the targets and pip's extra
arguments, so a warm run (``make lint`` again) answers at once; changing the
requirements asks PyPI again, as does ``--refresh``.  A failure is never kept.
pip's own HTTP cache helps a cold run only where the index sends caching
headers.  Exit status: 0 all resolve to wheels, 1 some do not, 2 pip could not
run (network).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TARGETS = ("win_amd64:3.12", "macosx_11_0_arm64:3.12", "macosx_10_15_x86_64:3.12")
TIMEOUT_S = 600
CACHE = REPO / ".stamps" / "wheel-check.json"
CACHE_HOURS = 24.0

# pip's words for a requirement it found no acceptable file for (with --only-binary: no wheel for the target).
_NO_VERSION = re.compile(r"Could not find a version that satisfies the requirement (\S+)")
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")
# pip's words for "the index was not there".
_OFFLINE = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable", "ProxyError")


@dataclass
class Outcome:
    """What one target resolved to (``wheels``: name -> (version, wheel file)) or which packages it could not."""

    target: str
    wheels: dict[str, tuple[str, str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    error: str = ""  # pip failed for another reason (its last lines)
    offline: bool = False
    seconds: float = 0.0


def parse_target(text: str) -> tuple[str, str]:
    """``platform:python`` (``win_amd64:3.12``) as (platform tag, Python version)."""
    platform, _, python = text.partition(":")
    if not re.fullmatch(r"[a-z0-9_]+", platform) or not re.fullmatch(r"3\.\d+", python):
        raise argparse.ArgumentTypeError(f"a target is PLATFORM_TAG:PYTHON_VERSION, e.g. win_amd64:3.12, not {text!r}")
    return platform, python


def pip_command(requirements: Path, platform: str, python: str, report: Path, extra: Sequence[str] = ()) -> list[str]:
    """Resolve ``requirements`` for another platform, wheels only, installing nothing."""
    return [
        sys.executable,
        *("-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--no-input"),
        *("--disable-pip-version-check", "--only-binary", ":all:", "--implementation", "cp"),
        *("--platform", platform, "--python-version", python, "--report", str(report)),
        *("--target", str(report.parent / "target")),  # pip before 23.1 wants one with --platform; nothing lands
        *extra,
        *("-r", str(requirements)),
    ]


def missing_packages(output: str) -> list[str]:
    """The requirements pip named as having no acceptable file, in order, each once (extras and pins cut off)."""
    names: list[str] = []
    for pattern in (_NO_VERSION, _NO_MATCH):
        for found in pattern.finditer(output):
            name = re.split(r"[<>=!~\[;(]", found.group(1), maxsplit=1)[0]
            if name and name not in names:
                names.append(name)
    return names


def read_report(report: dict) -> dict[str, tuple[str, str]]:
    """Name -> (version, file) of each package in pip's installation report."""
    wheels = {}
    for item in report.get("install", []):
        metadata = item.get("metadata", {})
        url = item.get("download_info", {}).get("url", "")
        wheels[str(metadata.get("name", "?")).lower()] = (str(metadata.get("version", "?")), url.rsplit("/", 1)[-1])
    return wheels


def check_target(requirements: Path, target: str, extra: Sequence[str] = ()) -> Outcome:
    platform, python = parse_target(target)
    outcome = Outcome(target)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="geogpt-wheels-") as folder:
        report = Path(folder) / "report.json"
        done = subprocess.run(
            pip_command(requirements, platform, python, report, extra),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        outcome.seconds = time.monotonic() - started
        output = done.stdout + done.stderr
        if done.returncode == 0 and report.is_file():
            outcome.wheels = read_report(json.loads(report.read_text(encoding="utf-8")))
            not_wheels = [name for name, (_v, file) in outcome.wheels.items() if not file.endswith(".whl")]
            outcome.missing = not_wheels  # cannot happen with --only-binary; checked all the same
            return outcome
    outcome.missing = missing_packages(output)
    outcome.offline = not outcome.missing and any(marker in output for marker in _OFFLINE)
    if not outcome.missing:
        lines = [line for line in output.splitlines() if line.strip()]
        outcome.error = "\n".join([line for line in lines if line.startswith("ERROR")] or lines[-10:])
    return outcome


def version_spread(outcomes: Sequence[Outcome]) -> dict[str, dict[str, str]]:
    """Packages resolved to different versions on different targets: name -> {target: version}."""
    seen: dict[str, dict[str, str]] = {}
    for outcome in outcomes:
        for name, (version, _file) in outcome.wheels.items():
            seen.setdefault(name, {})[outcome.target] = version
    return {name: versions for name, versions in seen.items() if len(set(versions.values())) > 1}


def cache_key(requirements: Path, targets: Sequence[str], extra: Sequence[str]) -> str:
    """What a kept result depends on: the requirements' text, the targets, pip's extra arguments."""
    parts = [requirements.read_text(encoding="utf-8"), *sorted(targets), "|", *extra]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cached_pass(cache: Path, key: str, max_hours: float) -> float | None:
    """Hours since a passing check with this key, if one was kept and is recent enough."""
    try:
        kept = json.loads(cache.read_text(encoding="utf-8"))
        age = (time.time() - float(kept["checked"])) / 3600
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return age if kept.get("key") == key and 0 <= age < max_hours else None


def keep_pass(cache: Path, key: str, outcomes: Sequence[Outcome]) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    resolved = {o.target: {name: version for name, (version, _f) in sorted(o.wheels.items())} for o in outcomes}
    cache.write_text(json.dumps({"key": key, "checked": time.time(), "resolved": resolved}, indent=1), "utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-r", "--requirements", type=Path, default=REPO / "requirements.txt")
    parser.add_argument("--target", action="append", help="PLATFORM_TAG:PYTHON (default: Windows and macOS, 3.12)")
    parser.add_argument("--pip-arg", action="append", default=[], help="passed on to pip (e.g. --pip-arg=--no-index)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every wheel of every target")
    parser.add_argument("--refresh", action="store_true", help="ask the index even if a recent pass was kept")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"where a pass is kept ({CACHE_HOURS:g} h)")
    args = parser.parse_args(argv)
    targets = args.target or list(DEFAULT_TARGETS)
    for target in targets:
        try:
            parse_target(target)
        except argparse.ArgumentTypeError as error:
            parser.error(str(error))
    key = cache_key(args.requirements, targets, args.pip_arg)
    age = None if args.refresh else cached_pass(args.cache, key, CACHE_HOURS)
    if age is not None:
        print(
            f"{args.requirements.name}: all wheels for {', '.join(targets)} "
            f"(checked {age:.1f} h ago, kept in {args.cache.name}; --refresh asks the index again)"
        )
        return 0
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:  # pip waits on the network: side by side
        outcomes = list(pool.map(lambda t: check_target(args.requirements, t, args.pip_arg), targets))
    failed = offline = False
    for outcome in outcomes:
        if outcome.missing:
            failed = True
            for name in outcome.missing:
                print(f"error: {name} has no binary wheel for {outcome.target} (pip --only-binary :all:)")
        elif outcome.error:
            offline = offline or outcome.offline
            failed = failed or not outcome.offline
            print(f"error: pip could not resolve the requirements for {outcome.target}:\n{outcome.error}")
        else:
            print(f"{outcome.target}: {len(outcome.wheels)} packages, all wheels ({outcome.seconds:.1f} s)")
            if args.verbose:
                for name, (version, file) in sorted(outcome.wheels.items()):
                    print(f"  {name} {version}  {file}")
    for name, versions in sorted(version_spread([o for o in outcomes if not o.missing]).items()):
        listed = ", ".join(f"{target} {version}" for target, version in versions.items())
        print(f"warning: {name} resolves to different versions: {listed} (an older one kept for its wheel?)")
    print(f"checked {args.requirements.name} for {len(targets)} targets in {time.monotonic() - started:.1f} s")
    if failed:
        return 1
    if offline:
        return 2
    keep_pass(args.cache, key, outcomes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
