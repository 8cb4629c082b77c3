"""Tools that change the user's data: delete or change features (set_layer removes a layer).

Each is gated: the user sees exactly what will change (the layer, the number
of features, the expression, where the data is stored) and approves it
first.  Changes to a layer the user is editing go into their edit buffer
(they decide whether to save); otherwise they are saved to the layer's source.
"""

from __future__ import annotations

from collections.abc import Callable

from qgis.core import (
    QgsExpression,
    QgsExpressionContext,
    QgsExpressionContextUtils,
    QgsFeatureRequest,
    QgsVectorLayer,
)

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, gated
from geogpt_qgis.core.artifacts import ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Expression
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.tools.base import ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.layers import (
    VectorReadPlan,
    collect_matching_ids,
    feature_count_label,
    plan_vector_read,
    resolve_vector_layer,
)
from geogpt_qgis.tools.project import NEEDS_APPROVAL, filter_request
from geogpt_qgis.tools.safety.expressions import expressions_effects, require_safe_expression


def _source_label(layer: QgsVectorLayer) -> str:
    """Where changes end up: the file or database, or "memory" (gone when QGIS closes)."""
    provider = layer.providerType()
    if provider == "memory":
        return "a temporary layer in memory"
    source = layer.publicSource() if hasattr(layer, "publicSource") else layer.source()
    return f"{provider}: {source.split('|')[0]}"


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
        if effects.needs_approval:
            # Never evaluated to count the matches: the preview must not do what it describes.
            vector = self.ctx.on_main(resolve_vector_layer, self.ctx.project, layer)
            doing = "delete" if delete else f"set {field} to {value} on"
            return ApprovalRequest(
                action=f"{'Delete' if delete else f'Change {field!r} on'} features of {vector.name()!r}, "
                f"with an expression that {effects.summary()}",
                details=f"In {vector.name()!r}, {doing} the features where {expression}\n"
                "The features were not counted: the expression is evaluated only if you approve.\n"
                + "\n".join(problems),
                affected=[f"layer {vector.name()!r} ({_source_label(vector)})", *effects.lines()],
                effects=[kind.value for kind in effects.kinds],
            )
        vector, ids = self._matching(layer, expression)
        stored = f"{len(ids):,} of {feature_count_label(vector)} features, stored in {_source_label(vector)}."
        if delete:
            return ApprovalRequest(
                action=f"Delete {len(ids):,} features from {vector.name()!r}",
                details=f"In {vector.name()!r}, delete the features where {expression}\n{stored}",
                affected=[f"layer {vector.name()!r} ({_source_label(vector)})"],
            )
        self.ctx.on_main(self._check_update, vector.id(), field, value)
        return ApprovalRequest(
            action=f"Change {field!r} on {len(ids):,} features of {vector.name()!r}",
            details=f"In {vector.name()!r}, set {field} to {value} on the features where {expression}\n{stored}",
            affected=[f"layer {vector.name()!r} ({_source_label(vector)}), field {field!r}"],
        )

    @gated("preview_edit_features")
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
        vector, ids = self._matching(layer, expression, approved)
        if not delete:
            self.ctx.on_main(self._check_update, vector.id(), field, value)
        if not approved:
            raise ToolError(NEEDS_APPROVAL)
        if delete:
            text = self.ctx.on_main(self._delete, vector.id(), ids)
        else:
            text = self.ctx.on_main(self._update, vector.id(), ids, field, value)
        return ToolResult(text, ToolArtifact(layers=(vector.name(),)))

    def _delete(self, layer_id: str, ids: list[int]) -> str:
        vector = self._vector(layer_id)
        return self._in_edit_session(vector, lambda: vector.deleteFeatures(ids), f"deleted {len(ids):,} features")

    def _check_update(self, layer_id: str, field: str, value: str) -> None:
        vector = self._vector(layer_id)
        names = vector.fields().names()
        if field not in names:
            raise ToolError(did_you_mean(field, names, f"field in {vector.name()!r}"))
        parsed = QgsExpression(value)
        if parsed.hasParserError():
            raise ToolError(f"invalid value expression: {' '.join(parsed.parserErrorString().split())}")

    def _update(self, layer_id: str, ids: list[int], field: str, value: str) -> str:
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

        return self._in_edit_session(vector, apply, f"changed {field!r} on {len(changes):,} features")

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

    def _in_edit_session(self, vector: QgsVectorLayer, change: Callable[[], bool], what: str) -> str:
        """Apply ``change``: into the user's open edit session, or in one of ours, saved at once."""
        if vector.isEditable():
            if not change():
                raise ToolError(f"QGIS refused the change to {vector.name()!r}")
            return f"In {vector.name()!r}, {what} in your open edit session: save or discard it in QGIS."
        if not vector.startEditing():
            raise ToolError(f"{vector.name()!r} cannot be edited (read-only source?)")
        if not change() or not vector.commitChanges():
            errors = "; ".join(vector.commitErrors()) or "the change was refused"
            vector.rollBack()
            raise ToolError(f"could not save the change to {vector.name()!r}: {errors}")
        return f"In {vector.name()!r}, {what}; saved to {_source_label(vector)}."
