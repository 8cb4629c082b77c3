"""The MCP server: the ``mcp`` SDK's low-level ``Server`` answering with ``McpTools`` and the resources.

The low-level server (not the decorator-based one) because the tools already
have their schemas and checks: the toolkit's JSON schemas are sent as they
are, and every argument is checked by the toolkit, with its own wording, not
by a second validator in front of it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from geogpt_qgis.__about__ import TITLE, VERSION
from geogpt_qgis.mcp_server import resources

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from geogpt_qgis.mcp_server.tools import McpTools

INSTRUCTIONS = (
    "Tools over the QGIS project open in GeoGPT for QGIS: list and describe layers, read and select features, "
    "run processing algorithms, query PostGIS read-only. Steps that change data, write files or run code are "
    "approved by the person using QGIS; a rejected step returns their reason."
)
UNKNOWN_CLIENT = "MCP client"


def client_name(ctx: Any) -> str:
    """The name the client gave when it connected (its ``clientInfo``), for approvals and the run log."""
    try:
        info = ctx.session.client_params.client_info
    except AttributeError:
        info = None
    name = str(getattr(info, "name", "") or "").strip()
    return name[:80] or UNKNOWN_CLIENT


def build_server(tools: McpTools) -> Server:
    """A server offering ``tools`` and the project's resources (the SDK is imported here, lazily)."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        listed = [
            types.Tool(name=entry["name"], description=entry["description"], input_schema=entry["inputSchema"])
            for entry in await tools.catalogue()
        ]
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        sink = _progress_sink(ctx, asyncio.get_running_loop())
        answer = await tools.call(params.name, params.arguments, client_name(ctx), sink)
        meta = {"geogpt/artifact": answer.artifact} if answer.artifact else None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=answer.text)], is_error=answer.is_error, _meta=meta
        )

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        found = await resources.list_resources(tools)
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r["uri"], name=r["name"], description=r["description"], mime_type=resources.JSON)
                for r in found
            ]
        )

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await resources.read_resource(tools, uri)
        except resources.UnknownResource as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=resources.JSON, text=text)]
        )

    return Server(
        TITLE,
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _progress_sink(ctx: Any, loop: asyncio.AbstractEventLoop) -> Any:
    """A ``core.progress`` sink sending MCP progress notifications (the SDK drops them when no token was sent)."""

    def sink(percent: float, message: str) -> None:
        # From a tool's thread or the server's loop: the notification is always sent on the server's loop.
        send = ctx.session.report_progress(percent, 100.0, message or None)
        asyncio.run_coroutine_threadsafe(send, loop)

    return sink
