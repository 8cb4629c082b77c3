"""Notice what the user changes in the project between turns, so the model is never surprised.

Listens to the project's own signals (layers added, removed, renamed, the
selection, the project CRS) on the main thread, ignoring changes the agent
makes itself (they happen inside a bridge job).  ``drain`` returns one short
note for the next message and starts over.  Changes that cancel out (a layer
added then removed) leave nothing; repeated ones keep the net effect.  Names
in the note are the user's data and go in quoted, on one line (``quoted``).
"""

from __future__ import annotations

import contextlib
from typing import Any

from qgis.core import QgsMapLayer, QgsProject, QgsVectorLayer
from qgis.PyQt.QtCore import QObject

from geogpt_qgis.core.text import quoted
from geogpt_qgis.toolbelt.main_thread import MainThreadBridge

MAX_ITEMS = 12  # changes listed one by one; beyond that, counted


class ProjectWatcher(QObject):
    """Collects the user's project changes since the last ``drain`` (main thread only)."""

    def __init__(self, project: QgsProject, bridge: MainThreadBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.project = project
        self.bridge = bridge
        self._names: dict[str, str] = {}  # layer id -> current name, to know what a layer was called
        self._connected: dict[str, list[tuple[Any, Any]]] = {}
        self._crs = project.crs().authid()
        self._reset()
        project.layersAdded.connect(self._added)
        project.layersWillBeRemoved.connect(self._removing)
        project.crsChanged.connect(self._crs_changed)
        project.cleared.connect(self._cleared)
        for layer in project.mapLayers().values():
            self._watch(layer)

    def _reset(self) -> None:
        self.added: list[str] = []
        self.removed: dict[str, str] = {}
        self.renamed: dict[str, tuple[str, str]] = {}
        self.selections: list[str] = []
        self.crs_from: str | None = None
        self.replaced = False

    # -- signals ------------------------------------------------------------------
    def _by_user(self) -> bool:
        return not self.bridge.acting

    def _added(self, layers: list[QgsMapLayer]) -> None:
        for layer in layers:
            self._watch(layer)
            if self._by_user() and not self.replaced:
                self.added.append(layer.id())

    def _removing(self, layer_ids: list[str]) -> None:
        for layer_id in layer_ids:
            name = self._names.pop(layer_id, layer_id)
            self._unwatch(layer_id)
            if not self._by_user():
                continue
            if layer_id in self.added:
                self.added.remove(layer_id)  # added and removed again: nothing to tell
            else:
                old = self.renamed.pop(layer_id, (name, name))[0]
                self.removed[layer_id] = old
            if layer_id in self.selections:
                self.selections.remove(layer_id)

    def _renamed(self, layer: QgsMapLayer) -> None:
        old = self._names.get(layer.id(), layer.name())
        self._names[layer.id()] = layer.name()
        if not self._by_user() or layer.id() in self.added:
            return
        first = self.renamed.get(layer.id(), (old, old))[0]
        if first == layer.name():
            self.renamed.pop(layer.id(), None)  # renamed back
        else:
            self.renamed[layer.id()] = (first, layer.name())

    def _selection_changed(self, layer_id: str) -> None:
        if self._by_user() and layer_id not in self.selections:
            self.selections.append(layer_id)

    def _crs_changed(self) -> None:
        if self._by_user() and self.crs_from is None and not self.replaced:
            self.crs_from = self._crs
        self._crs = self.project.crs().authid()

    def _cleared(self) -> None:
        for layer_id in list(self._connected):
            self._unwatch(layer_id)
        self._names.clear()
        self._reset()
        self.replaced = True
        self._crs = self.project.crs().authid()

    def _watch(self, layer: QgsMapLayer) -> None:
        if layer.id() in self._connected:
            return
        self._names[layer.id()] = layer.name()
        layer_id = layer.id()
        links: list[tuple[Any, Any]] = []

        def renamed() -> None:
            self._renamed(layer)

        layer.nameChanged.connect(renamed)
        links.append((layer.nameChanged, renamed))
        if isinstance(layer, QgsVectorLayer):

            def selected(*_args: object) -> None:
                self._selection_changed(layer_id)

            layer.selectionChanged.connect(selected)
            links.append((layer.selectionChanged, selected))
        self._connected[layer_id] = links

    def _unwatch(self, layer_id: str) -> None:
        for signal, slot in self._connected.pop(layer_id, []):
            with contextlib.suppress(TypeError, RuntimeError):  # already gone with its layer
                signal.disconnect(slot)

    # -- the note -----------------------------------------------------------------
    def drain(self) -> str:
        """The note for the next message ("" when nothing changed), and a fresh start."""
        # Imported here: the dock builds the watcher before the plugin's dependencies may be installed,
        # and the tool modules need them (annotated_types, for argument bounds).
        from geogpt_qgis.tools.project.family import describe_map_layer_briefly

        items: list[str] = []
        if self.replaced:
            title = self.project.title() or self.project.baseName()
            named = quoted(title) if title else "an unsaved project"
            items.append(f"opened another project ({named}); the layers listed above are the ones now open")
        for layer_id in self.added:
            layer = self.project.mapLayer(layer_id)
            if layer is not None:
                items.append(f"added layer {describe_map_layer_briefly(layer)}")
        items += [f"removed layer {quoted(name)}" for name in self.removed.values()]
        items += [f"renamed layer {quoted(old)} to {quoted(new)}" for old, new in self.renamed.values()]
        for layer_id in self.selections:
            layer = self.project.mapLayer(layer_id)
            if isinstance(layer, QgsVectorLayer):
                count = layer.selectedFeatureCount()
                items.append(
                    f"selected {count:,} of {layer.featureCount():,} features in {quoted(layer.name())}"
                    if count
                    else f"cleared the selection in {quoted(layer.name())}"
                )
        if self.crs_from is not None and self.crs_from != self.project.crs().authid():
            items.append(f"changed the project CRS from {self.crs_from or 'none'} to {self.project.crs().authid()}")
        self._reset()
        if not items:
            return ""
        listed = items[:MAX_ITEMS]
        if len(items) > MAX_ITEMS:
            listed.append(f"and {len(items) - MAX_ITEMS} more changes")
        return "Since your last answer, the user " + "; ".join(listed) + "."

    def close(self) -> None:
        """Stop listening (the panel is going away)."""
        for signal, slot in (
            (self.project.layersAdded, self._added),
            (self.project.layersWillBeRemoved, self._removing),
            (self.project.crsChanged, self._crs_changed),
            (self.project.cleared, self._cleared),
        ):
            with contextlib.suppress(TypeError, RuntimeError):
                signal.disconnect(slot)
        for layer_id in list(self._connected):
            self._unwatch(layer_id)
