"""One run's undo: the project's state when it started, what it removed, the edits it saved; and the undo itself.

``RunUndo.start`` (main thread, when a question is sent) takes the "before"
snapshot and starts listening: to layers about to be removed (their layer
definition XML is kept, and a temporary memory layer's features are copied,
since nothing else could bring them back) and to edits being saved
(``EditJournal``).  ``finish`` (when the run has ended) stops listening and
takes the "after" snapshot; ``changes`` says what the run did.  ``blocked``
says what changed since that an undo would lose (``core.project_snapshot``),
and ``undo`` puts "before" back and says what it did.  The dock keeps one per
run in memory; the command line keeps one beside a saved project as JSON
(``to_dict``/``from_dict``), without memory layers' features (a saved project
does not keep those either).  Main thread only.
"""

from __future__ import annotations

import contextlib
from typing import Any

from qgis.core import QgsFeatureRequest, QgsMapLayer, QgsProject, QgsReadWriteContext, QgsVectorLayer
from qgis.PyQt.QtXml import QDomDocument

from geogpt_qgis.core.project_snapshot import ProjectSnapshot, blocking_changes, run_changes, soft_changes
from geogpt_qgis.tools.project import run_snapshot
from geogpt_qgis.tools.project.edit_journal import EditJournal
from geogpt_qgis.tools.thread_guard import assert_main_thread

FORMAT = 1  # of ``to_dict``


def layer_definition(layer: QgsMapLayer) -> str:
    """The layer's whole definition (source, name, id, style...) as project XML, paths kept absolute."""
    document = QDomDocument("geogpt-layer")
    element = document.createElement("maplayer")
    document.appendChild(element)
    layer.writeLayerXml(element, document, QgsReadWriteContext())
    text: str = document.toString()
    return text


class RunUndo:
    """The undo of one run on ``project``; ``canvas`` is the map canvas in the dock (None headless)."""

    def __init__(self, project: QgsProject, canvas: Any = None, portable: bool = False) -> None:
        self.project = project
        self.canvas = canvas
        self.portable = portable  # style digests another process can compare (kept beside a saved project)
        self.before: ProjectSnapshot | None = None
        self.after: ProjectSnapshot | None = None
        self.journal = EditJournal(project)
        self.definitions: dict[str, str] = {}  # layer id -> definition XML, for layers removed during the run
        self.kept_features: dict[str, QgsVectorLayer] = {}  # removed memory layers' features (a memory copy)
        self.renderers: dict[str, Any] = {}
        self.done = False
        self._listening = False

    @classmethod
    def start(cls, project: QgsProject, canvas: Any = None, portable: bool = False) -> RunUndo:
        """Take the state before a run and listen for what cannot be read back later.

        ``portable``: for an undo kept beside a saved project and used by another process (the command line).
        """
        assert_main_thread("the state before a run was taken")
        undo = cls(project, canvas, portable)
        undo.before = run_snapshot.take(project, canvas, portable=portable)
        undo.renderers = {
            ident: clone
            for ident, layer in project.mapLayers().items()
            if (clone := run_snapshot.renderer_clone(layer)) is not None
        }
        undo.journal.start()
        project.layersWillBeRemoved.connect(undo._removing)
        undo._listening = True
        return undo

    def _removing(self, layer_ids: list[str]) -> None:
        if self.before is None:
            return
        for ident in layer_ids:
            layer = self.project.mapLayer(ident)
            if layer is None or self.before.layer(ident) is None or ident in self.definitions:
                continue
            self.definitions[ident] = layer_definition(layer)
            if isinstance(layer, QgsVectorLayer) and layer.providerType() == "memory":
                self.kept_features[ident] = layer.materialize(QgsFeatureRequest())

    def finish(self) -> list[str]:
        """Stop listening and take the state after the run; returns what the run changed ([] for nothing)."""
        assert_main_thread("the state after a run was taken")
        self._stop_listening()
        self.after = self._now()
        return self.changes()

    def _stop_listening(self) -> None:
        if self._listening:
            with contextlib.suppress(TypeError, RuntimeError):
                self.project.layersWillBeRemoved.disconnect(self._removing)
            self.journal.stop()
            self._listening = False

    def changes(self) -> list[str]:
        """What the run changed: what an undo puts back."""
        if self.before is None or self.after is None:
            return []
        lines = run_changes(self.before, self.after)
        if self.journal.commits and not any(line.startswith("edited") for line in lines):
            names = dict.fromkeys(commit.layer_name for commit in self.journal.commits)
            lines += [f"saved edits to {name!r}" for name in names]
        return lines

    def blocked(self) -> list[str]:
        """What changed since the run ended that an undo would lose; [] when it can be undone."""
        if self.done:
            return ["this run was undone already"]
        if self.before is None or self.after is None:
            return ["the run has not ended"]
        return blocking_changes(self.after, self._now())

    def overridden(self) -> list[str]:
        """What changed since the run that an undo replaces by the state before it (the view, selections)."""
        if self.after is None:
            return []
        return soft_changes(self.after, self._now())

    def _now(self) -> ProjectSnapshot:
        return run_snapshot.take(self.project, self.canvas, keep=False, portable=self.portable)

    def undo(self, force: bool = False) -> list[str]:
        """Put the project back as it was before the run; one line per thing done.

        Raises ``ValueError`` (nothing changed) when ``blocked`` says the project changed since, unless ``force``.
        """
        assert_main_thread("a run was undone")
        problems = self.blocked() if not force or self.done else []
        if problems:
            raise ValueError("; ".join(problems))
        if self.before is None:
            raise ValueError("nothing to undo")
        self._stop_listening()
        lines = run_snapshot.restore(
            self.project,
            self.before,
            self.canvas,
            self.definitions,
            self._refill,
            self.journal.revert,
            self.renderers,
            self.portable,
        )
        self.done = True
        self.kept_features.clear()
        return lines

    def _refill(self, layer: QgsMapLayer) -> str | None:
        """A re-added temporary layer gets the features it had when it was removed."""
        copy = self.kept_features.get(layer.id())
        if copy is None or not isinstance(layer, QgsVectorLayer):
            if isinstance(layer, QgsVectorLayer) and layer.providerType() == "memory":
                return f"{layer.name()!r} was a temporary layer: its features could not be brought back"
            return None
        features = list(copy.getFeatures())
        layer.dataProvider().addFeatures(features)
        layer.updateExtents()
        return f"gave {layer.name()!r} its {len(features):,} features back"

    # -- kept beside a saved project (the command line) ----------------------------------
    def to_dict(self) -> dict[str, Any]:
        if self.before is None or self.after is None:
            raise ValueError("only a finished run can be kept")
        return {
            "format": FORMAT,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "definitions": self.definitions,
            "edits": self.journal.to_list(),
        }

    @classmethod
    def from_dict(cls, project: QgsProject, data: dict[str, Any]) -> RunUndo:
        if data.get("format") != FORMAT:
            raise ValueError(f"this undo record has format {data.get('format')!r}; this version reads {FORMAT}")
        undo = cls(project, portable=True)
        undo.before = ProjectSnapshot.from_dict(data["before"])
        undo.after = ProjectSnapshot.from_dict(data["after"])
        undo.definitions = dict(data.get("definitions") or {})
        undo.journal = EditJournal.from_list(project, list(data.get("edits") or []))
        return undo
