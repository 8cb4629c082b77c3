"""Take a project's state (``core.project_snapshot``) from QGIS, and put an earlier one back.

Taken on the main thread when a run starts, in a few milliseconds per layer:
each layer's name, its style and labels as QGIS's own style XML (symbology,
labeling and rendering categories: what ``exportNamedStyle`` writes and
``importNamedStyle`` reads back, with a clone of the renderer as
``maps.style_history`` keeps it), its selection and edit-session state, the
layer tree as XML and as a plain shape, the custom drawing order, the project
CRS and the map view (the canvas in the dock; the project's saved default view
headless).  Layer definitions (to rebuild a removed layer) are not taken here:
``run_undo`` takes each one at the moment a layer is about to be removed.

``restore`` puts back only what differs from the state given, in an order
that keeps references whole: layers first (so the tree can point at them),
then the tree, names, styles, edits, selections, CRS and view.  Main thread only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsLayerTree,
    QgsLayerTreeGroup,
    QgsLayerTreeNode,
    QgsMapLayer,
    QgsProject,
    QgsRasterLayer,
    QgsReadWriteContext,
    QgsRectangle,
    QgsReferencedRectangle,
    QgsVectorLayer,
)
from qgis.PyQt.QtXml import QDomDocument

from geogpt_qgis.core.project_snapshot import (
    EditState,
    LayerState,
    ProjectSnapshot,
    TreeShape,
    ViewState,
    style_digest,
)
from geogpt_qgis.tools.thread_guard import assert_main_thread

STYLE = QgsMapLayer.StyleCategory.Symbology | QgsMapLayer.StyleCategory.Labeling | QgsMapLayer.StyleCategory.Rendering


def style_xml(layer: QgsMapLayer) -> str:
    """The layer's symbology, labels and rendering settings as QGIS style XML."""
    document = QDomDocument()
    layer.exportNamedStyle(document, QgsReadWriteContext(), STYLE)
    text: str = document.toString()
    return text


def _source(layer: QgsMapLayer) -> str:
    return str(layer.publicSource()).split("|")[0]


def layer_state(layer: QgsMapLayer, keep_style: bool, portable: bool = False) -> LayerState:
    xml = style_xml(layer)
    selection = tuple(sorted(layer.selectedFeatureIds())) if isinstance(layer, QgsVectorLayer) else None
    edits = EditState()
    if isinstance(layer, QgsVectorLayer) and layer.isEditable():
        stack = layer.undoStack()
        edits = EditState(True, stack.index(), stack.count())
    return LayerState(
        layer.id(),
        layer.name(),
        style_digest(xml, portable),
        xml if keep_style else "",
        selection,
        edits,
        _source(layer),
    )


def tree_shape(node: QgsLayerTreeNode) -> TreeShape:
    """The tree as plain values: which layers and groups, in what order, ticked or not."""
    if QgsLayerTree.isLayer(node):
        return ("layer", node.layerId(), bool(node.itemVisibilityChecked()))
    children = tuple(tree_shape(child) for child in node.children())
    return ("group", node.name(), bool(node.itemVisibilityChecked()), children)


def tree_xml(root: QgsLayerTreeGroup) -> str:
    document = QDomDocument("geogpt-tree")
    element = document.createElement("tree")
    document.appendChild(element)
    root.writeXml(element, QgsReadWriteContext())
    text: str = document.toString()
    return text


def view_state(project: QgsProject, canvas: Any) -> ViewState | None:
    """The canvas's extent, or headless the project's saved default view (None when it has none)."""
    if canvas is not None:
        extent, crs = canvas.extent(), canvas.mapSettings().destinationCrs()
    else:
        saved = project.viewSettings().defaultViewExtent()
        extent, crs = saved, saved.crs()
    if extent.isNull() or extent.isEmpty():
        return None
    return ViewState(extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum(), crs.toWkt())


