"""Issue 37: a layer QGIS cannot open never crashes QGIS; each tool says clearly that it failed, and why.

QGIS 3.22's ``QgsError::summary()`` on an empty error is a segfault, and failed providers leave the
error empty (the OAPIF one on a server it refuses, the ogr one on a broken file).  Every read goes
through ``tools.layer_errors``; here each tool that makes a layer meets a provider that really fails:
a server whose ``/noqgis/`` answers QGIS's own network manager with an empty 503 while the plugin's
client is served (``tests.support.file_server``), or a copy that is not a GeoPackage.  A crash kills
the process, so the crash-prone reads run in child processes too (the probe, the headless command),
where a signal is reported as the exit status.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.loading import DataLoading
from geogpt_qgis.tools.ogc.family import OgcTools
from tests.support.demo import copy_demo
from tests.support.file_server import REFUSE_QGIS, file_server, write_oapif
from tests.support.model_server import ToolCall, Turn
from tests.support.postgis import saved_connection
from tests.support.runs import ask, call_in_thread
from tests.support.user_profile import save_plugin_settings

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "geogpt_qgis"
GUARDED = PACKAGE / "tools" / "layer_errors.py"
MAPS_DATA = REPO / "tests" / "data" / "maps_load"
WELLS = 3  # write_oapif serves three wells
NOT_LINKED = "QGIS's OGC API Features provider could not open wells ("
COPIED = "so the fetched features were copied instead of linked."


@pytest.fixture(scope="module")
def refusing(tmp_path_factory):
    """A static server: ``/noqgis/oapi`` (OGC API Features, wells) and ``/noqgis/wms`` refuse QGIS itself."""
    root = tmp_path_factory.mktemp("refusing")
    write_oapif(root, REFUSE_QGIS.rstrip("/"))
    shutil.copy(MAPS_DATA / "wms_capabilities.xml", root / "wms")
    with file_server(root) as url:
        yield url


def test_failed_providers_of_every_kind_are_read_without_a_crash(refusing):
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.layer_error_probe", refusing],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -11: QGIS crashed reading an error
    report = json.loads(done.stdout.strip().splitlines()[-1])
    cases = {name: case for name, case in report.items() if isinstance(case, dict)}
    assert len(cases) == 7 and not any(case["valid"] for case in cases.values())
    for name, case in cases.items():
        assert case["message"] == f"QGIS could not open {name}: {case['why'] or 'QGIS gave no reason'}"
        if case["layer_error_empty"] and case["provider_error_empty"] in (True, None):
            assert case["why"] == "", name  # nothing to read, and nothing was read
    # The crash's condition was met (an empty error) and survived; an unknown provider leaves no provider at all.
    assert cases["unknown_provider"]["layer_error_empty"] and not cases["unknown_provider"]["has_provider"]
    assert cases["ogr_garbage"]["layer_error_empty"] and cases["ogr_garbage"]["provider_error_empty"]
    assert "file is not a database" in cases["gdal_garbage"]["why"]  # a reason QGIS gave is passed on
    assert "Provider is not valid" not in json.dumps(cases)  # QGIS's boilerplate repeats the source only
    assert report["none"] == ""


def test_no_module_reads_a_qgis_error_but_the_guarded_one():
    """``x.error()`` anywhere else (bar ``QgsProject.error()``, a plain string) could reach an empty error's summary."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == GUARDED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "error" and not node.args:
                receiver = node.func.value
                if not (isinstance(receiver, ast.Name) and receiver.id == "project"):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == [], "read layer and provider errors through geogpt_qgis.tools.layer_errors"
    assert len(list(PACKAGE.rglob("*.py"))) > 100  # the rule read the package


