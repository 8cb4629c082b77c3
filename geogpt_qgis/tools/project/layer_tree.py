"""Layer order and groups: move a layer in the layer tree (top, bottom, above or below another, into a group).

A move is planned first, from the words the model gave, and every name is
checked before anything changes (a bad call changes nothing); only then is
the layer's tree node cloned into its new place and the old node removed,
which is how QGIS's own layer tree view moves nodes.  The clone keeps the
layer's visibility and the expanded state of its legend.  When the project
draws layers in a custom order (Layer Order panel), that order is moved the
same way, so the map shows what the tree says.  Main thread only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qgis.core import QgsLayerTree, QgsLayerTreeGroup, QgsLayerTreeLayer, QgsLayerTreeNode, QgsMapLayer, QgsProject

from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.layers import check_new_layer_name
from geogpt_qgis.tools.thread_guard import assert_main_thread

MOVE_HELP = "use top, bottom, above:<layer> or below:<layer>"
PLACE_WORDS = {
    **dict.fromkeys(("top", "front", "first"), "top"),
    **dict.fromkeys(("bottom", "back", "last"), "bottom"),
    **dict.fromkeys(("above", "over", "before"), "above"),
    **dict.fromkeys(("below", "under", "beneath", "after"), "below"),
}
# Leading filler words ("to the top", "on top of"), the place word, an optional colon, then the layer or group.
_MOVE = re.compile(r"^(?:(?:move|to|the|on|at)\s+)*(?P<word>[^\s:]*)\s*:?\s*(?P<rest>.*)$", re.IGNORECASE)


@dataclass
class Arrangement:
    """Where one layer goes: a parent group and a place in it, relative to another node or an end."""

    project: QgsProject
    layer: QgsMapLayer
    place: str = ""  # top, bottom, above or below; "" for the top of ``group_name``'s group
    anchor: QgsLayerTreeNode | None = None  # the node the layer goes above or below
    group_name: str = ""  # the group to move into ("" keeps the layer's parent, or the anchor's)
    group: QgsLayerTreeGroup | None = None  # that group, when it exists already

    def apply(self) -> str:
        """Move the layer; say what was done (the plan was checked, so nothing here refuses)."""
        assert_main_thread("the layer tree was changed")
        root = self.project.layerTreeRoot()
        node = root.findLayer(self.layer.id())
        created = ""
        parent = self.anchor.parent() if self.anchor is not None else root
        if self.group_name:
            if self.group is None:
                self.group = QgsLayerTreeGroup(self.group_name)
                self.group.setItemVisibilityChecked(True)
                old_parent = node.parent()
                old_parent.insertChildNode(old_parent.children().index(node), self.group)  # where the layer was
                created = f"Created group {self.group_name!r}. "
            parent = self.group
        index = self._index(parent)
        moved = node.clone()
        moved.setItemVisibilityChecked(node.itemVisibilityChecked())
        moved.setExpanded(node.isExpanded())
        parent.insertChildNode(index, moved)
        node.parent().removeChildNode(node)
        if root.hasCustomLayerOrder():
            self._move_in_custom_order(root)
        return created + f"Moved {self.layer.name()!r} {self._where(parent)}."

    def _index(self, parent: QgsLayerTreeGroup) -> int:
        if self.anchor is not None:
            at: int = parent.children().index(self.anchor)
            return at if self.place == "above" else at + 1
        return len(parent.children()) if self.place == "bottom" else 0

    def _where(self, parent: QgsLayerTreeGroup) -> str:
        inside = f" in group {parent.name()!r}" if QgsLayerTree.isGroup(parent) and parent.parent() is not None else ""
        if self.anchor is not None:
            return f"{self.place} {_node_label(self.anchor)}{inside}"
        if not self.place:
            return f"into group {parent.name()!r}"
        if self.place == "bottom":
            return f"to the bottom{inside or ' of the layer tree'}"
        return f"to the top{inside or ' of the layer tree'}"

    def _move_in_custom_order(self, root: QgsLayerTree) -> None:
        """Put the layer where the tree now puts it, in the project's custom drawing order too."""
        order = [layer for layer in root.customLayerOrder() if layer.id() != self.layer.id()]
        ids = [layer.id() for layer in order]
        if self.anchor is None and not self.group_name:
            at = 0 if self.place == "top" else len(order)
        else:
            if self.anchor is not None:
                neighbours = _anchor_layer_ids(self.anchor)
            else:
                neighbours = _sibling_layer_ids(root, self.layer)
            positions = [ids.index(layer_id) for layer_id in neighbours if layer_id in ids]
            if not positions:
                return  # alone in a new group, or next to an empty one: it keeps its place in the drawing order
            at = max(positions) + 1 if self.place in ("below", "bottom") else min(positions)
        order.insert(at, self.layer)
        root.setCustomLayerOrder(order)


