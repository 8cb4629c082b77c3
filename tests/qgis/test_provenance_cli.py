"""Provenance through the command line: ``ask --save`` against the scripted OpenAI-compatible server (with a key);
the saved project and its results GeoPackage both say where the result came from, and neither holds the key."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from qgis.core import QgsProject, QgsProviderRegistry, QgsVectorLayer

from geogpt_qgis.core import result_files
from geogpt_qgis.core.provenance import HEADER
from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import ask

KEY = "sk-provenance-key-0123456789"
QUESTION = "Buffer the rivers by 100 m"


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch) -> Path:
    """The command reads a QGIS profile of its own (as in test_cli)."""
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return data


def test_provenance_through_the_cli_in_the_saved_project_and_its_geopackage_without_the_key(model_server, tmp_path):
    project_file = copy_demo(tmp_path / "demo")
    model_server.api_key = KEY
    call = {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100}, "output_name": "out"}
    model_server.script([Turn(tool_calls=[ToolCall("run_algorithm", call)]), Turn(text="Done.")])
    out = tmp_path / "out" / "analysis.qgz"
    out.parent.mkdir()
    server = model_server.url + "/v1"
    done = ask(
        QUESTION,
        "--project",
        str(project_file),
        "--provider",
        "openai",
        "--base-url",
        server,
        "--model",
        "qwen3:8b",
        "--save",
        str(out),
        env={"OPENAI_API_KEY": KEY},
    )
    assert done.returncode == 0, done.stderr

    saved = QgsProject()
    try:
        assert saved.read(str(out))
        (layer,) = saved.mapLayersByName("out")
        (rivers,) = saved.mapLayersByName("rivers")
        lines = layer.metadata().abstract().splitlines()
        assert lines[0].startswith(HEADER)
        assert f'Question: "{QUESTION}"' in lines and "Tool: run_algorithm" in lines
        assert "Algorithm: native:buffer" in lines and 'Parameters: {"DISTANCE": 100, "INPUT": "rivers"}' in lines
        assert f"- rivers ({rivers.source()})" in lines
        assert f"Model: qwen3:8b at {server} (openai)" in lines
        (entry,) = layer.metadata().history()
        assert entry.endswith(f'question "{QUESTION}"')
        parts = QgsProviderRegistry.instance().decodeUri("ogr", layer.source())
        path, table = Path(parts["path"]), parts["layerName"]
    finally:
        saved.clear()
    assert path == result_files.results_folder_for(out) / f"{table}.gpkg"  # beside the saved copy, not the asked one
    fresh = QgsVectorLayer(f"{path}|layername={table}", "fresh", "ogr")
    assert fresh.isValid()
    assert fresh.metadata().abstract().splitlines() == lines
    assert table in result_files.result_tables(path)
    # The key reached the server but is nowhere in what was saved.
    with zipfile.ZipFile(out) as archive:
        assert all(KEY.encode() not in archive.read(name) for name in archive.namelist())
    assert KEY.encode() not in path.read_bytes()
    assert not (project_file.parent / "elvbury_results").exists()  # the asked project is left as it was
