"""Project tools: see the layers, describe them, select features; show/hide, rename, zoom to or remove a layer.

Reads of features happen on the worker through a feature source; every change
to the project or the map canvas is handed to the main thread.
"""

from __future__ import annotations

import re
from dataclasses import replace

from qgis.core import (
    QgsCoordinateTransform,
    QgsExpression,
    QgsExpressionContext,
    QgsExpressionContextUtils,
    QgsFeatureRequest,
    QgsMapLayer,
    QgsProject,
    QgsRasterLayer,
    QgsReferencedRectangle,
    QgsVectorLayer,
)

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, approved_targets, gated
from geogpt_qgis.core.artifacts import LayerRef, Selection, ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Expression
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.field_stats import summarize_fields
from geogpt_qgis.core.figures import Figure
from geogpt_qgis.core.fuzzy import did_you_mean
from geogpt_qgis.core.recipes import PLACEHOLDER
from geogpt_qgis.core.targets import LAYER, Target
from geogpt_qgis.core.text import NAME_MAX_CHARS, counted, markdown_table, quoted, short, stored_text
from geogpt_qgis.tools.base import ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.data_checks import check_notes, plan_checks
from geogpt_qgis.tools.layers import (
    VectorReadPlan,
    check_evaluates,
    check_new_layer_name,
    collect_matching_ids,
    crs_details,
    crs_label,
    ellipsoid_made_here,
    feature_count_label,
    features_label,
    format_extent,
    geometry_label,
    is_visible,
    layer_kind,
    ordered_layers,
    plan_vector_read,
    read_rows,
    read_sample,
    resolve_layer,
    resolve_vector_layer,
)
from geogpt_qgis.tools.measures import (
    ellipsoid_scope,
    field_units,
    has_ellipsoid,
    header_with_unit,
    measuring_ellipsoid,
)
from geogpt_qgis.tools.processing.nearest_check import distance_limit_notes
from geogpt_qgis.tools.project.layer_tree import plan_arrangement
from geogpt_qgis.tools.project.raster_sample import plan_sample, read_samples
from geogpt_qgis.tools.project.raster_zonal import is_polygon_layer, zonal_summary
from geogpt_qgis.tools.rasters import RasterReadPlan, describe_raster, grid_line, plan_raster_read
from geogpt_qgis.tools.safety.expressions import expression_request, require_safe_expression
from geogpt_qgis.tools.safety.targets import layer_target, named_layer_targets

SAMPLE_SIZE = 5000
# An expression that measures geometries: the layer's geometry checks come with its answer.
MEASURING = re.compile(r"\$(area|length|perimeter)\b|\b(area|length|perimeter|distance)\s*\(", re.IGNORECASE)
MAX_READ_ROWS = 50
NEEDS_APPROVAL = "this changes the user's data and needs their approval"


