"""Feature edits saved during a run, recorded as they are saved so "Undo run" can revert them.

``edit_features`` leaves an edit to a file or database layer in the layer's
edit buffer when QGIS's window is there: nothing is saved, and Undo run takes
it back through the layer's own undo stack (``run_snapshot``).  A temporary
memory layer, and every layer headless (the command line), is saved at once;
such a save cannot be discarded later.  So while a run goes on, this journal
listens to each layer's ``beforeCommitChanges`` (QGIS's signal just before an
edit buffer is written) and reads, from the data provider that still holds
them, the values, geometries and features the commit is about to change or
delete; ``committedFeaturesAdded`` gives the ids of features it adds.  Any save
through a layer is recorded this way, whichever tool made it.  ``revert``
writes the old values back through the provider (immediately saved, as the
change was), newest commit first.  Values are kept as JSON-ready plain values
(``to_plain``), so the command line can keep the journal beside a saved project.

Not covered: a layer in a transaction group (its edits reach the database
before the commit; the provider already reads the new values) and changes
written to a data source without its layer (code, SQL): the approval says so.
Main thread only (layers are read and written).
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, field
from typing import Any

from qgis.core import QgsFeature, QgsFeatureRequest, QgsGeometry, QgsProject, QgsVectorLayer
from qgis.PyQt.QtCore import QByteArray, QDate, QDateTime, QTime, QVariant

from geogpt_qgis.tools.thread_guard import assert_main_thread


def to_plain(value: Any) -> Any:
    """A field value as a JSON value (dates, times and bytes tagged), NULL as None."""
    if value is None or (isinstance(value, QVariant) and value.isNull()):
        return None
    if isinstance(value, QDateTime):
        return {"datetime": value.toString("yyyy-MM-ddTHH:mm:ss.zzz")}
    if isinstance(value, QDate):
        return {"date": value.toString("yyyy-MM-dd")}
    if isinstance(value, QTime):
        return {"time": value.toString("HH:mm:ss.zzz")}
    if isinstance(value, (bytes, QByteArray)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def from_plain(value: Any) -> Any:
    """The field value ``to_plain`` wrote."""
    if isinstance(value, dict):
        if "datetime" in value:
            return QDateTime.fromString(value["datetime"], "yyyy-MM-ddTHH:mm:ss.zzz")
        if "date" in value:
            return QDate.fromString(value["date"], "yyyy-MM-dd")
        if "time" in value:
            return QTime.fromString(value["time"], "HH:mm:ss.zzz")
        if "bytes" in value:
            return QByteArray(bytes.fromhex(value["bytes"]))
    return value


def _wkb(geometry: QgsGeometry) -> str | None:
    return None if geometry is None or geometry.isNull() else bytes(geometry.asWkb()).hex()


def _geometry(wkb: str | None) -> QgsGeometry:
    geometry = QgsGeometry()
    if wkb:
        geometry.fromWkb(bytes.fromhex(wkb))
    return geometry


@dataclass
class Commit:
    """One saved edit buffer: what it changed, as it was before (feature ids as strings: JSON keys)."""

    layer_id: str
    layer_name: str
    old_values: dict[str, dict[str, Any]] = field(default_factory=dict)  # fid -> field name -> old value
    old_geometries: dict[str, str | None] = field(default_factory=dict)  # fid -> old WKB (hex)
    deleted: list[dict[str, Any]] = field(default_factory=list)  # {"attributes": {...}, "wkb": ...}
    added: list[int] = field(default_factory=list)  # ids the commit gave to new features

    @property
    def empty(self) -> bool:
        return not (self.old_values or self.old_geometries or self.deleted or self.added)


class EditJournal:
    """Records the commits of the project's vector layers between ``start`` and ``stop`` (main thread)."""

    def __init__(self, project: QgsProject, commits: list[Commit] | None = None) -> None:
        self.project = project
        self.commits: list[Commit] = list(commits or [])
        self._links: list[tuple[Any, Any]] = []
        self._pending: dict[str, Commit] = {}

    def start(self) -> None:
        """Listen to every vector layer in the project now (layers a run adds are removed by Undo anyway)."""
        assert_main_thread("the edit journal started")
        for layer in self.project.mapLayers().values():
            if isinstance(layer, QgsVectorLayer):
                self._watch(layer)

    def stop(self) -> None:
        for signal, slot in self._links:
            with contextlib.suppress(TypeError, RuntimeError):  # the layer went away
                signal.disconnect(slot)
        self._links.clear()

    def _watch(self, layer: QgsVectorLayer) -> None:
        def before_commit(*_args: object) -> None:
            self._before_commit(layer)

        def added(layer_id: str, features: list[QgsFeature]) -> None:
            commit = self._pending.get(layer_id)
            if commit is not None:
                commit.added += [feature.id() for feature in features]

        def after_commit() -> None:
            commit = self._pending.pop(layer.id(), None)
            if commit is not None and not commit.empty:
                self.commits.append(commit)

        for signal, slot in (
            (layer.beforeCommitChanges, before_commit),
            (layer.committedFeaturesAdded, added),
            (layer.afterCommitChanges, after_commit),
        ):
            signal.connect(slot)
            self._links.append((signal, slot))

    def _before_commit(self, layer: QgsVectorLayer) -> None:
        """Read what the commit will overwrite, from the provider (still as it was)."""
        buffer = layer.editBuffer()
        if buffer is None:
            return
        names = layer.fields().names()
        commit = Commit(layer.id(), layer.name())
        changed = buffer.changedAttributeValues()
        geometries = buffer.changedGeometries()
        deleted = set(buffer.deletedFeatureIds())
        wanted = {int(fid) for fid in (*changed.keys(), *geometries.keys(), *deleted) if int(fid) >= 0}
        provider = layer.dataProvider()
        request = QgsFeatureRequest().setFilterFids(sorted(wanted))
        for feature in provider.getFeatures(request) if wanted else []:
            fid = feature.id()
            if fid in deleted:
                commit.deleted.append(
                    {
                        "attributes": {name: to_plain(feature[name]) for name in names},
                        "wkb": _wkb(feature.geometry()),
                    }
                )
                continue
            if fid in changed:
                provider_names = provider.fields().names()
                commit.old_values[str(fid)] = {
                    provider_names[index]: to_plain(feature.attribute(index))
                    for index in changed[fid]
                    if 0 <= index < len(provider_names)
                }
            if fid in geometries:
                commit.old_geometries[str(fid)] = _wkb(feature.geometry())
        self._pending[layer.id()] = commit

    # -- undo ----------------------------------------------------------------------
    def revert(self) -> list[str]:
        """Write back what every recorded commit changed, newest first; one line per layer reverted."""
        assert_main_thread("saved edits were reverted")
        lines = []
        for commit in reversed(self.commits):
            layer = self.project.mapLayer(commit.layer_id)
            if not isinstance(layer, QgsVectorLayer):
                gone = "it is no longer in the project"
                lines.append(f"could not revert the saved edits of {commit.layer_name!r}: {gone}")
                continue
            lines.append(_revert_commit(layer, commit))
        self.commits.clear()
        return lines

    def to_list(self) -> list[dict[str, Any]]:
        return [asdict(commit) for commit in self.commits]

    @classmethod
    def from_list(cls, project: QgsProject, data: list[dict[str, Any]]) -> EditJournal:
        return cls(project, [Commit(**item) for item in data])


