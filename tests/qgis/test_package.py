"""``make package``: the zip plugins.qgis.org accepts, refused when it would not, and loadable from a fresh profile."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import package_checks  # noqa: E402 - scripts/ is not a package
import upload_gate  # noqa: E402
from plugin_dist import PACKAGE, PackageError, install_zip, package  # noqa: E402

PROBE = REPO / "tests" / "support" / "plugin_load_probe.py"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The real zip as ``make package`` builds it; its Bandit and detect-secrets scan is the gate's test, below."""
    return package(tmp_path_factory.mktemp("dist"), bandit=False)


def _keep_only_what_loads(folder: Path) -> None:
    """Leave the assembled plugin its metadata, entry module, icons and guide: the scan then reads a few files.

    The planted-finding tests check that ``package`` refuses what is planted, not Bandit's speed on 300 files
    (the gate's test scans the whole zip).
    """
    for path in folder.iterdir():
        if path.is_dir() and path.name not in {"resources", "i18n", "help"}:
            shutil.rmtree(path)
        elif path.suffix == ".py" and path.name != "__init__.py":
            path.unlink()


def test_the_zip_holds_one_plugin_folder_with_what_qgis_and_qpip_need(built):
    with zipfile.ZipFile(built) as zipped:
        names = zipped.namelist()
        requirements = zipped.read("geogpt_qgis/requirements.txt").decode()
    assert built.name.startswith("geogpt_qgis-") and built.stat().st_size <= 25_000_000
    assert {name.split("/")[0] for name in names} == {"geogpt_qgis"}
    for required in ("__init__.py", "metadata.txt", "LICENSE", "requirements.txt", "resources/icons/geogpt.svg"):
        assert f"geogpt_qgis/{required}" in names
    # qpip reads requirements.txt in the plugin folder: the same file the installer uses, plain requirement lines.
    assert requirements == (REPO / "requirements.txt").read_text()
    lines = [line for line in requirements.splitlines() if line.strip() and not line.startswith("#")]
    assert [Requirement(line).name for line in lines][:2] == ["langgraph", "langgraph-checkpoint-sqlite"]
    assert {f"geogpt_qgis/i18n/{qm.name}" for qm in (REPO / "i18n").glob("*.qm")} <= set(names)
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".ts")) or "/tests/" in n]
    assert not [n for n in names if Path(n).suffix in package_checks.BINARY_SUFFIXES]
    assert package_checks.check_archive(built) == []


def test_the_zip_loads_in_a_fresh_profile_of_a_qgis_without_the_packages(built, tmp_path):
    profile = tmp_path / "profiles" / "fresh"
    plugin = install_zip(built, profile, {})
    assert (plugin / "metadata.txt").is_file()
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        ["/usr/bin/python3", "-I", str(PROBE), str(profile)],
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("GEOGPT-PROBE ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(line.split(" ", 1)[1])
    assert "geogpt_qgis" in report["available"]
    assert report["loaded"] and report["started"] and report["dock"]
    assert Path(report["module_file"]).parent == plugin
    # QGIS's Python lacks LangGraph: the dock says so and offers the install; nothing heavy was imported.
    assert report["banner_visible"] and "langgraph" in report["banner"]
    assert report["heavy_imported"] == []
    private = str(profile / "geogpt_qgis" / "python-packages" / f"{sys.version_info[0]}.{sys.version_info[1]}")
    assert report["private_folder"] == private
    path = report["sys_path"]
    assert path.index(private) < path.index("/usr/lib/python3/dist-packages")
    assert report["unloaded"] is True
    assert done.returncode == 0, done.stderr[-3000:]  # QGIS closed cleanly after the unload (no crash at exit)


def _edit_metadata(folder: Path, **changes: str | None) -> None:
    lines = []
    for line in (folder / "metadata.txt").read_text().splitlines():
        key = line.split("=", 1)[0]
        if key in changes:
            continue
        lines.append(line)
    lines += [f"{key}={value}" for key, value in changes.items() if value is not None]
    (folder / "metadata.txt").write_text("\n".join(lines) + "\n")


def test_bad_metadata_is_refused_with_every_reason(tmp_path):
    def spoil(folder: Path) -> None:
        _edit_metadata(
            folder,
            email=None,
            version="one",
            qgisMinimumVersion=None,
            qgisminimumversion="3.22",
            download_url="https://example.org/x.zip",
            icon="resources/icons/missing.svg",
            tracker="http://bugs",
        )

    with pytest.raises(PackageError) as raised:
        package(tmp_path, bandit=False, prepare=spoil)
    problems = "\n".join(raised.value.problems)
    assert "'email' is missing" in problems
    assert "'qgisMinimumVersion' is missing" in problems
    assert "'qgisminimumversion' must be spelled 'qgisMinimumVersion'" in problems
    assert "version 'one' is not like 1.2.3" in problems
    assert "'download_url' is set by the plugin repository" in problems
    assert "icon 'resources/icons/missing.svg' is not in the plugin folder" in problems
    assert "tracker 'http://bugs' is not a web address" in problems
    assert list(tmp_path.glob("*.zip")) == []


def test_planted_binaries_and_tests_are_refused(tmp_path):
    def plant(folder: Path) -> None:
        (folder / "_speedups.so").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(100))
        (folder / "tools" / "helper").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(100))  # no suffix, still ELF
        (folder / "gui" / "cache.pyc").write_bytes(bytes(16))
        (folder / "tests").mkdir()
        (folder / "tests" / "test_plugin.py").write_text("def test(): pass\n")

    with pytest.raises(PackageError) as raised:
        package(tmp_path, bandit=False, prepare=plant)
    problems = "\n".join(raised.value.problems)
    assert "_speedups.so: binary files are not allowed (.so)" in problems
    assert "tools/helper: an executable binary" in problems
    assert "gui/cache.pyc: binary files are not allowed" in problems
    assert "tests/: a tests folder does not belong in the plugin" in problems
    assert "tests/test_plugin.py: tests do not belong in the plugin" in problems
    assert list(tmp_path.glob("*.zip")) == []


