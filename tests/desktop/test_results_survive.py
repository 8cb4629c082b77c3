"""In the real QGIS desktop (Xvfb): a result the agent adds survives Save As, close and reopen."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.qgis.test_result_store import reopen
from tests.support.demo import copy_demo
from tests.support.desktop import REPO, run_qgis_session
from tests.support.model_server import ToolCall, Turn

pytestmark = pytest.mark.desktop

BUFFER = {"INPUT": "rivers", "DISTANCE": 100, "SEGMENTS": 32}
COLOUR = "#12ab34"


def test_a_buffer_made_in_the_dock_survives_save_as_close_and_reopen(tmp_path, model_server):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("run_algorithm", {"algorithm": "native:buffer", "parameters": BUFFER})]),
            Turn(text="Buffered the rivers by 100 m."),
        ]
    )
    project = copy_demo(tmp_path / "demo")
    saved = tmp_path / "saved" / "town.qgz"
    saved.parent.mkdir()
    report = run_qgis_session(
        tmp_path,
        project,
        {"provider": "ollama", "ollama_url": model_server.url, "ollama_model": "qwen3:8b"},
        {
            "GEOGPT_DESKTOP_QUESTION": "Buffer the rivers by 100 m",
            "GEOGPT_DESKTOP_SAVE_AS": str(saved),
            "GEOGPT_DESKTOP_COLOUR": COLOUR,
        },
        session=REPO / "tests" / "support" / "desktop_results_session.py",
    )
    assert report["errors"] == [], report
    assert report["status"] == "finished"
    # Made beside the opened project, then copied beside the new one by the Save.
    made = project.with_name("elvbury_results") / "rivers_buffer_100m.gpkg"
    assert report["source_before"] == f"{made}|layername=rivers_buffer_100m"
    results = saved.with_name("town_results")
    stored = results / "rivers_buffer_100m.gpkg"
    assert report["source_after"] == f"{stored}|layername=rivers_buffer_100m"
    assert any(str(results) in text for text in report["messages"]), report["messages"]
    assert report["dirty_after_save"] is False
    seen = reopen(saved)
    buffered = seen["rivers_buffer_100m"]
    assert buffered["valid"] and buffered["provider"] == "ogr" and Path(buffered["path"]) == stored
    assert buffered["count"] == 2 and len(report["wkt"]) == 2
    assert buffered["wkt"] == report["wkt"]
    assert buffered["colour"] == COLOUR