class ProjectTools(ToolFamily):
    """Tools over the layers of the open QGIS project."""

    name = "project"
    title = "Project layers"
    summary = (
        "list and describe layers; read attribute values; select features by expression; "
        "show/hide, rename, reorder, group, zoom to and remove layers (removing asks the user)"
    )

    def tools(self) -> list[ToolFunction]:
        return [
            self.describe_layer,
            self.read_features,
            self.select_features,
            self.set_layer,
        ]

    # -- reading -----------------------------------------------------------
    def _list_layers(self) -> str:
        """Every layer: name, id, type, geometry, CRS, feature count, visibility (``describe_layer`` without one)."""
        project = self.ctx.project
        layers = ordered_layers(project)
        if not layers:
            return "The project has no layers."
        rows = [
            (
                short(layer.name(), NAME_MAX_CHARS),  # one line, bounded: names are data
                layer.id(),
                layer_kind(layer),
                geometry_label(layer),
                crs_label(layer),
                feature_count_label(layer),
                "yes" if is_visible(project, layer) else "no",
            )
            for layer in layers
        ]
        headers = ("name", "id", "type", "geometry", "CRS", "features", "visible")
        return f"{len(layers)} layers (project CRS {project.crs().authid() or 'none'}):\n" + markdown_table(
            headers, rows
        )

    def describe_layer(self, layer: str = "", at: str = "") -> ToolResult:
        """Describe a layer: fields, values, CRS, extent, count; raster bands, stats. No layer: list them.

        Args:
            at: Raster values at 'x y;..' (project CRS or 'EPSG:4326 x y'), a layer's points or zones.
        """
        if not layer.strip():
            if at.strip():
                raise ToolError("name the raster layer to read values from with layer")
            return ToolResult(self.ctx.on_main(self._list_layers))
        if at.strip() and self.ctx.on_main(is_polygon_layer, self.ctx.project, at):
            return zonal_summary(self.ctx, layer, at)
        if at.strip():
            sample = self.ctx.on_main(plan_sample, self.ctx.project, layer, at)
            sampled = ToolArtifact(layers=(LayerRef(sample.raster.name),))
            return ToolResult(read_samples(sample, self.ctx.cancel), sampled)
        described_layer, header, plan = self.ctx.on_main(self._describe_header, layer)
        read = ToolArtifact(layers=(described_layer,))
        checks = self.ctx.on_main(lambda: plan_checks(resolve_layer(self.ctx.project, layer)))
        if isinstance(plan, RasterReadPlan):
            described = [header, *describe_raster(plan, self.ctx.cancel), *check_notes(checks, self.ctx.cancel)]
            return ToolResult("\n".join(described), read)
        if plan is None:
            return ToolResult(header, read)
        header = "\n".join([header, *check_notes(checks, self.ctx.cancel)])
        rows = read_sample(plan, SAMPLE_SIZE, self.ctx.cancel)
        if not plan.field_names:
            return ToolResult(header + "\nFields: none", read)
        summaries = summarize_fields(plan.field_names, plan.field_types, rows)
        units = self.ctx.on_main(_units_of, self.ctx.project, plan.layer_id)  # fields whose unit is known
        read = replace(read, figures=tuple(units.values()))
        keys = set(plan.primary_key_indexes)
        total = plan.feature_count
        if total >= 0 and len(rows) >= total:
            basis = f"values from all {counted(len(rows), 'feature')}"
        else:
            basis = f"values from the first {len(rows):,} of {counted(total, 'feature')}"
        lines = [header, f"Fields ({len(summaries)}; {basis}):"]
        lines += [
            f"- {short(s.name, NAME_MAX_CHARS)} ({s.type_name}, primary key)"
            if index in keys
            else f"- {short(s.name, NAME_MAX_CHARS)} ({_typed(s.type_name, units.get(s.name))}): {s.line}"
            for index, s in enumerate(summaries)
        ]
        lines += [f"Note: {figure.label}" for figure in units.values() if figure.warning]
        return ToolResult("\n".join(lines), read)

    def _describe_header(self, ref: str):
        layer = resolve_layer(self.ctx.project, ref)
        visible = "visible" if is_visible(self.ctx.project, layer) else "hidden"
        lines = [
            f"Layer {layer.name()!r} (id {layer.id()}): {layer_kind(layer)}, {geometry_label(layer)}, "
            f"{features_label(layer)}, {visible}",
            f"CRS: {crs_details(layer)}",
            f"Extent: {format_extent(layer.extent(), layer.crs().isGeographic())}",
            f"Provider: {layer.providerType()}",
        ]
        if isinstance(layer, QgsRasterLayer):
            raster = plan_raster_read(layer)
            lines[0] = f"Layer {layer.name()!r} (id {layer.id()}): raster, {visible}"
            lines.insert(1, grid_line(raster))
            return LayerRef.of(layer), "\n".join(lines), raster
        if not isinstance(layer, QgsVectorLayer):
            return LayerRef.of(layer), "\n".join(lines), None
        if layer.subsetString():
            lines.append(f"Filter: {layer.subsetString()}")
        selected = layer.selectedFeatureCount()
        if selected:
            lines.append(f"Selected: {counted(selected, 'feature')}")
        return LayerRef.of(layer), "\n".join(lines), plan_vector_read(layer)

    def preview_read_features(
        self, layer: str, fields: list[str] | None = None, expression: str = "", limit: int = 20
    ) -> ApprovalRequest | None:
        """Only an expression with side effects asks (tools/safety/expressions.py); it is parsed, not run."""
        request = expression_request(f"Read features of {layer!r}", [("the filter", expression)])
        if request is not None:
            request.targets = self.ctx.on_main(named_layer_targets, self.ctx.project, layer, ("read",))
        return request

    @gated(preview_read_features)
    def read_features(
        self, layer: str, fields: list[str] | None = None, expression: Expression = "", limit: int = 20
    ) -> ToolResult:
        """Read attribute values of features as a table.

        Args:
            limit: Rows (1-50).
        """
        limit = max(1, min(int(limit), MAX_READ_ROWS))
        approved = approval_granted()  # read here: the decision lives in this call's context
        plan, request, columns, units = self.ctx.on_main(self._prepare_read, layer, fields or [], expression, approved)
        request.setLimit(limit + 1)
        notes = "".join(f"\n{note}" for note in self._measure_notes(layer, expression))
        rows = read_rows(plan, request, columns, self.ctx.cancel)
        more = len(rows) > limit
        rows = rows[:limit]
        figures = tuple(units[name] for name in columns if name in units)
        read = ToolArtifact(layers=(LayerRef(plan.layer_name, plan.layer_id),), figures=figures)
        if not rows:
            where = f" where {expression}." if expression else "."
            return ToolResult(f"No features in {plan.layer_name!r}{where}{notes}", read)
        where = f" where {expression}" if expression else ""
        if more:
            first = counted(limit, "feature")
            head = f"First {first} of {plan.layer_name!r}{where} (more exist; filter or raise limit):"
        elif expression:
            head = f"All {counted(len(rows), 'feature')} of {plan.layer_name!r}{where}:"
        else:
            head = f"All {len(rows)} of {counted(plan.feature_count, 'feature')} of {plan.layer_name!r}:"
        headers = [header_with_unit(name, units.get(name)) for name in columns]
        warnings = [f"\nNote: {figure.label}" for figure in figures if figure.warning]
        table = markdown_table(headers, [[stored_text(v) for v in row] for row in rows])
        return ToolResult(head + "\n" + table + "".join(warnings) + notes, read)

    def _prepare_read(
        self, ref: str, fields: list[str], expression: str, approved: bool = False
    ) -> tuple[VectorReadPlan, QgsFeatureRequest, list[str], dict[str, Figure]]:
        vector = resolve_vector_layer(self.ctx.project, ref)
        names = vector.fields().names()
        for name in fields:
            if name not in names:
                raise ToolError(did_you_mean(name, names, f"field in {vector.name()!r}"))
        columns = list(fields) or names
        if expression.strip():
            request = filter_request(vector, expression, approved)  # keeps geometry if the filter needs it
            needed = set(columns) | set(QgsExpression(expression).referencedColumns())
            request.setSubsetOfAttributes(sorted(needed), vector.fields())
        else:
            request = QgsFeatureRequest()
            request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
            request.setSubsetOfAttributes(columns, vector.fields())
        return plan_vector_read(vector), request, columns, field_units(vector)

    # -- selection ---------------------------------------------------------
    def preview_select_features(self, layer: str, expression: str) -> ApprovalRequest | None:
        """Only an expression with side effects asks (tools/safety/expressions.py); it is parsed, not run."""
        request = expression_request(f"Select features of {layer!r}", [("the expression", expression)])
        if request is not None:
            request.targets = self.ctx.on_main(named_layer_targets, self.ctx.project, layer, ("select",))
        return request

    @gated(preview_select_features)
    def select_features(self, layer: str, expression: Expression) -> ToolResult:
        """Select the features matching an expression (empty clears the selection)."""
        if not expression.strip():
            return self.ctx.on_main(self._clear_selection, layer)
        plan, request = self.ctx.on_main(self._prepare_selection, layer, expression, approval_granted())
        notes = self._measure_notes(layer, expression)
        ids = collect_matching_ids(plan, request, self.ctx.cancel)
        done = self.ctx.on_main(self._apply_selection, plan.layer_id, ids, expression, plan.feature_count)
        return done.with_text("\n".join([done.text, *notes])) if notes else done

    def _measure_notes(self, layer: str, expression: str) -> list[str]:
        """A filter that measures geometries ($area, length()...): what in them changes its figures (issue 31)."""
        if not MEASURING.search(expression or ""):
            return []
        checks = self.ctx.on_main(lambda: plan_checks(resolve_layer(self.ctx.project, layer)))
        return [f"Note: {line}" for line in check_notes(checks, self.ctx.cancel)]

    def _clear_selection(self, ref: str) -> ToolResult:
        vector = resolve_vector_layer(self.ctx.project, ref)
        vector.removeSelection()
        return ToolResult(f"Cleared the selection of {vector.name()!r}.", _selected(vector))

    def _prepare_selection(
        self, ref: str, expression: str, approved: bool = False
    ) -> tuple[VectorReadPlan, QgsFeatureRequest]:
        vector = resolve_vector_layer(self.ctx.project, ref)
        return plan_vector_read(vector), filter_request(vector, expression, approved)

    def _apply_selection(self, layer_id: str, ids: list[int], expression: str, total: int) -> ToolResult:
        vector = self.ctx.project.mapLayer(layer_id)
        if vector is None:
            raise ToolError("the layer was removed from the project while selecting")
        vector.selectByIds(ids)
        notes = "".join(f"\nNote: {note}" for note in distance_limit_notes("", {"EXPRESSION": expression}))
        return ToolResult(
            f"Selected {len(ids):,} of {counted(total, 'feature')} in {vector.name()!r} where {expression}.{notes}",
            _selected(vector),
        )

    # -- map and layer tree ------------------------------------------------
    def preview_set_layer(
        self,
        layer: str,
        visible: bool | None = None,
        name: str = "",
        zoom: bool = False,
        move: str = "",
        group: str = "",
        remove: bool = False,
    ) -> ApprovalRequest | None:
        """Only removing a layer asks the user (what it is, and that its data stays); the rest is undoable."""
        if not remove:
            return None
        _check_remove_alone(visible, name, zoom, move, group)
        return self.ctx.on_main(self._remove_request, layer)

    @gated(preview_set_layer)
    def set_layer(
        self,
        layer: str,
        visible: bool | None = None,
        name: str = "",
        zoom: bool = False,
        move: str = "",
        group: str = "",
        remove: bool = False,
    ) -> ToolResult:
        """Show/hide, rename, zoom to (its selection if any) or remove a layer (data stays).

        Args:
            name: New name.
        """
        if remove:
            # It was remove_layer (agent/aliases.py routes that name here); only this part is gated.
            _check_remove_alone(visible, name, zoom, move, group)
            self.ctx.on_main(resolve_layer, self.ctx.project, layer)  # a wrong name gets its own message first
            if not approval_granted():
                raise ToolError(NEEDS_APPROVAL)
            return self.ctx.on_main(self._remove, layer, approved_targets(LAYER))
        if visible is None and not name and not zoom and not (move + group).strip():
            raise ToolError(
                "nothing to change: give visible, name, zoom, move, group or remove (style_layer styles a layer)"
            )
        if name:
            name = check_new_layer_name(name)
        return self.ctx.on_main(self._set_layer, layer, visible, name, zoom, move, group)

    def _remove_request(self, ref: str) -> ApprovalRequest:
        target = resolve_layer(self.ctx.project, ref)
        kind = (
            f"{geometry_label(target)}, {features_label(target)}"
            if isinstance(target, QgsVectorLayer)
            else layer_kind(target)
        )
        return ApprovalRequest(
            action=f"Remove layer {target.name()!r} from the project",
            details=f"The layer {target.name()!r} ({kind}) leaves the project. Its data source is not deleted.",
            effects=[Effect.CHANGE_PROJECT],
            targets=[layer_target(target, ("remove",))],
        )

    def _remove(self, ref: str, bound: list[Target] | None = None) -> ToolResult:
        """Remove the layer ``ref`` names; with an approval, only the very layer approved (main thread)."""
        target = resolve_layer(self.ctx.project, ref)
        for approved in bound or []:
            source = layer_target(target, ()).source
            if target.id() != approved.ident or source != approved.source:
                raise ToolError(
                    f"not run: the user approved removing layer {approved.name!r} (id {approved.ident}, "
                    f"{approved.source}), but {ref!r} now names layer {target.id()} ({source}). Nothing was "
                    "changed. If it is still wanted, call set_layer again: the user will be asked."
                )
        removed = LayerRef.of(target)
        self.ctx.project.removeMapLayer(target.id())
        return ToolResult(f"Removed layer {removed.name!r} from the project.", ToolArtifact(layers=(removed,)))

    def _set_layer(
        self,
        ref: str,
        visible: bool | None,
        name: str,
        zoom: bool,
        move: str = "",
        group: str = "",
    ) -> ToolResult:
        target = resolve_layer(self.ctx.project, ref)
        arrangement = plan_arrangement(self.ctx.project, target, move, group) if (move + group).strip() else None
        if zoom and target.extent().isNull():
            raise ToolError(f"{target.name()!r} has an empty extent; nothing to zoom to")
        done = []
        if name:
            done.append(self._rename(target, name))
        if visible is not None:
            done.append(self._set_visibility(target, visible))
        if zoom:
            done.append(self._zoom(target))
        if arrangement is not None:
            done.append(arrangement.apply())
        return ToolResult(" ".join(done), ToolArtifact(layers=(LayerRef.of(target),)))

    def _zoom(self, target: QgsMapLayer) -> str:
        if isinstance(target, QgsVectorLayer) and target.selectedFeatureCount():
            extent = target.boundingBoxOfSelected()
            what = f"the {target.selectedFeatureCount():,} selected features of {target.name()!r}"
        else:
            extent = target.extent()
            what = f"layer {target.name()!r}"
        if extent.isNull():
            raise ToolError(f"{target.name()!r} has an empty extent; nothing to zoom to")
        if extent.width() == 0 and extent.height() == 0:
            extent = extent.buffered(100.0 if not target.crs().isGeographic() else 0.001)
        else:
            extent = extent.buffered(max(extent.width(), extent.height()) * 0.05)
        canvas = self.ctx.iface.mapCanvas() if self.ctx.iface is not None else None
        if canvas is None:
            self.ctx.project.viewSettings().setDefaultViewExtent(QgsReferencedRectangle(extent, target.crs()))
            return f"Set the project's view to {what} (no map window in headless mode)."
        destination = canvas.mapSettings().destinationCrs()
        if target.crs().isValid() and destination.isValid() and target.crs() != destination:
            transform = QgsCoordinateTransform(target.crs(), destination, self.ctx.project)
            extent = transform.transformBoundingBox(extent)
        canvas.setExtent(extent)
        canvas.refresh()
        return f"Zoomed the map to {what}."

    def _set_visibility(self, target: QgsMapLayer, visible: bool) -> str:
        node = self.ctx.project.layerTreeRoot().findLayer(target.id())
        if node is None:
            raise ToolError(f"{target.name()!r} is not in the layer tree, so it cannot be shown or hidden")
        if visible:
            node.setItemVisibilityCheckedParentRecursive(True)
        else:
            node.setItemVisibilityChecked(False)
        return f"{'Showed' if visible else 'Hid'} layer {target.name()!r}."

    def _rename(self, target: QgsMapLayer, new_name: str) -> str:
        old = target.name()
        clash = [
            other for other in ordered_layers(self.ctx.project) if other.name() == new_name and other is not target
        ]
        target.setName(new_name)
        note = f" Note: another layer is also named {new_name!r}." if clash else ""
        return f"Renamed {old!r} to {new_name!r}.{note}"


