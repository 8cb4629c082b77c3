"""QGIS's own PyQt5 -> PyQt6 migration checker, fetched from Debian and run in check mode by make lint.

QGIS ships ``scripts/pyqt5_to_pyqt6/pyqt5_to_pyqt6.py`` in its source, not in any binary package or
on PyPI.  So ``fetch`` takes it out of Debian's source package of qgis (trixie, QGIS 3.40) with apt,
using a private apt configuration under the cache folder (the system's sources and lists are never
touched) and this machine's Debian mirror, and keeps only that one file:

    python3 scripts/qt6_checker.py fetch .stamps/qt6-checker

The checker rewrites files in place and has no check mode, so ``check`` runs it on a copy of the
given folders and fails if it would change any file (the diff is printed) or warns about anything
(removed Qt 5 APIs, ambiguous enums, missing imports):

    python3 scripts/qt6_checker.py check --python .stamps/qt6-venv/bin/python \
        --checker .stamps/qt6-checker/pyqt5_to_pyqt6.py geogpt_qgis tests

It needs PyQt6 (with QScintilla) and tokenize-rt, from the Qt 6 tools venv (requirements-qt6.txt),
which has no system site packages, so QGIS's PyQt5 never shadows PyQt6.  Without QGIS's Qt 6
classes it checks Qt's enums and APIs, not QGIS's (tests/unit/test_qt6_rules.py covers those).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SUITE = "trixie"  # Debian 13: QGIS 3.40 LTR, whose source carries the checker
SCRIPT = "pyqt5_to_pyqt6.py"
MEMBER = f"scripts/pyqt5_to_pyqt6/{SCRIPT}"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# What the checker prints that is not a finding.
NOT_FINDINGS = re.compile(r"QGIS classes not available for introspection")


def debian_mirror() -> str:
    """The Debian archive this machine's apt already uses (its ``Label: Debian`` index).

    Without downloaded lists apt knows no labels: then the first configured archive that is not the
    security one.
    """
    for options, wanted in (([], "Debian"), (["--no-release-info"], None)):
        listing = subprocess.run(
            ["apt-get", "indextargets", *options, "--format", "$(LABEL)\t$(BASE_URI)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for line in listing.splitlines():
            label, _, base = line.partition("\t")
            if "/dists/" in base and (label == wanted if wanted else "security" not in base):
                return base.split("/dists/")[0]
    raise SystemExit("no Debian archive in apt's sources: is this Debian?")


def fetch(dest: Path) -> Path:
    """``dest/pyqt5_to_pyqt6.py`` from Debian's qgis source package; the downloads are removed after."""
    target = dest / SCRIPT
    if target.is_file():
        return target
    work = dest / "apt"
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("lists/partial", "cache/archives/partial", "sources", "source-package"):
        (work / sub).mkdir(parents=True)
    (work / "sources" / f"{SUITE}-src.sources").write_text(
        f"Types: deb-src\nURIs: {debian_mirror()}\nSuites: {SUITE}\nComponents: main\nSigned-By: {KEYRING}\n"
    )
    options = [
        "-q",
        "-o", "Dir::Etc::SourceList=/dev/null",
        "-o", f"Dir::Etc::SourceParts={work.resolve() / 'sources'}",
        "-o", f"Dir::State::Lists={work.resolve() / 'lists'}",
        "-o", f"Dir::Cache={work.resolve() / 'cache'}",
        "-o", "Debug::NoLocking=1",
        *(["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []),  # as root: no _apt for our own folder
    ]  # fmt: skip
    subprocess.run(["apt-get", *options, "update"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["apt-get", *options, "source", "--download-only", f"qgis/{SUITE}"],
        check=True,
        cwd=work / "source-package",
        stdout=subprocess.DEVNULL,
    )
    (tarball,) = (work / "source-package").glob("qgis_*.orig.tar.*")
    subprocess.run(["tar", "-xf", tarball.name, "--wildcards", f"*/{MEMBER}"], check=True, cwd=work / "source-package")
    (extracted,) = (work / "source-package").glob(f"*/{MEMBER}")
    version = tarball.name.split("_")[1].split(".orig")[0]
    shutil.copyfile(extracted, target)
    (dest / "SOURCE").write_text(f"{MEMBER} from Debian's qgis {version} source package ({SUITE})\n")
    shutil.rmtree(work)
    return target


def findings(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip() and not NOT_FINDINGS.search(line)]


def check(python: str, checker: Path, folders: list[Path]) -> int:
    """Run the checker on copies of ``folders``; 0 when it would change nothing and says nothing.

    The files are read once, into memory, and compared with what the checker leaves in the copy, so a
    file saved meanwhile is never mistaken for a finding.
    """
    before = {
        path: path.read_text(encoding="utf-8")
        for folder in folders
        for path in sorted(folder.rglob("*.py"))
        if "__pycache__" not in path.parts
    }
    with tempfile.TemporaryDirectory(prefix="qt6-check-") as tmp:
        copy = Path(tmp)
        # Folder i's files go to <copy>/<i>/..., whatever the folder's own path (absolute, ../...).
        place = {
            path: copy / str(i) / path.relative_to(folder)
            for i, folder in enumerate(folders)
            for path in before
            if path.is_relative_to(folder)
        }
        for path, text in before.items():
            place[path].parent.mkdir(parents=True, exist_ok=True)
            place[path].write_text(text, encoding="utf-8")
        run = subprocess.run(
            [os.path.abspath(python) if os.sep in python else python, str(checker.resolve()), str(copy)],
            capture_output=True,
            text=True,
            cwd=copy,
            check=False,
        )
        if run.returncode not in (0, 1):  # 1 only means "files changed"; compared below
            print(run.stdout + run.stderr, file=sys.stderr)
            return run.returncode
        output = run.stdout + "\n" + run.stderr
        for i, folder in enumerate(folders):
            output = output.replace(f"{copy / str(i)}/", f"{folder}/")
        problems = findings(output)
        after = {path: place[path].read_text(encoding="utf-8") for path in before}
    changed = [path for path in before if after[path] != before[path]]
    for path in changed:
        sys.stdout.writelines(
            difflib.unified_diff(
                before[path].splitlines(keepends=True),
                after[path].splitlines(keepends=True),
                str(path),
                f"{path} (as the checker would write it)",
            )
        )
    for line in problems:
        print(line)
    if changed or problems:
        print(f"Qt 6 checker: {len(changed)} file(s) to change, {len(problems)} warning(s)", file=sys.stderr)
        return 1
    print(f"Qt 6 checker ({checker.name}): {len(before)} files clean")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    get = commands.add_parser("fetch", help="take the checker out of Debian's qgis source package")
    get.add_argument("dest", type=Path)
    run = commands.add_parser("check", help="run the checker on copies of the folders; fail on any finding")
    run.add_argument("--python", required=True, help="a Python with PyQt6, QScintilla and tokenize-rt")
    run.add_argument("--checker", required=True, type=Path)
    run.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    if args.command == "fetch":
        args.dest.mkdir(parents=True, exist_ok=True)
        print(fetch(args.dest))
        return 0
    return check(args.python, args.checker, args.folders)


if __name__ == "__main__":
    sys.exit(main())