def take(project: QgsProject, canvas: Any = None, keep: bool = True, portable: bool = False) -> ProjectSnapshot:
    """The project now; ``keep``: with the XML a restore needs (a "before"), not only what is compared.

    ``portable``: style digests another process can compare (``core.project_snapshot.style_digest``).
    """
    assert_main_thread("the project's state was read")
    root = project.layerTreeRoot()
    layers = tuple(layer_state(layer, keep, portable) for layer in project.mapLayers().values())
    order = tuple(layer.id() for layer in root.customLayerOrder()) if root.hasCustomLayerOrder() else None
    return ProjectSnapshot(
        layers,
        tree_shape(root),
        tree_xml(root) if keep else "",
        order,
        project.crs().toWkt(),
        view_state(project, canvas),
    )


@contextlib.contextmanager
def _tree_left_alone(project: QgsProject) -> Iterator[None]:
    """Adding or removing layers does not touch the tree meanwhile (it is rebuilt from the snapshot)."""
    bridge = project.layerTreeRegistryBridge()
    was = bridge.isEnabled()
    bridge.setEnabled(False)
    try:
        yield
    finally:
        bridge.setEnabled(was)


def restore(
    project: QgsProject,
    before: ProjectSnapshot,
    canvas: Any,
    definitions: dict[str, str],
    refill: Callable[[QgsMapLayer], str | None],
    revert_edits: Callable[[], list[str]],
    renderers: dict[str, Any] | None = None,
    portable: bool = False,
) -> list[str]:
    """Put ``before`` back; one line per thing done or that could not be done.

    ``renderers``: clones of the layers' renderers when the run started (in the
    dock), set after the style XML as ``maps.style_history`` does (QGIS 3.40 loses
    a graduated renderer's label format in the XML round trip).

    ``definitions`` are the layer XML of layers removed since (by id), to add them
    back; ``refill`` gives a re-added temporary layer its features back (and says
    so); ``revert_edits`` reverts the edits saved since (``EditJournal.revert``).
    """
    assert_main_thread("the project was restored")
    lines: list[str] = []
    now = take(project, canvas, keep=False, portable=portable)
    with _tree_left_alone(project):
        lines += _remove_added(project, before, now)
        lines += _add_removed(project, before, now, definitions, refill)
        if _tree_differs(project, before):
            _rebuild_tree(project, before)
            lines.append("put the layer tree back as it was")
    lines += _roll_back_buffers(project, before)
    lines += revert_edits()
    for old in before.layers:
        layer = project.mapLayer(old.ident)
        if layer is not None:
            lines += _restore_layer(layer, old, (renderers or {}).get(old.ident), portable)
    if project.crs().toWkt() != before.crs and before.crs:
        project.setCrs(QgsCoordinateReferenceSystem.fromWkt(before.crs))
        lines.append("set the project CRS back")
    if before.view is not None and not before.view.close_to(view_state(project, canvas)):
        _set_view(project, canvas, before.view)
        lines.append("moved the map back")
    return lines


def _remove_added(project: QgsProject, before: ProjectSnapshot, now: ProjectSnapshot) -> list[str]:
    added = [layer for layer in now.layers if before.layer(layer.ident) is None]
    if not added:
        return []
    project.removeMapLayers([layer.ident for layer in added])
    return [
        f"removed layer {layer.name!r} (added by the run; its data stays in {layer.source or 'memory'})"
        for layer in added
    ]


def _add_removed(
    project: QgsProject,
    before: ProjectSnapshot,
    now: ProjectSnapshot,
    definitions: dict[str, str],
    refill: Callable[[QgsMapLayer], str | None],
) -> list[str]:
    lines = []
    for old in before.layers:
        if now.layer(old.ident) is not None:
            continue
        xml = definitions.get(old.ident)
        document = QDomDocument()
        if not xml or not document.setContent(xml) or not project.readLayer(document.documentElement()):
            lines.append(f"could not add layer {old.name!r} back: its definition was not kept")
            continue
        layer = project.mapLayer(old.ident)
        lines.append(f"added layer {old.name!r} back")
        refilled = refill(layer) if layer is not None else None
        if refilled:
            lines.append(refilled)
    return lines