def _units_of(project: QgsProject, layer_id: str) -> dict[str, Figure]:
    layer = project.mapLayer(layer_id)
    return field_units(layer) if layer is not None else {}


def _typed(type_name: str, figure: Figure | None) -> str:
    """``Real, m², ellipsoidal on WGS 84`` for a field whose unit is known."""
    return f"{type_name}, {figure.basis}" if figure is not None else type_name


def _check_remove_alone(visible: bool | None, name: str, zoom: bool, move: str, group: str) -> None:
    """Removing is one action on its own: nothing else would be left to change, and it is approved alone."""
    if visible is not None or name or zoom or (move + group).strip():
        raise ToolError("remove=true removes the layer: give it alone, without visible, name, zoom, move or group")


def filter_request(vector: QgsVectorLayer, expression: str, approved: bool = False) -> QgsFeatureRequest:
    """A request for the features matching ``expression``, checked first (main thread).

    Its functions are checked before anything evaluates it: one with side effects
    (``env``, Python functions...) is refused unless the user approved this call.
    """
    parsed = QgsExpression(expression)
    if parsed.hasParserError():
        raise ToolError(f"invalid expression: {' '.join(parsed.parserErrorString().split())}")
    require_safe_expression(expression, "the expression", approved)
    field_names = vector.fields().names()
    for column in sorted(parsed.referencedColumns()):
        if column != QgsFeatureRequest.ALL_ATTRIBUTES and column not in field_names:
            if PLACEHOLDER.fullmatch(column):  # a worked example's, copied as it was shown (SmolLM2, 4 times)
                raise ToolError(
                    f"{column!r} is a worked example's placeholder: write a real field name there (and a real value"
                    f" for any <value>); {vector.name()!r} has the fields {', '.join(map(repr, field_names))}"
                )
            raise ToolError(
                did_you_mean(column, field_names, f"field in {vector.name()!r}")
                + " (quote field names with double quotes, text values with single quotes)"
            )
    context = QgsExpressionContext(QgsExpressionContextUtils.globalProjectLayerScopes(vector))
    if not has_ellipsoid(str(context.variable("project_ellipsoid") or "")):
        # A project without an ellipsoid: $area would be planar (square degrees scaled to m²); measure on the datum's.
        context.appendScope(ellipsoid_scope(measuring_ellipsoid("", vector.crs())))
    check_evaluates(vector, parsed, "the expression", context)
    ellipsoid_made_here(str(context.variable("project_ellipsoid") or ""))  # $area read off the main thread
    request = QgsFeatureRequest(QgsExpression(expression))
    request.setExpressionContext(context)
    if not parsed.needsGeometry():
        request.setFlags(QgsFeatureRequest.Flag.NoGeometry)
    return request


