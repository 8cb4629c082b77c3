"""The MCP Inspector's command-line mode (npm, installed by ``make setup`` in tools/) against the plugin in QGIS.

A client nobody here wrote: it lists the tools, calls ``describe_layer`` (the layer list) and a
gated tool over Streamable HTTP with the options page's token, and is refused
without it.  Run offline: the inspector was installed beforehand.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.runs import call_in_thread, wait_until

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = REPO / "tools" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture
def plugin_server(demo_project, qgis_iface):
    """The plugin's MCP service switched on (its token from the key store), approvals under policy "never"."""
    from geogpt_qgis.gui.background import run_in_background
    from geogpt_qgis.gui.mcp_approvals import DockApprovals
    from geogpt_qgis.mcp_server.service import McpService
    from geogpt_qgis.toolbelt.preferences import PlgSettings

    service = McpService(
        qgis_iface, run_in_background=run_in_background, approvals=lambda policy: DockApprovals(lambda: None, policy)
    )
    service.apply(PlgSettings(mcp_enabled=True, mcp_port=0, approval_policy="never"))
    wait_until(lambda: service.state.running or bool(service.state.error), 30)
    assert service.state.running, service.state.error
    yield service.state
    service.shutdown()


def _node_options() -> str:
    """The Inspector uses the globals ``CustomEvent`` and ``crypto`` of Node.js 19 and later; Debian 12's Node.js 18
    has them behind flags (a machine without NodeSource's Node.js 20 runs Debian's)."""
    options = os.environ.get("NODE_OPTIONS", "")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout
    major = int(version.strip().lstrip("v").split(".")[0])
    flags = "--experimental-global-customevent --experimental-global-webcrypto"
    return f"{options} {flags}".strip() if major < 19 else options


def inspect(tmp_path: Path, url: str, token: str | None, *method: str) -> subprocess.CompletedProcess:
    assert INSPECTOR.is_file(), "make setup installs the MCP Inspector into tools/mcp-inspector"
    headers = ["--header", f"Authorization: Bearer {token}"] if token else []
    env = {**os.environ, "HOME": str(tmp_path), "npm_config_offline": "true", "NODE_OPTIONS": _node_options()}
    command = [str(INSPECTOR), "--cli", url, "--transport", "http", *headers, "--method", *method]
    # On a thread: this (QGIS's main) thread keeps serving the tools' bridge meanwhile.
    return call_in_thread(
        lambda: subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False), timeout=90
    )


def test_the_inspector_lists_tools_and_calls_describe_layer_and_a_gated_tool(plugin_server, tmp_path, demo_project):
    url, token = plugin_server.url, plugin_server.token
    listed = inspect(tmp_path, url, token, "tools/list")
    assert listed.returncode == 0, listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert {"describe_layer", "find_algorithm", "set_layer", "run_pyqgis"} <= names
    layers = inspect(tmp_path, url, token, "tools/call", "--tool-name", "describe_layer")
    assert layers.returncode == 0, layers.stderr
    answer = json.loads(layers.stdout)
    assert not answer["isError"] and "| schools |" in answer["content"][0]["text"]
    gated = inspect(
        tmp_path, url, token, "tools/call", "--tool-name", "set_layer", "--tool-arg", "layer=schools", "remove=true"
    )
    refused = json.loads(gated.stdout)
    assert refused["isError"] and "approval policy (never allow)" in refused["content"][0]["text"]
    assert "schools" in {layer.name() for layer in demo_project.mapLayers().values()}
    without = inspect(tmp_path, url, None, "tools/list")  # the 401 makes the inspector ask for a login
    assert without.returncode != 0 and '"auth_required"' in without.stderr and not without.stdout
