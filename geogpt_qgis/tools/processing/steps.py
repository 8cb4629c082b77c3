"""Make a multi-step analysis's result stand out: its intermediate layers go into one hidden group.

"Schools within 500 m of a river" takes a buffer, then a selection or a clip:
three steps, three layers, and the user has to guess which one is the answer.
When a step of a run uses a layer an earlier step of the same run produced,
that layer is an intermediate: it is moved (with any group of earlier steps it
sat in) into a collapsed, unchecked group named after the new result, placed
just below it in the layer tree.  Nothing is deleted: the user can still open
the steps.  Main thread.
"""

from __future__ import annotations

from qgis.core import QgsLayerTreeGroup, QgsLayerTreeNode, QgsMapLayer, QgsProject

STEPS_PROPERTY = "geogpt/steps_of"


def steps_group_name(result_name: str) -> str:
    return f"{result_name}: steps"


def _owning_steps_group(node: QgsLayerTreeNode, stop: QgsLayerTreeGroup) -> QgsLayerTreeNode:
    """The outermost steps group ``node`` sits in (below ``stop``), or the node itself."""
    top = node
    parent = node.parent()
    while isinstance(parent, QgsLayerTreeGroup) and parent is not stop and parent.parent() is not None:
        if parent.customProperty(STEPS_PROPERTY):
            top = parent
        parent = parent.parent()
    return top


def _steps_groups_of(group: QgsLayerTreeGroup, layer_id: str) -> list[QgsLayerTreeGroup]:
    """The steps groups made for ``layer_id`` (the steps that led to an intermediate travel with it)."""
    found = []
    for child in group.children():
        if isinstance(child, QgsLayerTreeGroup):
            if child.customProperty(STEPS_PROPERTY) == layer_id:
                found.append(child)
            else:
                found += _steps_groups_of(child, layer_id)
    return found


def _move(node: QgsLayerTreeNode, group: QgsLayerTreeGroup) -> None:
    """Copy first, then remove: a layer that is briefly in no tree would be removed from the project."""
    source = node.parent()
    group.addChildNode(node.clone())
    source.removeChildNode(node)


def group_intermediates(project: QgsProject, intermediate_ids: list[str], result: QgsMapLayer) -> str | None:
    """Move the intermediate layers into the steps group of ``result``; its name, or ``None`` if none moved."""
    root = project.layerTreeRoot()
    result_node = root.findLayer(result.id())
    parent = result_node.parent() if result_node is not None else None
    if not isinstance(parent, QgsLayerTreeGroup):
        return None
    name = steps_group_name(result.name())
    position = next((i for i, child in enumerate(parent.children()) if child == result_node), -1)
    group = parent.insertGroup(position + 1, name)  # in the tree before anything moves into it
    group.setCustomProperty(STEPS_PROPERTY, result.id())
    for layer_id in dict.fromkeys(intermediate_ids):
        node = root.findLayer(layer_id)
        if node is None or layer_id == result.id():
            continue
        earlier = _steps_groups_of(root, layer_id)
        owner = _owning_steps_group(node, group)
        if owner.parent() is not group:
            _move(owner, group)
        for steps in earlier:
            if steps.parent() is not None and steps.parent() is not group and steps is not group:
                _move(steps, group)
    if not group.children():
        parent.removeChildNode(group)
        return None
    group.setExpanded(False)
    group.setItemVisibilityChecked(False)
    return name