def plan_arrangement(project: QgsProject, layer: QgsMapLayer, move: str, group: str) -> Arrangement:
    """Check ``move`` (top, bottom, above:<name>, below:<name>) and ``group``; change nothing."""
    assert_main_thread("the layer tree was read")
    root = project.layerTreeRoot()
    if root.findLayer(layer.id()) is None:
        raise ToolError(f"{layer.name()!r} is not in the layer tree, so it cannot be moved")
    place, other = _parse_move(move)
    plan = Arrangement(project, layer, place)
    if group.strip():
        plan.group_name = group.strip()
        plan.group = _find_group(root, plan.group_name)
        if plan.group is None:
            plan.group_name = _new_group_name(plan.group_name)
    if other:
        plan.anchor = _find_node(root, other)
        if plan.anchor is root.findLayer(layer.id()):
            raise ToolError(f"cannot move {layer.name()!r} {place} itself; name another layer")
        if QgsLayerTree.isGroup(plan.anchor) and _contains(plan.anchor, layer):
            raise ToolError(f"{layer.name()!r} is inside group {plan.anchor.name()!r}; name a layer to move it next to")
        if plan.group_name and plan.anchor.parent() is not plan.group:
            raise ToolError(f"{other!r} is not in group {plan.group_name!r}: give group or {place}:<layer>, not both")
    return plan


def _new_group_name(name: str) -> str:
    """A group name is saved in the project and shown in the tree: one short line, as for layers."""
    try:
        return check_new_layer_name(name)
    except ToolError as error:
        raise ToolError(str(error).replace("a layer name", "a group name")) from None


def _parse_move(move: str) -> tuple[str, str]:
    """``("above", "rivers")`` from ``above:rivers``, ``above rivers``, ``Over: rivers`` or ``on top of rivers``.

    The schema gives no syntax (a description costs prompt tokens on every
    call), so the words a model reaches for are read too; anything else is
    refused with the forms to use.  ``("", "")`` for no move.
    """
    if not move.strip():
        return "", ""
    match = _MOVE.match(" ".join(move.split()))
    word, other = (match.group("word"), match.group("rest").strip()) if match is not None else ("", "")
    place = PLACE_WORDS.get(word.casefold(), "")
    if place == "top" and other.casefold().startswith("of "):  # "on top of rivers"
        place, other = "above", other[3:].strip()
    if not place:
        raise ToolError(f"move {move!r} is not a place; {MOVE_HELP}")
    if place in ("top", "bottom") and other:
        raise ToolError(f"move {move!r}: {place} takes no layer name; {MOVE_HELP}")
    if place in ("above", "below") and not other:
        raise ToolError(f"move {move!r} names no layer; use {place}:<layer>")
    return place, other


def _find_node(root: QgsLayerTree, name: str) -> QgsLayerTreeNode:
    """The layer (by id or name) or group named ``name``, exact then case-insensitive; else the closest names."""
    layers = [node for node in root.findLayers() if node.layer() is not None]
    groups = _all_groups(root)
    for node in layers:
        if node.layerId() == name:
            return node
    for same in (lambda a, b: a == b, lambda a, b: a.casefold() == b.casefold()):
        matches = [node for node in [*layers, *groups] if same(node.name(), name)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ToolError(f"several layers or groups are named {name!r}; pass the layer id instead")
    raise ToolError(did_you_mean(name, [node.name() for node in [*layers, *groups]], "layer or group"))


def _find_group(root: QgsLayerTree, name: str) -> QgsLayerTreeGroup | None:
    """The existing group named ``name`` (exact, then case-insensitive), or ``None`` to create it."""
    groups = _all_groups(root)
    for same in (lambda a, b: a == b, lambda a, b: a.casefold() == b.casefold()):
        matches = [group for group in groups if same(group.name(), name)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ToolError(f"several groups are named {name!r}; rename one of them first")
    return None


def _all_groups(group: QgsLayerTreeGroup) -> list[QgsLayerTreeGroup]:
    found = []
    for child in group.children():
        if QgsLayerTree.isGroup(child):
            found += [child, *_all_groups(child)]
    return found


def _contains(group: QgsLayerTreeGroup, layer: QgsMapLayer) -> bool:
    return group.findLayer(layer.id()) is not None


def _anchor_layer_ids(node: QgsLayerTreeNode) -> list[str]:
    if isinstance(node, QgsLayerTreeLayer):
        return [node.layerId()]
    return list(node.findLayerIds()) if QgsLayerTree.isGroup(node) else []


def _sibling_layer_ids(root: QgsLayerTree, layer: QgsMapLayer) -> list[str]:
    """The other layers of the group the layer now sits in (where a custom order should put it)."""
    node = root.findLayer(layer.id())
    parent = node.parent() if node is not None else None
    if parent is None:
        return []
    return [layer_id for layer_id in parent.findLayerIds() if layer_id != layer.id()]


def _node_label(node: QgsLayerTreeNode) -> str:
    return f"group {node.name()!r}" if QgsLayerTree.isGroup(node) else repr(node.name())
