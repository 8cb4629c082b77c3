"""What a project looked like at one moment, for "Undo run": plain data, compared without QGIS.

A run is undone by putting back the state taken when it started.  The state is
held here as plain values (ids, names, a digest of each style, the selected
feature ids, the layer tree's shape, the map view), so two moments can be
compared, stored as JSON beside a saved project (the command line), and
explained in words, all without Qt.  The QGIS side that takes and restores it is
``tools.project.run_snapshot``; the XML it needs to rebuild a style or a tree
travels here as opaque strings.

Two comparisons matter: what the run changed (before against after: what Undo
would put back), and what changed since the run ended (after against now).
Undo is offered only while the second list holds no *blocking* change: a layer
added, removed, renamed, restyled, moved or edited since, the project CRS.
Those would be lost or mixed up by putting the run's "before" back.  A map moved
or a selection changed since does not block: Undo puts the view and the
selection of before the run back, and says so.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET  # nosec B405 # only QGIS's own style XML, exported in this process
from dataclasses import asdict, dataclass, field
from typing import Any

# A layer tree node as plain values: ("layer", layer id, checked) or ("group", name, checked, children).
TreeShape = tuple[Any, ...]


def style_digest(xml: str, portable: bool = False) -> str:
    """A digest of a style XML; ``portable``: one that two QGIS processes agree on.

    Within one process QGIS exports an unchanged style as the same text, so the
    text itself is hashed (fast: the dock checks often).  Across processes Qt
    writes an element's attributes in a different hash order each time (symbols
    nested as XML inside attribute values too), so a portable digest hashes the
    parsed tree with attributes sorted, nested XML included: the command line
    compares a style taken by ``ask`` with one taken later by ``undo-run``.
    """
    digest = hashlib.sha1(usedforsecurity=False)
    if not portable:
        digest.update(xml.encode("utf-8"))
        return digest.hexdigest()
    try:
        _feed(ET.fromstring(xml), digest)  # noqa: S314  # nosec B314 # QGIS's own style export
    except ET.ParseError:
        digest.update(xml.encode("utf-8"))
    return digest.hexdigest()


def _feed(element: ET.Element, digest: Any) -> None:
    """The element, its sorted attributes (nested XML parsed the same way), text and children, into ``digest``."""
    digest.update(f"<{element.tag}".encode())
    for key, value in sorted(element.attrib.items()):
        digest.update(f" {key}=".encode())
        nested = None
        if value.lstrip().startswith("<"):
            try:
                nested = ET.fromstring(value)  # noqa: S314  # nosec B314 # a symbol QGIS wrote as XML text
            except ET.ParseError:
                nested = None
        if nested is not None:
            _feed(nested, digest)
        else:
            digest.update(value.encode("utf-8"))
    digest.update(f">{(element.text or '').strip()}".encode())
    for child in element:
        _feed(child, digest)
    digest.update(f"</{element.tag}>".encode())


@dataclass(frozen=True)
class EditState:
    """A vector layer's edit session: open or not, and where its undo stack stood (QGIS's own edit history)."""

    editable: bool = False
    undo_index: int = 0
    undo_count: int = 0


@dataclass(frozen=True)
class LayerState:
    """One layer as the undo needs it: what to compare, and the style XML to put back."""

    ident: str
    name: str
    style_digest: str  # sha1 of the style XML: compared instead of the XML itself
    style_xml: str = ""  # kept in "before" snapshots only (what a restore sets back)
    selection: tuple[int, ...] | None = None  # vector layers only
    edits: EditState = field(default_factory=EditState)
    source: str = ""  # where the data lives, for messages ("its data stays in ...")


@dataclass(frozen=True)
class ViewState:
    """The map view: the canvas's extent in the dock, the project's saved default view headless."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float
    crs: str

    def close_to(self, other: ViewState | None, tolerance: float = 1e-6) -> bool:
        """Equal within ``tolerance`` of the view's size (a canvas rounds an extent to its pixels)."""
        if other is None or other.crs != self.crs:
            return False
        span = max(self.xmax - self.xmin, self.ymax - self.ymin, 1e-12)
        mine = (self.xmin, self.ymin, self.xmax, self.ymax)
        theirs = (other.xmin, other.ymin, other.xmax, other.ymax)
        return all(abs(a - b) <= tolerance * span for a, b in zip(mine, theirs, strict=True))


