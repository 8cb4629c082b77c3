"""The in-plugin MCP server over Streamable HTTP, in real QGIS, driven by the ``mcp`` SDK's own client.

The server runs on its thread; this test's main thread is QGIS's, kept
turning (``call_in_thread``) so the tools' bridge can serve it, as in QGIS.
"""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest

from geogpt_qgis.core.approval import REJECT, Decision
from tests.support.runs import call_in_thread

TOKEN = "test-token-mcp-0123456789abcdef"


@pytest.fixture
def serve(tool_ctx):
    """Start a server for the demo project with the given approver and limits; stopped afterwards."""
    from geogpt_qgis.mcp_server.http import HttpServer
    from geogpt_qgis.mcp_server.tools import McpTools

    started = []

    def start(approver=None, **limits):
        tools = McpTools(tool_ctx, approver, **limits) if approver else McpTools(tool_ctx, **limits)
        server = HttpServer(tools, TOKEN, "127.0.0.1", 0)
        server.start()
        started.append(server)
        assert server.wait_started()
        return server

    yield start
    for server in started:
        server.stop()
        assert not server.running


def client(url: str, token: str = TOKEN):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)


def texts(result) -> str:
    return "".join(block.text for block in result.content)


def run(coroutine_function):
    """Run the client's coroutine on a thread while the main thread serves the bridge."""
    return call_in_thread(lambda: asyncio.run(coroutine_function()), timeout=60)


def test_the_sdk_client_lists_tools_and_calls_them_over_http(serve, tool_ctx):
    from geogpt_qgis.tools.project.family import ProjectTools

    server = serve()
    expected = ProjectTools(tool_ctx).describe_layer().text

    async def talk():
        async with client(server.url) as session:
            listed = await session.list_tools()
            layers = await session.call_tool("describe_layer", {})
            described = await session.call_tool("describe_layer", {"layer": "schools"})
            unknown = await session.call_tool("remove_layers", {})
            return listed, layers, described, unknown

    listed, layers, described, unknown = run(talk)
    assert {"describe_layer", "find_algorithm", "set_layer"} <= {tool.name for tool in listed.tools}
    assert not layers.is_error and texts(layers) == expected
    assert "Fields (" in texts(described)
    assert unknown.is_error and "Did you mean set_layer" in texts(unknown)
    assert server.url == f"http://127.0.0.1:{server.port}/mcp"


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"bearer {TOKEN}", TOKEN])
def test_a_missing_or_wrong_token_gets_401_and_nothing_runs(serve, tool_ctx, authorization):
    approvals = []

    async def approver(request, client):
        approvals.append(request)
        return Decision(REJECT)

    server = serve(approver)
    count = len(tool_ctx.project.mapLayers())
    params = {"name": "remove_layer", "arguments": {"layer": "schools"}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    answer = call_in_thread(httpx.post, server.url, json=call, headers=headers, timeout=10)
    assert answer.status_code == 401
    assert "bearer token" in answer.json()["error"] and answer.headers["www-authenticate"].startswith("Bearer")
    assert approvals == [] and len(tool_ctx.project.mapLayers()) == count


def test_no_standalone_get_stream_is_offered_and_a_get_without_the_token_is_still_401(serve):
    server = serve()
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/event-stream"}
    answer = call_in_thread(httpx.get, server.url, headers=headers, timeout=10)
    assert answer.status_code == 405 and answer.headers["allow"] == "POST, DELETE"
    assert "nothing unasked" in answer.json()["error"]
    anonymous = call_in_thread(httpx.get, server.url, headers={"Accept": "text/event-stream"}, timeout=10)
    assert anonymous.status_code == 401


def test_an_oversized_request_is_refused_before_it_is_read(serve):
    server = serve(max_running=1)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "x" * 1_200_000})
    answer = call_in_thread(httpx.post, server.url, content=body, headers=headers, timeout=10)
    assert answer.status_code == 413 and "larger than this server accepts" in answer.json()["error"]


def test_past_the_queue_a_call_is_told_the_server_is_busy(serve, tool_ctx):
    release, entered = threading.Event(), threading.Event()  # across the server's and the client's loops

    async def slow_person(request, client):
        entered.set()
        await asyncio.to_thread(release.wait, 20)
        return Decision(REJECT, reason="not today")

    server = serve(slow_person, max_running=1, max_waiting=0)

    async def talk():
        async with client(server.url) as first, client(server.url) as second:
            waiting = asyncio.create_task(first.call_tool("set_layer", {"layer": "schools", "remove": True}))
            assert await asyncio.to_thread(entered.wait, 20)
            busy = await second.call_tool("describe_layer", {})
            release.set()
            return await waiting, busy

    refused, busy = run(talk)
    assert busy.is_error and "is busy" in texts(busy) and "Try again" in texts(busy)
    assert refused.is_error and "not today" in texts(refused)
    assert "schools" in {layer.name() for layer in tool_ctx.project.mapLayers().values()}


def test_a_client_that_hangs_up_mid_call_leaves_nothing_half_done(serve, tool_ctx):
    entered, cancelled = threading.Event(), threading.Event()

    async def never_answers(request, client):
        entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Decision(REJECT)

    server = serve(never_answers)

    async def hang_up():
        async with client(server.url) as session:
            call = asyncio.create_task(session.call_tool("set_layer", {"layer": "schools", "remove": True}))
            assert await asyncio.to_thread(entered.wait, 20)
            call.cancel()
        # the client is gone: the server's call is cancelled

    run(hang_up)
    assert cancelled.wait(10)
    assert "schools" in {layer.name() for layer in tool_ctx.project.mapLayers().values()}

    async def again():  # and the server still serves
        async with client(server.url) as session:
            return await session.call_tool("describe_layer", {})

    assert not run(again).is_error


def test_the_plugins_service_follows_the_settings_with_a_stored_token(demo_project, qgis_iface):
    from geogpt_qgis.gui.background import run_in_background
    from geogpt_qgis.mcp_server.service import McpService
    from geogpt_qgis.toolbelt.preferences import PlgSettings
    from geogpt_qgis.toolbelt.secrets import mcp_server_token
    from tests.support.runs import wait_until

    service = McpService(qgis_iface, run_in_background=run_in_background)
    states = []
    service.state_changed.connect(states.append)
    settings = PlgSettings(mcp_enabled=False, mcp_port=0, approval_policy="never")
    try:
        service.apply(settings)
        assert not service.state.running and states == []  # off by default: nothing starts
        settings.mcp_enabled = True
        service.apply(settings)
        wait_until(lambda: service.state.running, 30)
        state = service.state
        assert state.url.startswith("http://127.0.0.1:") and state.url.endswith("/mcp") and not state.warning
        assert len(state.token) >= 40 and call_in_thread(mcp_server_token) == state.token  # kept, not remade

        async def talk():
            async with client(state.url, state.token) as session:
                layers = await session.call_tool("describe_layer", {})
                removed = await session.call_tool("remove_layer", {"layer": "schools"})
                return layers, removed

        layers, removed = run(talk)
        assert not layers.is_error and " layers (project CRS" in texts(layers)
        assert removed.is_error and "approval policy (never allow)" in texts(removed)
        assert "schools" in {layer.name() for layer in demo_project.mapLayers().values()}
        service.stop()
        assert states[-1] == service.state and not service.state.running

        def refused() -> bool:
            try:
                httpx.post(state.url, json={}, timeout=2)
            except httpx.ConnectError:
                return True
            except httpx.TransportError:  # still closing: it took the connection and dropped it
                return False
            return False

        wait_until(lambda: call_in_thread(refused), 10)
    finally:
        service.shutdown()
