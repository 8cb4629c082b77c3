"""The wheels the first-run installer asks for, downloaded from PyPI once, for QGIS's Python and its pins.

tests/desktop/test_first_run_install.py installs from this folder offline; make test-matrix fills it
before it runs the tests in a chroot without network (``python -m tests.support.wheelhouse``).
The folder is kept under ``.stamps`` while the requirements and pins stay the same.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QGIS_PYTHON = "/usr/bin/python3"


def ensure_wheelhouse() -> Path:
    """The folder of wheels (with its ``constraints.txt``); downloaded only when requirements or pins changed."""
    pins = subprocess.run(
        [QGIS_PYTHON, "-I", str(REPO / "scripts" / "qgis_constraints.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    requirements = (REPO / "requirements.txt").read_text()
    key = hashlib.sha256((pins + requirements).encode()).hexdigest()[:16]
    folder = REPO / ".stamps" / f"wheelhouse-{key}"
    if (folder / "complete").is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "constraints.txt").write_text(pins)
    download = [QGIS_PYTHON, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", str(folder)]
    subprocess.run(
        [*download, "-c", str(folder / "constraints.txt"), "-r", str(REPO / "requirements.txt")],
        check=True,
        timeout=900,
    )
    (folder / "complete").write_text("")
    return folder


if __name__ == "__main__":
    print(ensure_wheelhouse())