def feature_count_label_from(count: int) -> str:
    return f"{count:,}" if count >= 0 else "an unknown number of"


def describe_map_layer_briefly(layer: QgsMapLayer) -> str:
    """``'schools' (Point, 40 features)`` for prompts and notes (the name quoted as data)."""
    if isinstance(layer, QgsVectorLayer):
        return f"{quoted(layer.name())} ({geometry_label(layer)}, {features_label(layer)})"
    return f"{quoted(layer.name())} ({layer_kind(layer)})"


def project_brief(project: QgsProject, max_layers: int = 30) -> str:
    """A few lines about the open project for the system prompt (main thread)."""
    layers = ordered_layers(project)
    title = project.title() or (project.baseName() if project.fileName() else "")
    named = quoted(title) if title else "unsaved project"
    head = f"Open project: {named}; CRS {project.crs().authid() or 'none'}; {len(layers)} layers"
    if not layers:
        return head + "."
    listed = "; ".join(describe_map_layer_briefly(layer) for layer in layers[:max_layers])
    more = f"; and {len(layers) - max_layers} more" if len(layers) > max_layers else ""
    return f"{head}: {listed}{more}."


def _selected(layer: QgsVectorLayer) -> ToolArtifact:
    """A call that changed ``layer``'s selection: the layer was read, and is left with this many selected."""
    return ToolArtifact(layers=(LayerRef.of(layer),), selected=(Selection(layer.name(), layer.selectedFeatureCount()),))