def test_a_zip_over_the_limit_is_refused(tmp_path):
    with pytest.raises(PackageError) as raised:
        package(tmp_path, max_bytes=50_000, bandit=False)
    assert len(raised.value.problems) == 1
    assert "the repository takes 0.1 MB at most" in raised.value.problems[0]
    assert list(tmp_path.glob("*.zip")) == []


def test_a_high_severity_bandit_finding_is_refused(tmp_path):
    def plant(folder: Path) -> None:
        _keep_only_what_loads(folder)
        (folder / "danger.py").write_text(
            "import subprocess\n\n\ndef run(name: str) -> None:\n    subprocess.call(f'ls {name}', shell=True)\n"
        )

    with pytest.raises(PackageError) as raised:
        package(tmp_path, prepare=plant)
    problems = raised.value.problems
    assert any(p.startswith("bandit B602 (high, mandatory) danger.py:5") for p in problems), problems


def test_what_the_repository_blocks_until_waived_is_refused_too(tmp_path):
    """Skippable tests (an assert, SQL text from an f-string, a silent except), a secret, a nosec without its why."""

    def plant(folder: Path) -> None:
        _keep_only_what_loads(folder)
        (folder / "careless.py").write_text(
            "import subprocess\n\n\n"
            "def count(cursor, table: str) -> int:\n"
            "    assert table\n"
            "    cursor.execute(f'SELECT count(*) FROM {table}')\n"
            "    try:\n"
            "        subprocess.run(['true'], check=True)  # nosec\n"
            "    except Exception:\n"
            "        pass\n"
            "    return cursor.fetchone()[0]\n"
        )
        (folder / "keys.txt").write_text("aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n")

    with pytest.raises(PackageError) as raised:
        package(tmp_path, prepare=plant)
    problems = "\n".join(raised.value.problems)
    assert "bandit B101 (low, skippable) careless.py:5" in problems
    assert "bandit B608 (medium, skippable) careless.py:6" in problems
    assert "bandit B110 (low, skippable) careless.py:9" in problems
    assert "detect-secrets AWS Access Key geogpt_qgis/keys.txt:1" in problems
    assert "careless.py:8: a nosec must name its test and say why" in problems
    assert list(tmp_path.glob("*.zip")) == []


def test_a_waiver_with_its_test_and_reason_passes_and_is_counted(tmp_path):
    def plant(folder: Path) -> None:
        (folder / "waived.py").write_text(
            "import subprocess\n\n\n"
            "def run() -> None:\n"
            "    subprocess.run(['/bin/true'], check=True)  # nosec B603 # fixed argv, no shell\n"
        )

    folder = tmp_path / "geogpt_qgis"
    folder.mkdir()
    plant(folder)
    (folder / "__init__.py").write_text("# nosec B101 # too short\n")  # a reason of fewer than ten characters
    unexplained = "__init__.py:1: a nosec must name its test and say why (# nosec B603 # why)"
    assert package_checks.upload_scan(folder) == [unexplained]  # B603 waived with its reason: no finding
    assert package_checks.nosec_lines(folder) == (2, [unexplained])


def test_the_upload_gate_passes_on_the_zip_and_prints_its_counts(built, tmp_path, capsys):
    """What make lint runs (scripts/upload_gate.py): the site's Bandit tests and detect-secrets on the zip: none."""
    found = upload_gate.scan(built, tmp_path / "unpacked")
    printed = capsys.readouterr().out
    assert found == 0, printed[-3000:]
    assert (tmp_path / "unpacked" / PACKAGE / "metadata.txt").is_file()  # scanned from the zip, as the site does
    assert "38 mandatory and 36 skippable tests" in printed
    assert "0 mandatory, 0 skippable findings" in printed
    assert "detect-secrets --all-files (metadata.txt excluded): 0 findings" in printed
    assert "# nosec lines: " in printed and "(0 without their test id and a reason)" in printed


def test_the_shipped_metadata_passes():
    assert package_checks.check_metadata(REPO) == []
