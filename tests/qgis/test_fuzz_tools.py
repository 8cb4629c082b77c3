"""The tool fuzzer: generated calls to every tool, through the real agent graph in QGIS, in child processes.

Each batch of tools runs in its own Python process (``tests.support.fuzz_child``,
with ``faulthandler`` on), so a segmentation fault or a hang fails the batch
with the tool and the arguments that caused it instead of killing pytest.
Hypothesis generates the calls from each tool's own JSON schema, valid and
invalid.  A batch passes when no call ended the run, took over 5 s,
answered "failed unexpectedly", or failed and yet changed the project, the
demo GeoPackage or the database.  Gated tools run under the "never"
approval policy: only their previews run.

``GEOGPT_FUZZ_EXAMPLES`` sets the calls per tool (``make test``: the default,
about two minutes in all; ``make fuzz``: many more), ``GEOGPT_FUZZ_SEED`` the
seed (random by default, printed with every failure).  A failure found here
becomes a named test in ``test_fuzz_regressions.py``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.demo import REPO

EXAMPLES = int(os.environ.get("GEOGPT_FUZZ_EXAMPLES", "60"))
SEED = int(os.environ.get("GEOGPT_FUZZ_SEED", str(random.randrange(2**32))))

# Batches: each one child process (QGIS start-up costs a few seconds, so tools are grouped).
BATCHES = {
    "project": ["describe_layer", "read_features", "select_features", "label_layer", "style_layer"],
    "gated": [
        "set_layer",
        "edit_features",
        "run_pyqgis",
        "describe_capabilities",
        "find_examples",
        "export_map",
        "load_data",
    ],
    "processing": ["find_algorithm", "run_algorithm"],
    "postgis": ["describe_table", "run_sql", "find_places", "make_chart"],
    "ogc": ["describe_ogc_collections", "query_ogc_collection"],
}
NEEDS_POSTGIS = {"postgis"}
NEEDS_OGC = {"ogc"}


def run_batch(batch: str, tmp_path: Path, ogc_url: str = "", crash_in: str = "") -> dict:
    """Run one batch in a child process; fail with the call that killed it, if one did."""
    report, progress = tmp_path / f"{batch}.json", tmp_path / f"{batch}.progress"
    command = [
        sys.executable,
        "-X",
        "faulthandler",
        "-m",
        "tests.support.fuzz_child",
        "--tools",
        ",".join(BATCHES[batch]),
        "--examples",
        str(EXAMPLES),
        "--seed",
        str(SEED),
        "--report",
        str(report),
        "--progress",
        str(progress),
    ]
    if batch in NEEDS_POSTGIS:
        command.append("--postgis")
    if ogc_url:
        command += ["--ogc-url", ogc_url]
    if crash_in:
        command += ["--crash-in", crash_in]
    started = time.monotonic()
    child = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=60 + EXAMPLES * len(BATCHES[batch]) * 6
    )
    seconds = time.monotonic() - started
    lines = progress.read_text().splitlines() if progress.exists() else []
    last = json.loads(lines[-1]) if lines else None
    fault = child.stderr.find("Fatal Python error")  # faulthandler's report: the stack of the crash
    stderr = child.stderr[fault : fault + 3000] if fault >= 0 else child.stderr[-3000:]
    assert report.exists(), f"the {batch} batch died (exit {child.returncode}, seed {SEED}) during {last}:\n{stderr}"
    result = json.loads(report.read_text())
    assert "error" not in result, result["error"]
    result["batch_seconds"] = round(seconds, 1)
    print(f"fuzz {batch} (seed {SEED}): {json.dumps(result)}")
    return result


def assert_clean(result: dict, batch: str) -> None:
    assert set(result["calls"]) == set(BATCHES[batch]), result["calls"]
    assert all(count >= EXAMPLES // 2 for count in result["calls"].values()), result["calls"]
    problems = "\n".join(f"{f['tool']} {f['args']}: {f['problem']}" for f in result["failures"][:20])
    assert not result["failures"], f"{len(result['failures'])} bad calls (seed {SEED}):\n{problems}"


def test_a_crash_is_reported_with_the_tool_and_arguments_that_caused_it(tmp_path, qgis_app):
    """The harness itself: a tool that kills the process fails its batch, naming the call."""
    with pytest.raises(AssertionError) as failed:
        run_batch("gated", tmp_path, crash_in="describe_capabilities")
    message = str(failed.value)
    assert "the gated batch died (exit -11" in message
    assert "'tool': 'describe_capabilities'" in message and "Fatal Python error: Segmentation fault" in message


@pytest.mark.parametrize("batch", ["project", "gated", "processing"])
def test_fuzzed_calls_never_crash_hang_or_change_anything_when_they_fail(batch, tmp_path, qgis_app):
    assert_clean(run_batch(batch, tmp_path), batch)


@pytest.mark.postgis
def test_fuzzed_database_place_and_chart_calls(tmp_path, qgis_app):
    assert_clean(run_batch("postgis", tmp_path), "postgis")


@pytest.mark.postgis
def test_fuzzed_ogc_calls(tmp_path, ogc_server):
    assert_clean(run_batch("ogc", tmp_path, ogc_server.url), "ogc")
