"""Issue 37: a whole OGC API collection (no filter, no bbox) through the tool, the headless command and MCP.

QGIS 3.22 killed the process (signal 11) when ``query_ogc_collection {"collection": "schools"}`` made a
layer QGIS's OAPIF provider could not open and the plugin read its empty error.  Here the real
pygeoapi server serves the demo town, and the server setting is saved where each process reads it:
this process's settings for the tool and the in-plugin HTTP server; the user's default profile under
``$XDG_DATA_HOME`` for the command and the stdio server (``tests.support.user_profile``), which an
earlier check missed.  The expected count comes from PostGIS (SQL here, not the tool).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.ogc.family import OgcTools
from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.postgis import connect
from tests.support.runs import ask, call_in_thread
from tests.support.user_profile import child_env, save_plugin_settings

pytestmark = pytest.mark.postgis

REPO = Path(__file__).resolve().parents[2]
CALL = {"collection": "schools"}  # the whole collection: no filter, no bbox


def schools_total() -> int:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM schools")
        return int(cursor.fetchone()[0])


def expected_text(total: int) -> str:
    return f": {total:,} features from schools on Elvbury."


@pytest.fixture
def data_home(tmp_path, monkeypatch) -> Path:
    """A fresh user data folder for child processes; pytest-qgis's profile variable must not reach them."""
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return tmp_path / "user-data"


def test_the_tool_links_the_whole_collection(ogc_server, tool_ctx, demo_project):
    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")
    total = schools_total()
    result = call_in_thread(OgcTools(tool_ctx).query_ogc_collection, **CALL)
    (layer,) = demo_project.mapLayersByName(result.artifact.added[0].name)
    assert layer.providerType() == "OAPIF" and "typename='schools'" in layer.source()
    assert layer.featureCount() == total
    assert expected_text(total) in result.text and "linked to the server" in result.text


def test_the_headless_command_runs_it_against_the_server(ogc_server, model_server, data_home, tmp_path):
    save_plugin_settings(data_home, ogc_servers=f"Elvbury = {ogc_server.url}")
    total = schools_total()
    model_server.script(
        [Turn(tool_calls=[ToolCall("query_ogc_collection", CALL)]), Turn(text="All schools are on the map.")]
    )
    out = tmp_path / "out.qgz"
    project = copy_demo(tmp_path / "demo")
    done = ask(
        "Load every school from the OGC server",
        *("--project", str(project), "--base-url", model_server.url, "--model", "qwen3:8b", "--save", str(out)),
        env={"XDG_DATA_HOME": str(data_home)},
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])  # -11 was signal 11
    assert done.stdout == "All schools are on the map.\n"
    (tool_message,) = model_server.chat_requests()[1].tool_messages()
    assert expected_text(total) in tool_message["content"], tool_message["content"]
    assert "linked to the server" in tool_message["content"]
    with zipfile.ZipFile(out) as archive:
        xml = archive.read(next(n for n in archive.namelist() if n.endswith(".qgs"))).decode()
    assert re.search(r"<provider[^>]*>OAPIF</provider>", xml)  # saved linked, as the tool said
    assert f"url='{ogc_server.url}' typename='schools'" in xml


def test_the_stdio_mcp_server_runs_it_and_ends_cleanly(ogc_server, data_home, tmp_path):
    save_plugin_settings(data_home, ogc_servers=f"Elvbury = {ogc_server.url}")
    total = schools_total()
    project = copy_demo(tmp_path / "demo")
    process = subprocess.Popen(
        [sys.executable, "-m", "geogpt_qgis", "mcp", str(project)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env(data_home),
    )
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict) -> None:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()

    def call(call_id: int, name: str, arguments: dict) -> dict:
        send(
            {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )
        line = process.stdout.readline()
        assert line, f"the server ended (exit status {process.wait(30)})"
        answer = json.loads(line)
        assert answer["id"] == call_id
        return answer["result"]

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert json.loads(process.stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        queried = call(2, "query_ogc_collection", CALL)
        text = queried["content"][0]["text"]
        assert not queried.get("isError"), text
        assert expected_text(total) in text and "linked to the server" in text
        name = text.split("'")[1]  # Added 'NAME' ...
        described = call(3, "describe_layer", {"layer": name})
        assert not described.get("isError") and f"{total:,}" in described["content"][0]["text"]
        process.stdin.close()
        assert process.wait(60) == 0  # the client hung up: the server ends cleanly, no signal
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_in_plugin_http_mcp_server_runs_it(ogc_server, tool_ctx, demo_project):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from geogpt_qgis.mcp_server.http import HttpServer
    from geogpt_qgis.mcp_server.tools import McpTools

    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")
    total = schools_total()
    token = "test-token-ogc-whole-0123456789"
    server = HttpServer(McpTools(tool_ctx), token, "127.0.0.1", 0)
    server.start()
    try:
        assert server.wait_started()

        async def talk():
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with Client(streamable_http_client(server.url, http_client=http), read_timeout_seconds=60) as c:
                return await c.call_tool("query_ogc_collection", CALL)

        result = call_in_thread(lambda: asyncio.run(talk()), timeout=90)
    finally:
        server.stop()
    text = "".join(block.text for block in result.content)
    assert not result.is_error, text
    assert expected_text(total) in text and "linked to the server" in text
    linked = [layer for layer in demo_project.mapLayers().values() if layer.providerType() == "OAPIF"]
    assert len(linked) == 1 and linked[0].featureCount() == total
