"""Map tasks: label a layer, change the drawing order, gather layers in a group (issue 23).

Each is scored on the project the run leaves, read from QGIS (the layer's
labeling, the layer tree), not on what the tools said they did.  The
expected layer order is computed here from the demo project's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evals.task import Call, Expected, Task

Check = Callable[[Any], list[str]]  # the project -> what is wrong with it

DEMO_ORDER = ["schools", "hospitals", "roads", "rivers", "parks", "districts", "landuse", "elevation", "landcover"]


def _layer(project: Any, name: str) -> Any:
    found = project.mapLayersByName(name)
    return found[0] if len(found) == 1 else None


def labelled_with(layer_name: str, field: str) -> Check:
    """The layer's labels are on and show ``field`` (as a field, or an expression that is only that field)."""

    def check(project: Any) -> list[str]:
        layer = _layer(project, layer_name)
        if layer is None:
            return [f"no single layer {layer_name!r} in the project"]
        labeling = layer.labeling()
        settings = labeling.settings() if labeling is not None and hasattr(labeling, "settings") else None
        if not layer.labelsEnabled() or settings is None:
            return [f"{layer_name!r} has no labels"]
        shown = settings.fieldName.strip()
        if settings.isExpression:
            shown = shown.strip('"')
        if shown != field:
            return [f"{layer_name!r} is labelled with {settings.fieldName!r}, not the field {field!r}"]
        return []

    return check


def tree_order(expected: list[str]) -> Check:
    """The layers, top to bottom through every group, are in ``expected`` order."""

    def check(project: Any) -> list[str]:
        order = [node.name() for node in project.layerTreeRoot().findLayers()]
        return [] if order == expected else [f"the layer order is {order}, expected {expected}"]

    return check


def grouped(group_name: str, members: set[str]) -> Check:
    """A top-level group ``group_name`` holds exactly ``members``, ticked, and no layer was lost."""

    def check(project: Any) -> list[str]:
        from qgis.core import QgsLayerTree

        root = project.layerTreeRoot()
        groups = [node for node in root.children() if QgsLayerTree.isGroup(node) and node.name() == group_name]
        if len(groups) != 1:
            return [f"there is no single group {group_name!r} (groups: {[g.name() for g in root.findGroups()]})"]
        inside = {node.name() for node in groups[0].findLayers()}
        failures = [] if inside == members else [f"group {group_name!r} holds {sorted(inside)}, not {sorted(members)}"]
        hidden = [node.name() for node in groups[0].findLayers() if not node.isVisible()]
        if hidden:
            failures.append(f"layers in {group_name!r} are not visible: {hidden}")
        if sorted(node.name() for node in root.findLayers()) != sorted(DEMO_ORDER):
            failures.append("layers were lost or duplicated in the layer tree")
        return failures

    return check


def _moved_above(order: list[str], layer: str, anchor: str) -> list[str]:
    rest = [name for name in order if name != layer]
    at = rest.index(anchor)
    return [*rest[:at], layer, *rest[at:]]


MAPS_ARRANGE = [
    Task(
        "label-parks",
        "maps",
        "Label the parks with their names.",
        [
            [Call("label_layer", {"layer": "parks", "text": "name"})],
            lambda r: "The parks are now labelled with their names.",
        ],
        lambda o: Expected(project=[labelled_with("parks", "name")]),
    ),
    Task(
        "rivers-above-landuse",
        "maps",
        "Put rivers above landuse.",
        [
            [Call("set_layer", {"layer": "rivers", "move": "above:landuse"})],
            lambda r: "Rivers are now drawn directly above landuse.",
        ],
        lambda o: Expected(project=[tree_order(_moved_above(DEMO_ORDER, "rivers", "landuse"))]),
    ),
    Task(
        "services-group",
        "maps",
        "Put schools and hospitals in a group called Services.",
        [
            [Call("set_layer", {"layer": "schools", "group": "Services"})],
            [Call("set_layer", {"layer": "hospitals", "group": "Services"})],
            lambda r: "Schools and hospitals are now in the group Services.",
        ],
        lambda o: Expected(project=[grouped("Services", {"schools", "hospitals"})]),
    ),
]
