"""Tools that change the user's data: delete or change features (set_layer removes a layer).

Each is gated: the user sees exactly what will change (the layer, the number
of features, the expression, where the data is stored) and approves it
first.  The approval binds the layer's id and data source and the very
features counted (``core.targets``): when the call runs it acts on that layer
and those features, or not at all (a layer renamed or replaced meanwhile, or
other features matching, is refused).  Changes to a layer kept in a file or a
database go into the layer's edit buffer and are left there: nothing reaches
the user's data until they save the layer's edits in QGIS, and discarding them
undoes the change.  Only a temporary memory layer is changed at once, and so
is every layer headless (the command line, the stdio MCP server), where no one
could save the buffer: there the features the change touches are first copied,
as they are, into a GeoPackage in the profile's ``edit-copies`` folder, so the
change can still be undone.  The card says which.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from qgis.core import (
    QgsExpression,
    QgsExpressionContext,
    QgsExpressionContextUtils,
    QgsFeatureRequest,
    QgsVectorFileWriter,
    QgsVectorLayer,
)

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, approved_targets, gated
from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Expression
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.targets import LAYER, Target
from geogpt_qgis.core.text import counted
from geogpt_qgis.toolbelt.log import logger as log
from geogpt_qgis.toolbelt.paths import edit_copies_dir
from geogpt_qgis.tools.base import ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.layers import (
    VectorReadPlan,
    collect_matching_ids,
    plan_vector_read,
    resolve_vector_layer,
)
from geogpt_qgis.tools.project.family import NEEDS_APPROVAL, filter_request
from geogpt_qgis.tools.safety.expressions import expressions_effects, require_safe_expression
from geogpt_qgis.tools.safety.targets import features_state, layer_target

# The state of a layer target whose filter was not evaluated before approval (it may do more than read).
NOT_COUNTED = "(not counted)"
# Said on every card of an edit to a layer that is not a temporary one: how it can be undone.
BUFFERED = (
    "The change goes into the layer's edit buffer and is not saved: save the layer's edits in QGIS to keep it, "
    "or discard them to undo it."
)


def _source_label(layer: QgsVectorLayer) -> str:
    """Where changes end up: the file or database, or "memory" (gone when QGIS closes)."""
    provider = layer.providerType()
    if provider == "memory":
        return "a temporary layer in memory"
    source = layer.publicSource() if hasattr(layer, "publicSource") else layer.source()
    return f"{provider}: {source.split('|')[0]}"


def _undo_note(layer: QgsVectorLayer, buffered: bool) -> str:
    """How the change can be undone, for the card (``buffered``: left in the edit buffer, in a QGIS window)."""
    if layer.isEditable():
        return "The change goes into your open edit session: save or discard it in QGIS."
    if layer.providerType() == "memory":
        return "A temporary layer: the change is made at once."
    if not buffered:
        copies = edit_copies_dir(create=False)
        return (
            f"No QGIS window to save or discard it from: the change is saved to {_source_label(layer)} at once, "
            f"after the features it changes are copied, as they are now, to a GeoPackage in {copies} "
            "(to undo it from)."
        )
    return BUFFERED


def _keep_copy(vector: QgsVectorLayer, ids: list[int]) -> Path:
    """Copy the features ``ids`` of ``vector``, as they are, into a new GeoPackage (main thread, before a change).

    The undo of an edit saved at once: every field and the geometry, ids kept when the source's own FID field
    comes along (a GeoPackage's ``fid``).  The copy is read back before anything changes: a copy short of any
    feature raises ``ToolError`` (nothing changed yet), never a change whose undo is silently empty.
    """
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", vector.name()).strip("_")[:60] or "layer"
    target = edit_copies_dir() / f"{stem}-{time.strftime('%Y%m%dT%H%M%S')}-{time.monotonic_ns() % 10**6:06d}.gpkg"
    features = list(vector.getFeatures(QgsFeatureRequest().setFilterFids(ids)))
    if len(features) != len(ids) and vector.providerType() == "ogr":
        # QGIS's connection to a GeoPackage can fail after another connection to the file closed ("unable to
        # open database file"): reopened once, it reads again; a feature that is not there is still missing.
        log.warning("%s reads %d of %d features for the undo copy: reopened", vector.name(), len(features), len(ids))
        vector.dataProvider().reloadData()
        features = list(vector.getFeatures(QgsFeatureRequest().setFilterFids(ids)))
    if len(features) != len(ids):
        raise ToolError(
            f"could not keep a copy of the features before the change: {len(features)} of the {len(ids)} "
            f"features could be read from {vector.name()!r}. Nothing was changed."
        )
    options = QgsVectorFileWriter.SaveVectorOptions()
    options.driverName = "GPKG"
    options.layerName = stem
    writer = QgsVectorFileWriter.create(
        str(target), vector.fields(), vector.wkbType(), vector.crs(), vector.transformContext(), options
    )
    try:
        if writer.hasError() != QgsVectorFileWriter.WriterError.NoError:
            raise ToolError(f"could not keep a copy of the features before the change: {writer.errorMessage()}")
        if features and not writer.addFeatures(features):
            raise ToolError(f"could not keep a copy of the features before the change: {writer.errorMessage()}")
    finally:
        del writer  # closes the file: its features are committed
    kept = QgsVectorLayer(f"{target}|layername={stem}", "copy", "ogr").featureCount()
    if kept != len(ids):
        raise ToolError(
            f"could not keep a copy of the features before the change: the copy in {target} reads {kept} of "
            f"{len(ids)} features. Nothing was changed."
        )
    return target


def _check_readable(vector: QgsVectorLayer, ids: list[int]) -> None:
    """The features ``ids`` still read once the edit session has reopened the file (main thread, before a change).

    Reopening a GeoPackage in update mode left QGIS's connection unable to read it once in CI (QGIS 3.40: 0 of
    16 features, "unable to open database file", after another connection to the file had closed): a change
    made through it could not be saved, or a delete could miss features.  That connection is reopened once;
    one that still reads short stops the change, nothing changed.
    """
    request = QgsFeatureRequest().setFilterFids(ids).setFlags(QgsFeatureRequest.Flag.NoGeometry).setNoAttributes()
    found = sum(1 for _ in vector.getFeatures(request))
    if found != len(ids):
        log.warning("%s reads %d of %d features once opened for editing: reopened", vector.name(), found, len(ids))
        vector.rollBack()
        vector.dataProvider().reloadData()
        found = sum(1 for _ in vector.getFeatures(request)) if vector.startEditing() else -1
    if found != len(ids):
        if vector.isEditable():
            vector.rollBack()
        raise ToolError(
            f"{vector.name()!r} could not be read once opened for editing ({max(found, 0)} of the {len(ids)} "
            "features); nothing was changed. Try again, or check that the file is not open elsewhere."
        )


def _bound_layer(targets: list[Target]) -> Target | None:
    """The one layer the approval named (edit_features acts on one layer)."""
    return targets[0] if len(targets) == 1 else None


def _not_approved(bound: Target, why: str) -> str:
    return (
        f"not run: the user approved this for layer {bound.name!r} (id {bound.ident}, {bound.source}"
        f"{', ' + bound.state if bound.state else ''}), but {why}. Nothing was changed. If the change is still "
        "wanted, call edit_features again: the user will be asked about it as it is now."
    )


def _check_edit(field: str, value: str, delete: bool) -> None:
    """One action per call: a field and its new value, or deletion."""
    if delete and field.strip():
        raise ToolError("give either delete=true or a field and value, not both")
    if not delete and not (field.strip() and value.strip()):
        raise ToolError("give the field to set and its new value, or delete=true to delete the features")


class EditTools(ToolFamily):
    """Delete or change features (each approved by the user)."""

    name = "edit"
    title = "Edits"
    summary = "delete features, change attribute values (each after the user approves)"

    def tools(self) -> list[ToolFunction]:
        return [self.edit_features]

    # -- delete or change features ---------------------------------------------------
    def preview_edit_features(
        self, layer: str, expression: str, field: str = "", value: str = "", delete: bool = False
    ) -> ApprovalRequest:
        _check_edit(field, value, delete)
        effects, problems = expressions_effects([("the filter", expression), ("the value", "" if delete else value)])
        ops = ("delete",) if delete else (f"update {field}",)
        kinds = [Effect.EDIT_DATA]
        if effects.needs_approval:
            # Never evaluated to count the matches: the preview must not do what it describes.
            vector = self.ctx.on_main(resolve_vector_layer, self.ctx.project, layer)
            doing = "delete" if delete else f"set {field} to {value} on"
            target = self.ctx.on_main(layer_target, vector, ops, f"the features where {expression} {NOT_COUNTED}")
            return ApprovalRequest(
                action=f"{'Delete' if delete else f'Change {field!r} on'} features of {vector.name()!r}, "
                f"with an expression that {effects.summary()}",
                details=f"In {vector.name()!r}, {doing} the features where {expression}\n"
                "The features were not counted: the expression is evaluated only if you approve.\n"
                + "\n".join([*problems, _undo_note(vector, self._buffered)]),
                notes=effects.lines(),
                effects=[*kinds, *effects.kinds],  # each once: ApprovalRequest keeps the first
                targets=[target],
            )
        vector, ids = self._matching(layer, expression)
        stored = f"{len(ids):,} of {counted(vector.featureCount(), 'feature')}, stored in {_source_label(vector)}."
        target = self.ctx.on_main(layer_target, vector, ops, features_state(ids))
        undo = _undo_note(vector, self._buffered)
        if delete:
            action = f"Delete {counted(len(ids), 'feature')} from {vector.name()!r}"  # nosec B608 # prose, not SQL
            return ApprovalRequest(
                action=action,
                details=f"In {vector.name()!r}, delete the features where {expression}\n{stored}\n{undo}",
                effects=kinds,
                targets=[target],
            )
        self.ctx.on_main(self._check_update, vector.id(), field, value)
        return ApprovalRequest(
            action=f"Change {field!r} on {counted(len(ids), 'feature')} of {vector.name()!r}",
            details=f"In {vector.name()!r}, set {field} to {value} on the features where {expression}\n{stored}\n"
            + undo,
            effects=kinds,
            targets=[target],
        )

    @gated(preview_edit_features)
    def edit_features(
        self, layer: str, expression: Expression, field: str = "", value: Expression = "", delete: bool = False
    ) -> ToolResult:
        """Set a field on, or delete, the features matching an expression.

        Args:
            value: Expression for the value, e.g. 'closed' or "pupils" * 2.
        """
        _check_edit(field, value, delete)
        approved = approval_granted()  # read here: the decision lives in this call's context
        require_safe_expression(expression, "the filter", approved)
        if not delete:
            require_safe_expression(value, "the value", approved)
        bound = _bound_layer(approved_targets(LAYER))
        vector, ids = self._matching(bound.ident if bound else layer, expression, approved)
        if bound is not None:
            self.ctx.on_main(self._check_binding, bound, layer)
            if not bound.state.endswith(NOT_COUNTED) and features_state(ids) != bound.state:
                raise ToolError(_not_approved(bound, f"the filter now matches {features_state(ids)}"))
        if not delete:
            self.ctx.on_main(self._check_update, vector.id(), field, value)
        if not approved:
            raise ToolError(NEEDS_APPROVAL)
        if delete:
            text = self.ctx.on_main(self._delete, vector.id(), ids, bound)
        else:
            text = self.ctx.on_main(self._update, vector.id(), ids, field, value, bound)
        return ToolResult(text, ToolArtifact(layers=(LayerRef.of(vector),)))

    def _check_binding(self, bound: Target, ref: str) -> None:
        """The approved layer is still there, from the same source, and the name given still means it (main thread).

        Checked on the main thread just before the change, in the same step as the
        change itself (``_delete``/``_update`` call it again): nothing can rename or
        replace a layer in between.
        """
        vector = self.ctx.project.mapLayer(bound.ident)
        if not isinstance(vector, QgsVectorLayer):
            raise ToolError(_not_approved(bound, "that layer is no longer in the project"))
        now = layer_target(vector, bound.ops)
        if now.source != bound.source:
            raise ToolError(_not_approved(bound, f"its data source is now {now.source}"))
        try:
            named = resolve_vector_layer(self.ctx.project, ref)
        except ToolError:
            named = None
        if named is None or named.id() != bound.ident:
            meant = f"layer {named.id()} ({layer_target(named, ()).source})" if named is not None else "no layer"
            raise ToolError(_not_approved(bound, f"{ref!r} now names {meant}"))

    def _delete(self, layer_id: str, ids: list[int], bound: Target | None = None) -> str:
        vector = self._vector(layer_id)
        if bound is not None:
            self._check_binding(bound, bound.ident)
        return self._in_edit_session(
            vector, lambda: vector.deleteFeatures(ids), f"deleted {counted(len(ids), 'feature')}", ids
        )

    def _check_update(self, layer_id: str, field: str, value: str) -> None:
        vector = self._vector(layer_id)
        names = vector.fields().names()
        if field not in names:
            raise ToolError(did_you_mean(field, names, f"field in {vector.name()!r}"))
        parsed = QgsExpression(value)
        if parsed.hasParserError():
            raise ToolError(f"invalid value expression: {' '.join(parsed.parserErrorString().split())}")

    def _update(self, layer_id: str, ids: list[int], field: str, value: str, bound: Target | None = None) -> str:
        if bound is not None:
            self._check_binding(bound, bound.ident)
        self._check_update(layer_id, field, value)
        vector = self._vector(layer_id)
        index = vector.fields().indexOf(field)
        expression = QgsExpression(value)
        context = QgsExpressionContext(QgsExpressionContextUtils.globalProjectLayerScopes(vector))
        expression.prepare(context)
        changes: dict[int, object] = {}
        request = QgsFeatureRequest().setFilterFids(ids)
        for feature in vector.getFeatures(request):
            context.setFeature(feature)
            result = expression.evaluate(context)
            if expression.hasEvalError():
                raise ToolError(f"the value expression fails: {expression.evalErrorString()}")
            changes[feature.id()] = result

        def apply() -> bool:
            return all(vector.changeAttributeValue(fid, index, new) for fid, new in changes.items())

        return self._in_edit_session(
            vector, apply, f"changed {field!r} on {counted(len(changes), 'feature')}", list(changes)
        )

    # -- shared --------------------------------------------------------------------
    def _matching(self, ref: str, expression: str, approved: bool = False) -> tuple[QgsVectorLayer, list[int]]:
        """The vector layer and the ids of the features ``expression`` selects (read off the main thread)."""
        if not expression.strip():
            raise ToolError("give an expression choosing the features (use 'TRUE' for all of them)")
        vector, plan, request = self.ctx.on_main(self._prepare, ref, expression, approved)
        return vector, collect_matching_ids(plan, request, self.ctx.cancel)

    def _prepare(
        self, ref: str, expression: str, approved: bool = False
    ) -> tuple[QgsVectorLayer, VectorReadPlan, QgsFeatureRequest]:
        vector = resolve_vector_layer(self.ctx.project, ref)
        return vector, plan_vector_read(vector), filter_request(vector, expression, approved)

    def _vector(self, layer_id: str) -> QgsVectorLayer:
        vector = self.ctx.project.mapLayer(layer_id)
        if not isinstance(vector, QgsVectorLayer):
            raise ToolError("the layer was removed from the project meanwhile")
        return vector

    @property
    def _buffered(self) -> bool:
        """Whether edits wait in the layer's edit buffer: in QGIS's window, where the user saves or discards them.

        Headless (the command line, the stdio MCP server) no one could save them: they are saved at once.
        """
        return self.ctx.iface is not None

    def _in_edit_session(self, vector: QgsVectorLayer, change: Callable[[], bool], what: str, ids: list[int]) -> str:
        """Apply ``change`` into the layer's edit buffer, left open for the user (a memory layer: saved at once).

        Headless, a file or database layer is saved at once, after the features ``ids`` are copied aside.
        """
        if vector.isEditable():
            if not change():
                raise ToolError(f"QGIS refused the change to {vector.name()!r}")
            return f"In {vector.name()!r}, {what} in your open edit session: save or discard it in QGIS."
        saved_at_once = vector.providerType() != "memory" and not self._buffered
        # Headless, the undo copy is read before the edit session: starting one reopens a file in update mode.
        kept = f" The features as they were are kept in {_keep_copy(vector, ids)}." if saved_at_once else ""
        if not vector.startEditing():
            raise ToolError(f"{vector.name()!r} cannot be edited (read-only source?)")
        if vector.providerType() != "memory" and self._buffered:
            if not change():
                vector.rollBack()
                raise ToolError(f"QGIS refused the change to {vector.name()!r}; nothing was changed")
            return (
                f"In {vector.name()!r}, {what} in the layer's edit buffer; not saved to {_source_label(vector)} "
                "until the user saves the layer's edits in QGIS (discarding them undoes it)."
            )
        if saved_at_once:
            _check_readable(vector, ids)
        if not change() or not vector.commitChanges():
            errors = "; ".join(vector.commitErrors()) or "the change was refused"
            vector.rollBack()
            raise ToolError(f"could not save the change to {vector.name()!r}: {errors}")
        return f"In {vector.name()!r}, {what}; saved to {_source_label(vector)}.{kept}"
