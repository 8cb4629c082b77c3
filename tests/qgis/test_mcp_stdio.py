"""``python -m geogpt_qgis mcp PROJECT`` driven by the ``mcp`` SDK's own client over stdio (a real subprocess).

The tools, schemas, checks and texts must be the dock agent's: the expected
values are computed here, in this process, from the same toolkit and project.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.demo import copy_demo

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project_file(tmp_path) -> Path:
    return copy_demo(tmp_path / "demo")


def server_env(tmp_path: Path) -> dict[str, str]:
    """A fresh QGIS profile (under its own data folder), never the user's or the tests' one."""
    env = {k: v for k, v in os.environ.items() if k != "QGIS_CUSTOM_CONFIG_PATH"}
    return {**env, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "user-data")}


def session(project: Path, tmp_path: Path, *extra: str):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "geogpt_qgis", "mcp", str(project), *extra],
        cwd=str(REPO),
        env=server_env(tmp_path),
    )
    return Client(params, read_timeout_seconds=60)


def texts(result) -> str:
    return "".join(block.text for block in result.content)


def test_tools_resources_and_answers_are_the_dock_agents(project_file, tmp_path, tool_ctx):
    from geogpt_qgis.agent.toolkit import Toolkit
    from geogpt_qgis.tools.project.family import ProjectTools
    from geogpt_qgis.tools.registry import build_families

    every_tool = [tool for family in build_families(tool_ctx) for tool in family.tools()]
    toolkit = Toolkit(every_tool)
    schemas = {s["function"]["name"]: s["function"] for s in toolkit.bounded_schemas}
    tool_ctx.project.clear()
    assert tool_ctx.project.read(str(project_file))
    expected_layers = ProjectTools(tool_ctx).describe_layer().text
    layer_count = len(tool_ctx.project.mapLayers())

    async def talk():
        async with session(project_file, tmp_path) as client:
            listed = (await client.list_tools()).tools
            layers = await client.call_tool("describe_layer", {})
            old_name = await client.call_tool("list_layers", {})  # a merged tool's old name still answers
            described = await client.call_tool("describe_layer", {"layer": "schools"})
            bad_type = await client.call_tool("describe_layer", {"layer": 5})
            missing = await client.call_tool("read_features", {})
            extra = await client.call_tool("describe_layer", {"verbose": True})
            unknown = await client.call_tool("describe_layers", {"layer": "schools"})
            resources = (await client.list_resources()).resources
            all_layers = await client.read_resource("geogpt://layers")
            catalogue = await client.read_resource("geogpt://tools")
            answers = layers, old_name, described, bad_type, missing, extra, unknown
            return listed, *answers, resources, all_layers, catalogue

    listed, layers, old_name, described, bad_type, missing, extra, unknown, resources, all_layers, catalogue = (
        asyncio.run(talk())
    )
    names = [tool.name for tool in listed]
    assert {"describe_layer", "read_features", "find_algorithm", "run_algorithm", "describe_capabilities"} <= set(names)
    assert not {"list_layers", "search_algorithms", "describe_algorithm"} & set(names)  # merged: not offered
    for tool in listed:  # the schemas the toolkit enforces, as they are
        assert tool.input_schema == schemas[tool.name]["parameters"], tool.name
        assert tool.description == schemas[tool.name]["description"]
    assert not layers.is_error and texts(layers) == expected_layers
    assert not old_name.is_error and texts(old_name) == expected_layers
    assert not described.is_error and "Fields (" in texts(described) and "schools" in texts(described)
    (read,) = described.meta["geogpt/artifact"]["layers"]  # with its id: the layer itself, whatever its name
    assert read["name"] == "schools" and read["layer_id"].startswith("schools")
    for result, call in ((bad_type, ("describe_layer", {"layer": 5})), (missing, ("read_features", {}))):
        assert result.is_error
        assert texts(result) == toolkit.check_arguments(*call).text
    assert "invalid arguments for describe_layer" in texts(bad_type)
    assert "missing required argument 'layer'" in texts(missing)
    assert extra.is_error
    assert texts(extra) == "Error: describe_layer has no argument 'verbose'; valid arguments: layer, at."
    assert unknown.is_error and "Did you mean describe_layer" in texts(unknown)
    uris = {str(r.uri) for r in resources}
    assert {"geogpt://layers", "geogpt://tools"} <= uris and len(uris) == 2 + layer_count  # one per layer
    rows = json.loads(all_layers.contents[0].text)
    schools = next(row for row in rows if row["name"] == "schools")
    assert (schools["type"], schools["crs"], schools["feature_count"]) == ("vector", "EPSG:25832", 31)
    gated = {entry["name"]: entry["gated"] for entry in json.loads(catalogue.contents[0].text)}
    assert gated["run_pyqgis"] and gated["set_layer"] and not gated["describe_layer"]


def test_a_gated_call_is_refused_with_the_reason_when_no_one_can_approve(project_file, tmp_path):
    async def talk():
        async with session(project_file, tmp_path) as client:
            before = await client.call_tool("describe_layer", {})
            removed = await client.call_tool("set_layer", {"layer": "schools", "remove": True})
            code = await client.call_tool("run_pyqgis", {"code": "print(1)"})
            after = await client.call_tool("describe_layer", {})
            return before, removed, code, after

    before, removed, code, after = asyncio.run(talk())
    for result in (removed, code):
        assert result.is_error
        assert "has no one to ask" in texts(result) and "--approval trust" in texts(result)
    assert "| schools |" in texts(after) and texts(after) == texts(before)


def test_trusted_clients_may_run_gated_steps(project_file, tmp_path):
    async def talk():
        async with session(project_file, tmp_path, "--approval", "trust") as client:
            before = await client.call_tool("describe_layer", {})
            removed = await client.call_tool("remove_layer", {"layer": "schools"})
            after = await client.call_tool("describe_layer", {})
            return before, removed, after

    before, removed, after = asyncio.run(talk())
    assert not removed.is_error, texts(removed)
    count = int(texts(before).split()[0])
    assert texts(after).startswith(f"{count - 1} layers") and "| schools |" not in texts(after)


def test_garbage_and_malformed_requests_leave_the_server_serving(project_file, tmp_path):
    """Raw JSON-RPC: a line that is not JSON, then a call whose arguments are not an object."""
    process = subprocess.Popen(
        [sys.executable, "-m", "geogpt_qgis", "mcp", str(project_file)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(tmp_path),
    )
    assert process.stdin is not None and process.stdout is not None

    def send(message: object) -> None:
        process.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        process.stdin.flush()

    try:
        send("{not json")
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert json.loads(process.stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        not_an_object = {"name": "describe_layer", "arguments": [1]}
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": not_an_object})
        refused = json.loads(process.stdout.readline())
        assert refused["id"] == 2 and refused["error"]["code"] == -32602
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "describe_layer", "arguments": {}}})
        answer = json.loads(process.stdout.readline())
        assert answer["id"] == 3 and " layers (project CRS" in answer["result"]["content"][0]["text"]
        process.stdin.close()
        assert process.wait(30) == 0  # the client hung up: the server ends cleanly
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_missing_project_is_a_usage_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "geogpt_qgis", "mcp", str(tmp_path / "nowhere.qgz")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 2 and "no project file" in done.stderr