def _revert_commit(layer: QgsVectorLayer, commit: Commit) -> str:
    """Undo one commit through the data provider (saved at once, as the commit was)."""
    provider = layer.dataProvider()
    fields = provider.fields()
    problems = []
    if commit.added and not provider.deleteFeatures(commit.added):
        problems.append("the added features could not be deleted")
    restored = []
    for item in commit.deleted:
        feature = QgsFeature(fields)
        for name, value in item["attributes"].items():
            if fields.indexOf(name) >= 0:
                feature.setAttribute(name, from_plain(value))
        feature.setGeometry(_geometry(item["wkb"]))
        restored.append(feature)
    if restored and not provider.addFeatures(restored)[0]:
        problems.append("the deleted features could not be added back")
    if commit.old_geometries and not provider.changeGeometryValues(
        {int(fid): _geometry(wkb) for fid, wkb in commit.old_geometries.items()}
    ):
        problems.append("the geometries could not be set back")
    values = {
        int(fid): {fields.indexOf(name): from_plain(v) for name, v in changes.items() if fields.indexOf(name) >= 0}
        for fid, changes in commit.old_values.items()
    }
    if values and not provider.changeAttributeValues(values):
        problems.append("the values could not be set back")
    layer.triggerRepaint()
    if problems:
        return f"could not fully revert the saved edits of {layer.name()!r}: {'; '.join(problems)}"
    parts = []
    if commit.old_values:
        parts.append(f"{len(commit.old_values):,} changed")
    if commit.deleted:
        parts.append(f"{len(commit.deleted):,} deleted")
    if commit.added:
        parts.append(f"{len(commit.added):,} added")
    return f"reverted the saved edits of {layer.name()!r} ({', '.join(parts) or 'geometries'} features)"
