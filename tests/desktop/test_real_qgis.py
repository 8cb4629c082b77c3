"""The plugin inside the real QGIS desktop application (Xvfb), end to end."""

from __future__ import annotations

import pytest

from tests.support.demo import copy_demo
from tests.support.desktop import run_qgis_session
from tests.support.model_server import ToolCall, Turn

pytestmark = pytest.mark.desktop


def test_qgis_loads_the_plugin_the_dock_answers_and_unload_leaves_nothing(tmp_path, model_server):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("list_layers")]),
            Turn(tool_calls=[ToolCall("select_features", {"layer": "schools", "expression": '"pupils" > 500'})]),
            Turn(text="I selected the **large schools** (more than 500 pupils).", chunk_delay=0.01),
        ]
    )
    project = copy_demo(tmp_path / "demo")
    report = run_qgis_session(
        tmp_path,
        project,
        {"provider": "ollama", "ollama_url": model_server.url, "ollama_model": "qwen3:8b"},
        {"GEOGPT_DESKTOP_QUESTION": "Select the schools with more than 500 pupils", "GEOGPT_DESKTOP_UNLOAD": "1"},
    )
    assert report["errors"] == [], report
    assert report["exit_code"] == 0
    assert report["qgis_version"].startswith("3.")
    assert report["plugin_loaded"] and report["plugin_active"]
    vectors = ["districts", "hospitals", "landuse", "parks", "rivers", "roads", "schools"]
    assert report["project_layers"] == sorted([*vectors, "elevation", "landcover"])  # the demo's two rasters
    assert report["loaded"] == {"docks": 1, "actions": 1, "menus": 1}
    assert report["dock_visible"] is True
    assert report["status"] == "finished"
    assert report["tool_steps"] == [["list_layers", True], ["select_features", True]]
    assert report["answer"] == "I selected the **large schools** (more than 500 pupils)."
    assert "I selected the large schools (more than 500 pupils)." in report["answer_rendered"]
    assert report["selected_schools"] > 0
    assert report["unloaded"] is True
    assert report["after_unload"] == {"docks": 0, "actions": 0, "menus": 0}
    assert report["plugin_loaded_after_unload"] is False
    # The first question of a session carries the project's state ahead of it (a note for the model).
    asked = model_server.chat_requests()[0].body["messages"][-1]["content"]
    assert asked.startswith("[Open project: ") and asked.endswith("]\n\nSelect the schools with more than 500 pupils")