@dataclass(frozen=True)
class ProjectSnapshot:
    """The project at one moment: layers in registry order, the tree, the drawing order, CRS and view."""

    layers: tuple[LayerState, ...]
    tree: TreeShape
    tree_xml: str = ""  # kept in "before" snapshots only (what a restore rebuilds the tree from)
    custom_order: tuple[str, ...] | None = None  # layer ids, when the project draws in a custom order
    crs: str = ""
    view: ViewState | None = None

    def layer(self, ident: str) -> LayerState | None:
        return next((layer for layer in self.layers if layer.ident == ident), None)

    @property
    def ids(self) -> list[str]:
        return [layer.ident for layer in self.layers]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProjectSnapshot:
        """Read what ``to_dict`` wrote (tuples come back from JSON as lists)."""
        layers = tuple(
            LayerState(
                **{
                    **layer,
                    "selection": tuple(layer["selection"]) if layer.get("selection") is not None else None,
                    "edits": EditState(**layer.get("edits") or {}),
                }
            )
            for layer in data["layers"]
        )
        view = data.get("view")
        order = data.get("custom_order")
        return cls(
            layers,
            _tuples(data["tree"]),
            data.get("tree_xml", ""),
            tuple(order) if order is not None else None,
            data.get("crs", ""),
            ViewState(**view) if view else None,
        )


def _tuples(value: Any) -> Any:
    return tuple(_tuples(item) for item in value) if isinstance(value, (list, tuple)) else value


def _quote(name: str) -> str:
    return repr(name)


def run_changes(before: ProjectSnapshot, after: ProjectSnapshot) -> list[str]:
    """What changed from ``before`` to ``after``, one line each (what Undo would put back); [] for nothing."""
    lines: list[str] = []
    for layer in after.layers:
        if before.layer(layer.ident) is None:
            lines.append(f"added layer {_quote(layer.name)}")
    for old in before.layers:
        new = after.layer(old.ident)
        if new is None:
            lines.append(f"removed layer {_quote(old.name)}")
            continue
        lines += _layer_changes(old, new)
    # A layer added or removed is its own change: the tree counts as moved when the layers both share sit differently.
    moved = _prune(before.tree, set(after.ids)) != _prune(after.tree, set(before.ids))
    if moved or _shared_order(before, after) != _shared_order(after, before):
        lines.append("changed the layer tree (order, groups or visibility)")
    if before.crs != after.crs:
        lines.append(f"changed the project CRS from {before.crs or 'none'} to {after.crs or 'none'}")
    if before.view is not None and not before.view.close_to(after.view):
        lines.append("moved the map")
    return lines


def _layer_changes(old: LayerState, new: LayerState) -> list[str]:
    lines = []
    if old.name != new.name:
        lines.append(f"renamed layer {_quote(old.name)} to {_quote(new.name)}")
    if old.style_digest != new.style_digest:
        lines.append(f"changed the style or labels of {_quote(new.name)}")
    if old.selection != new.selection:
        lines.append(f"changed the selection in {_quote(new.name)}")
    if old.edits != new.edits:
        lines.append(f"edited features of {_quote(new.name)}")
    return lines


def _shared_order(one: ProjectSnapshot, other: ProjectSnapshot) -> tuple[str, ...] | None:
    """``one``'s custom drawing order, without layers ``other`` lacks (None: no custom order)."""
    if one.custom_order is None:
        return None
    ids = set(other.ids)
    return tuple(ident for ident in one.custom_order if ident in ids)


def _prune(node: TreeShape, ids: set[str]) -> TreeShape:
    """The tree ``node`` with only the layers in ``ids`` (groups stay, even when emptied)."""
    if node and node[0] == "layer":
        return node if node[1] in ids else ()
    children = tuple(kept for kept in (_prune(child, ids) for child in node[3]) if kept)
    return (node[0], node[1], node[2], children)


def blocking_changes(after: ProjectSnapshot, now: ProjectSnapshot) -> list[str]:
    """What changed since the run ended that Undo would lose or mix up; [] when the run can be undone.

    A moved map and a changed selection are left out: Undo puts those back as they were before the run.
    """
    lines: list[str] = []
    for layer in now.layers:
        if after.layer(layer.ident) is None:
            lines.append(f"layer {_quote(layer.name)} was added")
    for old in after.layers:
        new = now.layer(old.ident)
        if new is None:
            lines.append(f"layer {_quote(old.name)} was removed")
            continue
        if old.name != new.name:
            lines.append(f"layer {_quote(old.name)} was renamed to {_quote(new.name)}")
        if old.style_digest != new.style_digest:
            lines.append(f"the style or labels of {_quote(new.name)} changed")
        if old.edits != new.edits:
            lines.append(f"the edits of {_quote(new.name)} changed (saved, discarded or edited further)")
    # Layers added or removed already say why the tree differs.
    if (after.tree != now.tree or after.custom_order != now.custom_order) and not lines:
        lines.append("the layer tree changed (order, groups or visibility)")
    if after.crs != now.crs:
        lines.append(f"the project CRS changed from {after.crs or 'none'} to {now.crs or 'none'}")
    return lines


def soft_changes(after: ProjectSnapshot, now: ProjectSnapshot) -> list[str]:
    """What changed since the run that Undo overrides without asking: the map view, selections."""
    lines = []
    if after.view is not None and not after.view.close_to(now.view):
        lines.append("the map was moved")
    for old in after.layers:
        new = now.layer(old.ident)
        if new is not None and old.selection != new.selection:
            lines.append(f"the selection in {_quote(new.name)} changed")
    return lines
