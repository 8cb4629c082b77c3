"""A layer's reference (name and id) for a call's artifact, where the step that used or added it gave only its name.

Result layers get a name no other layer has when they are added
(``tools.layers.add_result_layer``, ``result_store``), so the name, looked up
at once on the main thread, finds exactly that layer and its id.  If it does
not (two layers of that name, or renamed or removed meanwhile), the reference
keeps the name alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geogpt_qgis.core.artifacts import LayerRef

if TYPE_CHECKING:
    from geogpt_qgis.tools.base import ToolContext


def named_ref(ctx: ToolContext, name: str) -> LayerRef:
    """``name`` with the id of the one project layer of that name (worker thread; asks the main thread)."""
    ids = ctx.on_main(lambda: [layer.id() for layer in ctx.project.mapLayersByName(name)])
    return LayerRef(name, ids[0]) if len(ids) == 1 else LayerRef(name)
