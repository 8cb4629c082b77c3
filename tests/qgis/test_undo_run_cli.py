"""Undo run on the command line: ``ask --save`` keeps the run's undo, ``undo-run`` puts the saved project back.

Both commands run as real subprocesses against the scripted model server; the
saved project is read back in this process and its data file with sqlite3.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from qgis.core import QgsProject

from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import ask

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch) -> Path:
    """Each command reads the QGIS profile under its own data folder, never the user's real one."""
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return data


def undo_run(project: Path, *extra: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    environment["QT_QPA_PLATFORM"] = "offscreen"
    return subprocess.run(
        [sys.executable, "-m", "geogpt_qgis", "undo-run", "--project", str(project), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )


def read_state(path: Path) -> dict:
    """What the undo must give back, read from the saved file: layers, tree order, the saved view."""
    project = QgsProject()
    assert project.read(str(path)), project.error()
    root = project.layerTreeRoot()
    view = project.viewSettings().defaultViewExtent()
    state = {
        "layers": sorted((layer.id(), layer.name()) for layer in project.mapLayers().values()),
        "order": [layer.name() for layer in root.layerOrder()],
        "groups": [node.name() for node in root.children() if not hasattr(node, "layerId")],
        "view": [round(v, 3) for v in (view.xMinimum(), view.yMinimum(), view.xMaximum(), view.yMaximum())],
    }
    project.clear()
    return state


def school_rows(gpkg: Path) -> list[tuple]:
    with sqlite3.connect(gpkg) as db:
        return db.execute("SELECT fid, name, type, pupils, district FROM schools ORDER BY fid").fetchall()


SCRIPT = [
    Turn(
        tool_calls=[
            ToolCall("run_algorithm", {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 50}})
        ]
    ),
    Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "name": "green_spaces", "group": "green"})]),
    Turn(tool_calls=[ToolCall("set_layer", {"layer": "hospitals", "zoom": True})]),
    Turn(
        tool_calls=[
            ToolCall(
                "edit_features",
                {"layer": "schools", "expression": "\"type\" = 'primary'", "field": "pupils", "value": "0"},
            )
        ]
    ),
    Turn(tool_calls=[ToolCall("set_layer", {"layer": "roads", "remove": True})]),
    Turn(text="Done."),
]


def test_undo_run_from_the_command_line_puts_the_saved_project_and_its_edits_back(model_server, tmp_path):
    project_file = copy_demo(tmp_path / "demo")
    gpkg = project_file.with_name("elvbury.gpkg")
    original, rows = read_state(project_file), school_rows(gpkg)
    model_server.script(SCRIPT)
    out = tmp_path / "out.qgz"
    done = ask(
        "do a few things", "--project", str(project_file), "--base-url", model_server.url, "--model", "qwen3:8b",
        "--approval", "trust", "--save", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = tmp_path / "out.undo-run.json"
    assert record.is_file() and f"undo-run --project {out}" in done.stderr
    changed = read_state(out)
    assert changed != original and "roads" not in changed["order"] and "green_spaces" in changed["order"]
    assert school_rows(gpkg) != rows  # headless: the edit was saved at once

    undone = undo_run(out)
    assert undone.returncode == 0, undone.stderr
    assert "Undid the run" in undone.stderr and "added layer 'roads' back" in undone.stderr
    assert "reverted the saved edits of 'schools'" in undone.stderr
    assert read_state(out) == original
    assert school_rows(gpkg) == rows
    assert not record.exists()
    again = undo_run(out)
    assert again.returncode == 2 and "no run to undo" in again.stderr


def test_undo_run_from_the_command_line_refuses_a_project_changed_since_unless_forced(model_server, tmp_path):
    project_file = copy_demo(tmp_path / "demo")
    original = read_state(project_file)
    model_server.script(
        [Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "name": "green_spaces"})]), Turn(text="Renamed.")]
    )
    out = tmp_path / "out.qgz"
    done = ask(
        "rename the parks", "--project", str(project_file), "--base-url", model_server.url, "--model", "qwen3:8b",
        "--save", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    edited = QgsProject()
    assert edited.read(str(out))
    edited.mapLayersByName("rivers")[0].setName("streams")  # the user, after the run
    assert edited.write(str(out))
    edited.clear()

    refused = undo_run(out)
    assert refused.returncode == 1
    assert "layer 'rivers' was renamed to 'streams'" in refused.stderr and "Nothing was changed" in refused.stderr
    assert "green_spaces" in read_state(out)["order"]
    forced = undo_run(out, "--force")
    assert forced.returncode == 0, forced.stderr
    names = read_state(out)["order"]
    assert "parks" in names and "green_spaces" not in names
    assert names == original["order"]  # forced: everything back as before the run, the user's rename too


def test_undo_run_from_the_command_line_leaves_no_record_for_a_run_that_changed_nothing(model_server, tmp_path):
    project_file = copy_demo(tmp_path / "demo")
    model_server.script([Turn(text="Nine layers.")])
    out = tmp_path / "out.qgz"
    done = ask(
        "how many layers?", "--project", str(project_file), "--base-url", model_server.url, "--model", "qwen3:8b",
        "--save", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out.undo-run.json").exists()
