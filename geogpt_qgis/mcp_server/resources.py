"""MCP resources: the project's layers (name, type, CRS, feature count) and the tool catalogue.

A client can read what is in the project without spending a tool call.  The
layers are read on the main thread through the tools' bridge, as the tools
read them; each layer has its own resource, plus one listing them all.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from geogpt_qgis.mcp_server.tools import McpTools
    from geogpt_qgis.tools.base import ToolContext

LAYERS_URI = "geogpt://layers"
LAYER_PREFIX = "geogpt://layers/"
TOOLS_URI = "geogpt://tools"
JSON = "application/json"


class UnknownResource(LookupError):
    """A URI this server does not serve (the message says which ones it does)."""


def layer_uri(layer_id: str) -> str:
    return LAYER_PREFIX + quote(layer_id, safe="")


def layer_summaries(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every layer of the project, in layer-tree order (read on the main thread)."""
    return ctx.on_main(_summaries, ctx)


def _summaries(ctx: ToolContext) -> list[dict[str, Any]]:
    from qgis.core import QgsVectorLayer

    from geogpt_qgis.tools.layers import crs_label, geometry_label, is_visible, layer_kind, ordered_layers

    rows = []
    for layer in ordered_layers(ctx.project):
        count = layer.featureCount() if isinstance(layer, QgsVectorLayer) else None
        rows.append(
            {
                "id": layer.id(),
                "name": layer.name(),
                "type": layer_kind(layer),
                "geometry": geometry_label(layer),
                "crs": crs_label(layer),
                "feature_count": count if count is None or count >= 0 else None,
                "visible": is_visible(ctx.project, layer),
            }
        )
    return rows


async def list_resources(tools: McpTools) -> list[dict[str, Any]]:
    """The resources offered now: the layer list, one per layer, the tool catalogue."""
    import asyncio

    layers = await asyncio.to_thread(layer_summaries, tools.ctx)
    found = [
        {"uri": LAYERS_URI, "name": "layers", "description": "The project's layers: name, type, CRS, feature count."},
        {"uri": TOOLS_URI, "name": "tools", "description": "The tool catalogue: schemas, and which may need approval."},
    ]
    found += [
        {"uri": layer_uri(row["id"]), "name": f"layer {row['name']}", "description": f"{row['type']}, {row['crs']}"}
        for row in layers
    ]
    return found


async def read_resource(tools: McpTools, uri: str) -> str:
    """The JSON text of ``uri``; ``UnknownResource`` for anything else."""
    import asyncio

    if uri == TOOLS_URI:
        return json.dumps(await tools.catalogue(), ensure_ascii=False, indent=1)
    if uri == LAYERS_URI or uri.startswith(LAYER_PREFIX):
        layers = await asyncio.to_thread(layer_summaries, tools.ctx)
        if uri == LAYERS_URI:
            return json.dumps(layers, ensure_ascii=False, indent=1)
        wanted = unquote(uri.removeprefix(LAYER_PREFIX))
        for row in layers:
            if row["id"] == wanted:
                return json.dumps(row, ensure_ascii=False, indent=1)
        raise UnknownResource(f"no layer with id {wanted!r} in the project; {LAYERS_URI} lists them")
    offered = f"{LAYERS_URI}, {LAYER_PREFIX}<layer id>, {TOOLS_URI}"
    raise UnknownResource(f"no resource {uri!r}; this server offers {offered}")
