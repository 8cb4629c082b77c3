"""The installer's pip command, its reading of pip's output, and its failure messages."""

from __future__ import annotations

import itertools
from pathlib import Path

from geogpt_qgis.toolbelt.installer import (
    InstallPlan,
    classify_failure,
    parse_progress,
    pip_command,
    requirement_lines,
)

REPO = Path(__file__).resolve().parents[2]


def test_pip_command_targets_the_folder_with_constraints(tmp_path):
    plan = InstallPlan(target=tmp_path / "pkgs", work_dir=tmp_path / "work", requirements=tmp_path / "req.txt")
    command = pip_command(Path("/usr/bin/python3"), plan)
    assert command[:4] == ["/usr/bin/python3", "-m", "pip", "install"]
    pairs = dict(itertools.pairwise(command))
    assert pairs["--target"] == str(tmp_path / "pkgs")
    assert pairs["--upgrade-strategy"] == "only-if-needed"
    assert pairs["-c"] == str(tmp_path / "work" / "constraints.txt")
    assert pairs["-r"] == str(tmp_path / "req.txt")
    assert "--disable-pip-version-check" in command


def test_requirement_lines_of_the_shipped_file():
    lines = requirement_lines(REPO / "requirements.txt")
    assert "langgraph>=1.0,<2" in lines
    assert all(not line.startswith(("#", "-")) for line in lines)


def test_progress_from_pip_lines():
    assert parse_progress("Collecting langgraph<2,>=1.0 (from -r requirements.txt (line 3))", 0).detail == "langgraph"
    collected = parse_progress("Collecting pydantic[email]>=2", 4)
    assert (collected.phase, collected.detail, collected.count) == ("collecting", "pydantic", 5)
    down = parse_progress("  Downloading langgraph-1.0.3-py3-none-any.whl (155 kB)", 5)
    assert (down.phase, down.detail, down.count) == ("downloading", "langgraph-1.0.3-py3-none-any.whl", 5)
    cached = parse_progress("  Using cached orjson-3.10.0-cp311-cp311-manylinux.whl (140 kB)", 5)
    assert cached.detail == "orjson-3.10.0-cp311-cp311-manylinux.whl"
    local = parse_progress("Processing /wheels/six-1.17.0-py2.py3-none-any.whl", 2)
    assert (local.phase, local.detail, local.count) == ("collecting", "six", 3)
    installing = parse_progress("Installing collected packages: six, idna, langgraph", 9)
    assert (installing.phase, installing.count) == ("installing", 3)
    assert parse_progress("Successfully installed six-1.17.0", 9) is None
    assert parse_progress("", 0) is None


def test_connection_errors_mean_offline():
    lines = [
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection "
        "broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object>: "
        "Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/langgraph/",
        "ERROR: Could not find a version that satisfies the requirement langgraph<2,>=1.0 (from versions: none)",
        "ERROR: No matching distribution found for langgraph<2,>=1.0",
    ]
    error = classify_failure(lines)
    assert error.kind == "offline"
    assert error.detail.splitlines() == lines[1:]  # the ERROR lines, not the noise


def test_other_failures_keep_the_last_lines():
    lines = [f"line {i}" for i in range(40)] + ["ERROR: No space left on device"]
    error = classify_failure(lines)
    assert error.kind == "pip-failed"
    assert error.detail == "ERROR: No space left on device"
    assert classify_failure(["line"] * 3 + ["boom"]).detail.endswith("boom")
    assert classify_failure(["/usr/bin/python3: No module named pip"]).kind == "no-pip"