def test_a_whole_collection_qgis_cannot_link_is_copied_with_the_reason(refusing, tool_ctx, demo_project):
    PlgOptionsManager.set_value("ogc_servers", f"Wells = {refusing}{REFUSE_QGIS}oapi")
    before = set(demo_project.mapLayers())
    result = call_in_thread(OgcTools(tool_ctx).query_ogc_collection, "wells")
    (layer,) = demo_project.mapLayersByName(result.artifact.added[0].name)
    assert set(demo_project.mapLayers()) - before == {layer.id()}
    assert layer.providerType() != "OAPIF" and layer.featureCount() == WELLS
    assert sorted(f["name"] for f in layer.getFeatures()) == [f"well {i}" for i in range(1, WELLS + 1)]
    assert f"{WELLS} features from wells on Wells." in result.text
    assert NOT_LINKED in result.text and COPIED in result.text
    assert "linked to the server" not in result.text


def test_the_headless_command_survives_a_collection_qgis_cannot_link(refusing, model_server, tmp_path, monkeypatch):
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    data_home = tmp_path / "user-data"
    save_plugin_settings(data_home, ogc_servers=f"Wells = {refusing}{REFUSE_QGIS}oapi")
    model_server.script(
        [Turn(tool_calls=[ToolCall("query_ogc_collection", {"collection": "wells"})]), Turn(text="Ok.")]
    )
    done = ask(
        "Load the wells",
        *("--project", str(copy_demo(tmp_path / "demo")), "--base-url", model_server.url, "--model", "qwen3:8b"),
        env={"XDG_DATA_HOME": str(data_home)},
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])  # -11 was the crash
    (tool_message,) = model_server.chat_requests()[1].tool_messages()
    assert f"{WELLS} features from wells on Wells." in tool_message["content"]
    assert NOT_LINKED in tool_message["content"] and COPIED in tool_message["content"]


def test_load_data_of_a_web_map_qgis_cannot_open_is_a_clear_error(refusing, tool_ctx, demo_project):
    loader = DataLoading(tool_ctx)
    url = f"{refusing}{REFUSE_QGIS}wms?SERVICE=WMS&REQUEST=GetCapabilities"
    loader.notice_user_text(url)
    before = set(demo_project.mapLayers())
    with pytest.raises(ToolError) as caught:
        call_in_thread(loader.load_data, url, layer="roads")  # the plugin read the capabilities; QGIS gets 503
    host = refusing.split("//")[1]
    assert str(caught.value) == f"QGIS could not open WMS layer 'roads' at {host}: its wms provider gave no reason"
    assert set(demo_project.mapLayers()) == before


def test_load_data_of_a_collection_on_a_server_that_refuses_qgis_copies_it_without_qgis_provider(refusing, tool_ctx):
    """load_data reads a collection with the plugin's client and copies it: QGIS's OAPIF provider is never made."""
    loader = DataLoading(tool_ctx)
    url = f"{refusing}{REFUSE_QGIS}oapi/collections/wells"
    loader.notice_user_text(url)
    result = call_in_thread(loader.load_data, url)
    (layer,) = tool_ctx.project.mapLayersByName(result.artifact.added[0].name)
    assert layer.providerType() == "ogr" and layer.featureCount() == WELLS
    assert f"{WELLS} features" in result.text


@pytest.mark.postgis
def test_run_sql_whose_copy_qgis_cannot_open_is_a_clear_error(tool_ctx, demo_project, monkeypatch):
    from geogpt_qgis.tools.postgis import family
    from geogpt_qgis.tools.postgis.family import PostgisTools

    real_copy = family.copy_result

    def broken_copy(*args, **kwargs) -> Path:
        path = real_copy(*args, **kwargs)
        path.write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)  # the copy's file is damaged on the way
        return path

    monkeypatch.setattr(family, "copy_result", broken_copy)
    before = set(demo_project.mapLayers())
    with saved_connection("elvbury_broken_copy") as name, pytest.raises(ToolError) as caught:
        call_in_thread(PostgisTools(tool_ctx).run_sql, "SELECT name, geom FROM schools", connection=name)
    assert str(caught.value) == "QGIS could not open the copied result: QGIS gave no reason"
    assert set(demo_project.mapLayers()) == before