def _tree_differs(project: QgsProject, before: ProjectSnapshot) -> bool:
    root = project.layerTreeRoot()
    order = tuple(layer.id() for layer in root.customLayerOrder()) if root.hasCustomLayerOrder() else None
    return tree_shape(root) != before.tree or order != before.custom_order


def _rebuild_tree(project: QgsProject, before: ProjectSnapshot) -> None:
    """The tree from the snapshot's XML, pointing at the layers now in the project; the drawing order too."""
    document = QDomDocument()
    document.setContent(before.tree_xml)
    saved = QgsLayerTreeGroup.readXml(document.documentElement().firstChildElement(), QgsReadWriteContext())
    root = project.layerTreeRoot()
    root.removeAllChildren()
    if saved is not None:
        for child in saved.children():
            root.addChildNode(child.clone())
    root.resolveReferences(project)
    root.setItemVisibilityChecked(before.tree[2])
    if before.custom_order is not None:
        layers = [project.mapLayer(ident) for ident in before.custom_order]
        root.setCustomLayerOrder([layer for layer in layers if layer is not None])
    root.setHasCustomLayerOrder(before.custom_order is not None)


def _roll_back_buffers(project: QgsProject, before: ProjectSnapshot) -> list[str]:
    """Edits left in a layer's edit buffer by the run: undone on the layer's own undo stack."""
    lines = []
    for old in before.layers:
        layer = project.mapLayer(old.ident)
        if not isinstance(layer, QgsVectorLayer) or not layer.isEditable():
            continue
        stack = layer.undoStack()
        if old.edits.editable:
            if stack.index() != old.edits.undo_index:
                stack.setIndex(old.edits.undo_index)
                lines.append(f"undid the run's edits to {old.name!r} in your open edit session")
        elif layer.isModified() or stack.count():
            layer.rollBack()
            lines.append(f"discarded the run's unsaved edits to {old.name!r}")
        else:
            layer.rollBack()
    return lines


def renderer_clone(layer: QgsMapLayer) -> Any:
    """A copy of the layer's renderer (None for a layer without one)."""
    renderer = layer.renderer() if isinstance(layer, (QgsVectorLayer, QgsRasterLayer)) else None
    return renderer.clone() if renderer is not None else None


def _restore_layer(layer: QgsMapLayer, old: LayerState, renderer: Any = None, portable: bool = False) -> list[str]:
    lines = []
    if layer.name() != old.name:
        lines.append(f"renamed {layer.name()!r} back to {old.name!r}")
        layer.setName(old.name)
    if old.style_xml and style_digest(style_xml(layer), portable) != old.style_digest:
        document = QDomDocument()
        document.setContent(old.style_xml)
        ok, error = layer.importNamedStyle(document, STYLE)
        if ok and renderer is not None and isinstance(layer, (QgsVectorLayer, QgsRasterLayer)):
            layer.setRenderer(renderer.clone())
        lines.append(f"put the style and labels of {old.name!r} back" if ok else f"{old.name!r}: {error}")
        layer.triggerRepaint()
    selected = tuple(sorted(layer.selectedFeatureIds())) if isinstance(layer, QgsVectorLayer) else None
    if isinstance(layer, QgsVectorLayer) and old.selection is not None and selected != old.selection:
        layer.selectByIds(list(old.selection))
        lines.append(f"put the selection in {old.name!r} back ({len(old.selection):,} features)")
    return lines


def _set_view(project: QgsProject, canvas: Any, view: ViewState) -> None:
    rectangle = QgsRectangle(view.xmin, view.ymin, view.xmax, view.ymax)
    crs = QgsCoordinateReferenceSystem.fromWkt(view.crs)
    if canvas is None:
        project.viewSettings().setDefaultViewExtent(QgsReferencedRectangle(rectangle, crs))
        return
    if canvas.mapSettings().destinationCrs() != crs:
        canvas.setDestinationCrs(crs)
    canvas.setExtent(rectangle)
    canvas.refresh()
