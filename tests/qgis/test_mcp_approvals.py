"""Approvals stay in QGIS: a gated MCP call raises the dock's approval card, titled with the client, and waits.

Real parts: the SDK's client over Streamable HTTP, the server on its thread,
the chat view and approval card on this (QGIS's main) thread.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from geogpt_qgis.gui.approval_card import ApprovalCard
from tests.qgis.test_mcp_http import TOKEN, texts
from tests.support.runs import wait_until

CLIENT = "Test Assistant"


@pytest.fixture
def chat(qgis_app):
    from geogpt_qgis.gui.chat_view import ChatView

    view = ChatView()
    view.show()
    yield view
    view.deleteLater()


@pytest.fixture
def serve_with(tool_ctx):
    from geogpt_qgis.mcp_server.http import HttpServer
    from geogpt_qgis.mcp_server.tools import McpTools

    servers = []

    def start(approver):
        server = HttpServer(McpTools(tool_ctx, approver), TOKEN, "127.0.0.1", 0)
        server.start()
        servers.append(server)
        assert server.wait_started()
        return server

    yield start
    for server in servers:
        server.stop()


def call_in_background(url: str, name: str, arguments: dict, outcome: dict) -> threading.Thread:
    """The client's call on its own thread, so this thread can answer the card meanwhile."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    async def talk():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        info = Implementation(name=CLIENT, version="1.0")
        async with Client(streamable_http_client(url, http_client=http), client_info=info) as session:

            async def progress(done, total, message):
                outcome.setdefault("progress", []).append(message)

            outcome["result"] = await session.call_tool(name, arguments, progress_callback=progress)

    def work():
        try:
            asyncio.run(talk())
        except BaseException as exc:  # noqa: BLE001 - checked by the test
            outcome["error"] = exc

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def cards(chat) -> list[ApprovalCard]:
    return [item for item in chat.items() if isinstance(item, ApprovalCard)]


def layer_names(project) -> set[str]:
    return {layer.name() for layer in project.mapLayers().values()}


def test_a_rejection_in_the_dock_returns_the_reason_and_changes_nothing(chat, serve_with, tool_ctx):
    from geogpt_qgis.gui.mcp_approvals import DockApprovals

    server = serve_with(DockApprovals(lambda: chat, "ask", progress_every=0.2))
    outcome: dict = {}
    thread = call_in_background(server.url, "set_layer", {"layer": "schools", "remove": True}, outcome)
    wait_until(lambda: len(cards(chat)) == 1, 120)
    card = cards(chat)[0]
    assert CLIENT in card.title.text() and "(MCP)" in card.title.text()
    assert not card.trust_button.isVisibleTo(card) and not card.drop_button.isVisibleTo(card)
    wait_until(lambda: len(outcome.get("progress", [])) >= 2, 120)  # the client hears that it waits
    assert "Waiting for approval in QGIS" in outcome["progress"][0]
    card.reason.setText("keep the schools")
    card.reject_button.click()
    wait_until(lambda: not thread.is_alive(), 120)
    assert "error" not in outcome, outcome.get("error")
    result = outcome["result"]
    assert result.is_error and "rejected" in texts(result) and "keep the schools" in texts(result)
    assert "schools" in layer_names(tool_ctx.project)


def test_an_approval_in_the_dock_lets_the_step_run(chat, serve_with, tool_ctx):
    from geogpt_qgis.gui.mcp_approvals import DockApprovals

    server = serve_with(DockApprovals(lambda: chat, "ask"))
    outcome: dict = {}
    thread = call_in_background(server.url, "set_layer", {"layer": "schools", "remove": True}, outcome)
    wait_until(lambda: len(cards(chat)) == 1, 120)
    cards(chat)[0].approve_button.click()
    wait_until(lambda: not thread.is_alive(), 120)
    assert not outcome["result"].is_error, texts(outcome["result"])
    assert "schools" not in layer_names(tool_ctx.project)


@pytest.mark.parametrize(
    ("policy", "chat_there", "expected"),
    [("never", True, "approval policy (never allow)"), ("ask", False, "dock, where they approve, is not open")],
)
def test_the_policy_and_a_missing_dock_refuse_without_a_card(chat, serve_with, tool_ctx, policy, chat_there, expected):
    from geogpt_qgis.gui.mcp_approvals import DockApprovals

    server = serve_with(DockApprovals(lambda: chat if chat_there else None, policy))
    outcome: dict = {}
    thread = call_in_background(server.url, "set_layer", {"layer": "schools", "remove": True}, outcome)
    wait_until(lambda: not thread.is_alive(), 120)
    assert outcome["result"].is_error and expected in texts(outcome["result"])
    assert cards(chat) == [] and "schools" in layer_names(tool_ctx.project)


def test_every_call_is_in_the_run_log_with_the_clients_name(chat, tool_ctx, tmp_path):
    import sqlite3

    from geogpt_qgis.core.run_log import RunRecord, format_runs
    from geogpt_qgis.gui.mcp_approvals import DockApprovals
    from geogpt_qgis.mcp_server.http import HttpServer
    from geogpt_qgis.mcp_server.run_log import McpRunLog, client_thread_id
    from geogpt_qgis.mcp_server.tools import McpTools

    store = tmp_path / "conversations.sqlite"
    tools = McpTools(tool_ctx, DockApprovals(lambda: chat, "never"), run_log=McpRunLog(store, "demo.qgz"))
    server = HttpServer(tools, TOKEN, "127.0.0.1", 0)
    server.start()
    try:
        assert server.wait_started()
        for name, arguments in (("describe_layer", {}), ("remove_layer", {"layer": "schools"})):
            outcome: dict = {}
            thread = call_in_background(server.url, name, arguments, outcome)
            wait_until(lambda: not thread.is_alive(), 120)  # noqa: B023 - waited for within the loop
            assert "result" in outcome, outcome
    finally:
        server.stop()
    assert not server.running
    # The log's SQLite connection is closed: its worker thread ends (a moment after the close, under load).
    wait_until(lambda: not [t for t in threading.enumerate() if "_connection_worker_thread" in t.name], 120)
    with sqlite3.connect(store) as db:
        title = db.execute("SELECT title FROM geogpt_conversations WHERE thread_id = ?", (client_thread_id(CLIENT),))
        assert title.fetchone() == (f"MCP: {CLIENT}",)
        heads = db.execute("SELECT run_id, label, started, ended, status, error FROM geogpt_runs ORDER BY started")
        runs = [RunRecord(*head) for head in heads.fetchall()]
        for run in runs:
            rows = db.execute(
                "SELECT at, kind, data FROM geogpt_run_events WHERE run_id = ? ORDER BY seq", (run.run_id,)
            )
            run.events = [(at, kind, json.loads(data)) for at, kind, data in rows]
    assert [(run.label, run.status) for run in runs] == [
        (f"MCP call from {CLIENT}: describe_layer", "finished"),
        (f"MCP call from {CLIENT}: remove_layer", "failed"),
    ]
    assert [kind for _at, kind, _data in runs[1].events] == ["tool_started", "approval", "tool"]
    text = format_runs(runs)
    assert f"MCP call from {CLIENT}: remove_layer" in text and "remove_layer" in text
