"""scripts/check_wheels.py against a local package folder: a requirement without a wheel for a target is named.

pip runs for real, resolving for Windows and macOS from a folder of hand-made
wheels (no index, no network, no configuration file): ``demo-app`` needs
``demo-native``, which has a Windows wheel but only a source archive for macOS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_wheels.py"


def wheel(folder: Path, name: str, version: str, tag: str, requires: tuple[str, ...] = ()) -> None:
    """A minimal wheel: its metadata is all pip reads to resolve."""
    dist = f"{name.replace('-', '_')}-{version}"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files = {
        f"{dist}.dist-info/METADATA": metadata,
        f"{dist}.dist-info/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n",
        f"{dist}.dist-info/RECORD": "",
    }
    with zipfile.ZipFile(folder / f"{dist}-{tag}.whl", "w") as zipped:
        for path, text in files.items():
            zipped.writestr(path, text)


def sdist(folder: Path, name: str, version: str) -> None:
    with tarfile.open(folder / f"{name.replace('-', '_')}-{version}.tar.gz", "w:gz"):
        pass


@pytest.fixture
def packages(tmp_path) -> Path:
    folder = tmp_path / "packages"
    folder.mkdir()
    wheel(folder, "demo-app", "1.0", "py3-none-any", ("demo-native>=2",))
    wheel(folder, "demo-native", "2.0", "cp312-cp312-win_amd64")
    sdist(folder, "demo-native", "2.0")  # macOS users would have to compile it
    wheel(folder, "demo-native", "1.0", "cp312-cp312-macosx_11_0_arm64")  # too old for demo-app
    return folder


def check(tmp_path: Path, packages: Path, *targets: str) -> subprocess.CompletedProcess:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# the plugin's\ndemo-app>=1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no index or links from this machine's pip configuration
    command = [sys.executable, str(SCRIPT), "-r", str(requirements), "--cache", str(tmp_path / "kept.json")]
    command += [f"--target={target}" for target in targets]
    command += ["--pip-arg=--no-index", f"--pip-arg=--find-links={packages}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def test_a_requirement_without_a_wheel_for_a_target_fails_with_its_name(tmp_path, packages):
    done = check(tmp_path, packages, "win_amd64:3.12", "macosx_11_0_arm64:3.12")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error: demo-native has no binary wheel for macosx_11_0_arm64:3.12" in done.stdout
    assert "win_amd64:3.12: 2 packages, all wheels" in done.stdout
    assert "win_amd64:3.12 has no" not in done.stdout
    assert not (tmp_path / "kept.json").exists()  # a failure is never kept


def test_a_pass_is_kept_and_answers_the_next_run_until_the_requirements_change(tmp_path, packages):
    done = check(tmp_path, packages, "win_amd64:3.12")
    assert done.returncode == 0, done.stdout + done.stderr
    kept = json.loads((tmp_path / "kept.json").read_text())
    assert kept["resolved"] == {"win_amd64:3.12": {"demo-app": "1.0", "demo-native": "2.0"}}
    for path in packages.iterdir():  # the index is gone: only the kept pass can answer now
        path.unlink()
    again = check(tmp_path, packages, "win_amd64:3.12")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "(checked 0.0 h ago, kept in kept.json" in again.stdout
    other = check(tmp_path, packages, "macosx_11_0_arm64:3.12")  # another target: pip is asked, and fails
    assert other.returncode == 1
    assert "error: demo-app has no binary wheel for macosx_11_0_arm64:3.12" in other.stdout


def test_a_target_is_a_platform_tag_and_a_python_version(tmp_path, packages):
    done = check(tmp_path, packages, "windows")
    assert done.returncode == 2
    assert "a target is PLATFORM_TAG:PYTHON_VERSION" in done.stderr
