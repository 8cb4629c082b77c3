"""Run a processing algorithm the way QGIS's own background tasks do, and publish its results.

For each algorithm: ``prepare`` on the main thread, ``runPrepared`` on the
tool's worker thread (or on the main thread for algorithms flagged
no-threading), ``postProcess`` on the main thread, exactly like
``QgsProcessingAlgRunnerTask``.  Stop cancels the ``QgsProcessingFeedback``;
a failed or cancelled run adds nothing to the project.  Result layers are
taken from the processing context and added to the project under meaningful
names (temporary vector outputs are first copied, on the worker, into a
GeoPackage each in the project's results folder by ``tools/result_store.py``,
and temporary rasters of a saved project into that folder, so they survive
saving), and
the tool answers with a short summary of each, never the features.
"""

from __future__ import annotations

import contextvars
import re
import threading
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from qgis.core import (
    QgsApplication,
    QgsExpressionContext,
    QgsExpressionContextUtils,
    QgsFeatureRequest,
    QgsMapLayer,
    QgsProcessingAlgorithm,
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingFeedback,
    QgsProject,
    QgsRasterLayer,
    QgsVectorLayer,
)

from geogpt_qgis.core import result_rasters
from geogpt_qgis.core.approval import approval_granted
from geogpt_qgis.core.artifacts import AddedLayer, AlgorithmRun, Selection, ToolArtifact, ToolResult
from geogpt_qgis.core.cancel import CancelToken, RunCancelled, current_cancel_token
from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.core.progress import progress_reporter
from geogpt_qgis.core.text import stored_text, truncate
from geogpt_qgis.tools import result_copies
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.layers import (
    crs_label,
    features_label,
    format_extent,
    geometry_label,
    ordered_layers,
    python_value,
)
from geogpt_qgis.tools.measures import field_units, record_field_units
from geogpt_qgis.tools.processing.algorithm_thread import run_on_algorithm_thread
from geogpt_qgis.tools.processing.compat import DISTANCE_METERS, FLAG_NO_THREADING, has_flag
from geogpt_qgis.tools.processing.describe import find_algorithm, renamed_note
from geogpt_qgis.tools.processing.failure_hints import way_forward
from geogpt_qgis.tools.processing.input_checks import input_notes, plan_inputs
from geogpt_qgis.tools.processing.measure_notes import (
    RunMeasures,
    first_layer_crs,
    plan_measures,
    statistic_figures,
    with_unit,
)
from geogpt_qgis.tools.processing.naming import slug, suggest_name, unique_name
from geogpt_qgis.tools.processing.nearest_check import distance_limit_notes
from geogpt_qgis.tools.processing.output_checks import check_layer, check_reprojection
from geogpt_qgis.tools.processing.params import (
    TEMPORARY_OUTPUT,
    PreparedParameters,
    check_before_approval,
    resolve_parameters,
)
from geogpt_qgis.tools.processing.random_sample import EXTRACT_BY_EXPRESSION, needs_own_sample, sampled_call, source_of
from geogpt_qgis.tools.processing.steps import group_intermediates
from geogpt_qgis.tools.raster_outputs import finish_raster_outputs
from geogpt_qgis.tools.result_store import ResultStore, StagedResult, is_temporary, result_store, stage_result
from geogpt_qgis.tools.result_store import release as release_staged
from geogpt_qgis.tools.result_style import style_result
from geogpt_qgis.tools.safety.algorithms import is_temporary_destination, require_approval
from geogpt_qgis.tools.thread_guard import raster_layer, vector_layer

LOG_CHARS = 1200
POLL_SECONDS = 0.2
_ERROR_LINE = re.compile(r"error|fail|unknown|invalid|cannot|could not|not found|exception", re.IGNORECASE)
LAYER_OUTPUTS = frozenset({"sink", "vectorDestination", "rasterDestination"})
MAX_FIELDS_LISTED = 12
REPROJECT = "native:reprojectlayer"
_OUTSIDE_RUNS = contextvars.Context().run(current_cancel_token.get)  # the token of code outside any agent run
REPROJECTIONS = frozenset({REPROJECT, "gdal:warpreproject"})


@dataclass
class RunPlan:
    """One tool call: the context all its steps share, and what must be released on the main thread."""

    algorithm_id: str
    prepared: PreparedParameters
    context: QgsProcessingContext
    feedback: QgsProcessingFeedback
    keep: list[Any] = field(default_factory=list)  # algorithm instances, released on the main thread
    measures: RunMeasures = field(default_factory=RunMeasures)  # units and methods of what it measures
    run_token: CancelToken | None = None  # the agent run the call belongs to (read on the calling thread)


class ProcessingRunner:
    """Runs algorithms for the processing tools of one ``ToolContext``."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        # Layers each agent run produced (by its cancel token), to recognise its intermediate steps.
        self._produced: weakref.WeakKeyDictionary[CancelToken, list[str]] = weakref.WeakKeyDictionary()

    # -- the whole call (worker thread) ---------------------------------------
    def run(self, algorithm_id: str, parameters: dict[str, Any], output_name: str = "") -> ToolResult:
        # Read on this thread: the decision lives in the tool call's context, not the main thread's.
        plan = self.ctx.on_main(self._plan, algorithm_id, parameters, approval_granted())
        plan.run_token = self.ctx.cancel
        checks = self.ctx.on_main(plan_inputs, self.ctx.project, plan.algorithm_id, plan.prepared)
        found = input_notes(checks, self.ctx.cancel)  # what in the inputs changes figures, and the rules applied
        plan.prepared.notes += found
        release = self.ctx.cancel.on_cancel(plan.feedback.cancel)
        poller = ProgressPoller(plan.feedback, algorithm_id)
        try:
            for reprojection in plan.prepared.reprojections:
                values = {"INPUT": reprojection.layer_id, "TARGET_CRS": reprojection.target, "OUTPUT": TEMPORARY_OUTPUT}
                results = self._execute(plan, REPROJECT, values)
                # The next step runs in a worker-side context that cannot see this context's
                # temporary layers, so it gets the reprojected layer itself.
                plan.prepared.values[reprojection.parameter] = self.ctx.on_main(
                    self._take_layer, plan, results["OUTPUT"], reprojection.layer_id
                )
            try:
                results = self._execute(plan, *self._own_sample_or_call(plan))
            except ToolError as exc:
                raise ToolError("\n".join([str(exc), *(f"Note: {note}" for note in found)])) from None
            # Before anything is stored or added; a difference the check cannot attribute is a note.
            plan.prepared.notes += self.ctx.on_main(self._check_outputs, plan, results)
            # What the call read and ran: its results' provenance, written with each stored table and returned.
            reads = ToolArtifact(
                layers=tuple(dict.fromkeys(plan.prepared.input_refs)),
                algorithm=AlgorithmRun(plan.algorithm_id, parameters),
            )
            results, later = self._keep_outputs(plan, results, output_name, reads)
            results, copies = self._keep_rasters(plan, results, output_name)
            try:
                published = self.ctx.on_main(self._publish, plan, results, output_name)
            except BaseException:
                for store, target in copies:
                    store.release_raster(target, drop=True)
                self._drop_staged(later)
                raise
            for store, target in copies:
                store.release_raster(target)
            for store, item in later.values():  # added as they are: stored while the model reads the result
                result_copies.defer(store, item, self.ctx.project, self.ctx.bridge)
            used = replace(published.artifact, layers=reads.layers, algorithm=reads.algorithm)
            raster_lines = finish_raster_outputs(self.ctx, plan.algorithm_id, published.artifact.added)
            return ToolResult("\n".join([published.text, *raster_lines]), used)
        finally:
            poller.stop()
            release()
            self.ctx.bridge.dispose(plan)

    def _own_sample_or_call(self, plan: RunPlan) -> tuple[str, dict[str, Any]]:
        """The algorithm and values to execute: the call itself, or a true random sample where QGIS has none."""
        values = plan.prepared.values
        if not needs_own_sample(plan.algorithm_id):
            return plan.algorithm_id, values
        source = self.ctx.on_main(source_of, find_algorithm(plan.algorithm_id), values, plan.context)
        plan.keep.append(source)
        return EXTRACT_BY_EXPRESSION, sampled_call(source, values, self.ctx.cancel)

    def _keep_outputs(
        self, plan: RunPlan, results: dict[str, Any], output_name: str, reads: ToolArtifact
    ) -> tuple[dict[str, Any], dict[str, tuple[ResultStore, StagedResult]]]:
        """Temporary vector outputs copied into the project's results folder (here, on the worker), to survive saving.

        Returns ``results`` with each such output replaced by the layer reading its stored table, and no
        outputs left to store.  Within an agent run (``result_copies``), the outputs are only staged: they
        are returned to be added as they are and stored after the call.
        """
        staged = self.ctx.on_main(self._stage_outputs, plan, results, output_name, reads)
        if result_copies.copies_deferred.get():
            return results, staged
        try:
            for store, item in staged.values():
                # A file writer builds CRSs: on a long-lived thread (see algorithm_thread), never this one.
                run_on_algorithm_thread(store.write, item, self.ctx.cancel)
                # Its features are stored: free them here, not on the main thread when the context goes.
                run_on_algorithm_thread(_empty_copied_layer, item)
            opened = self.ctx.on_main(self._open_outputs, staged)
        except BaseException:
            self._drop_staged(staged)
            raise
        return {**results, **opened}, {}

    def _drop_staged(self, staged: dict[str, tuple[ResultStore, StagedResult]]) -> None:
        for store, item in staged.values():
            store.discard(item, drop=True)
            release_staged(self.ctx, item)

    def _keep_rasters(
        self, plan: RunPlan, results: dict[str, Any], output_name: str
    ) -> tuple[dict[str, Any], list[tuple[ResultStore, Path]]]:
        """Temporary raster outputs of a saved project copied beside it (here, on the worker), so they survive saving.

        Returns ``results`` pointing at the copies, and the copies (reserved in
        the store until their layers are in the project).
        """
        targets = self.ctx.on_main(self._raster_targets, plan, results, output_name)
        try:
            for source, (_store, target) in targets.items():
                run_on_algorithm_thread(result_rasters.copy_raster, Path(results[source]), target)
        except BaseException:
            for store, target in targets.values():
                store.release_raster(target, drop=True)
            raise
        return {**results, **{name: str(target) for name, (_store, target) in targets.items()}}, list(targets.values())

    # -- main thread -----------------------------------------------------------
    def _raster_targets(
        self, plan: RunPlan, results: dict[str, Any], output_name: str
    ) -> dict[str, tuple[ResultStore, Path]]:
        algorithm = find_algorithm(plan.algorithm_id)
        base = self._base_name(plan, output_name)
        store = result_store(self.ctx.project)
        targets: dict[str, tuple[ResultStore, Path]] = {}
        destinations = [d for d in algorithm.parameterDefinitions() if d.isDestination()]
        # The first *layer* output takes the name asked for (a report's HTML file is not one).
        present = [d for d in destinations if results.get(d.name()) not in (None, "") and d.type() in LAYER_OUTPUTS]
        for index, definition in enumerate(present):
            value = results[definition.name()]
            if definition.type() != "rasterDestination" or not isinstance(value, str):
                continue
            if not Path(value).is_file() or not is_temporary_destination(value):
                continue
            target = store.raster_target(self.ctx.project, base if index == 0 else f"{base}_{slug(definition.name())}")
            if target is not None:
                targets[definition.name()] = (store, target)
        return targets

    def _stage_outputs(
        self, plan: RunPlan, results: dict[str, Any], output_name: str, reads: ToolArtifact
    ) -> dict[str, tuple[ResultStore, StagedResult]]:
        algorithm = find_algorithm(plan.algorithm_id)
        base = self._base_name(plan, output_name)
        staged: dict[str, tuple[ResultStore, StagedResult]] = {}
        destinations = [d for d in algorithm.parameterDefinitions() if d.isDestination()]
        present = [d for d in destinations if results.get(d.name()) not in (None, "") and d.type() in LAYER_OUTPUTS]
        for index, definition in enumerate(present):
            value = results[definition.name()]
            if not isinstance(value, str) or self.ctx.project.mapLayer(value) is not None:
                continue
            layer = plan.context.temporaryLayerStore().mapLayer(value) or _load_path(value, definition.type())
            if layer is None or not is_temporary(layer):
                continue
            plan.keep.append(layer)
            table = base if index == 0 else f"{base}_{slug(definition.name())}"
            staged[definition.name()] = stage_result(self.ctx.project, layer, table, reads)
        return staged

    def _open_outputs(self, staged: dict[str, tuple[ResultStore, StagedResult]]) -> dict[str, QgsMapLayer]:
        return {name: store.open(item) for name, (store, item) in staged.items()}

    def _base_name(self, plan: RunPlan, output_name: str) -> str:
        """The name the first output layer gets (the model's, or one made from the algorithm and its inputs)."""
        if output_name.strip():
            return slug(output_name)
        prepared = plan.prepared
        return suggest_name(
            plan.algorithm_id, prepared.input_names, prepared.values, _distance_suffix(plan, self.ctx.project)
        )

    def _plan(self, algorithm_id: str, parameters: dict[str, Any], approved: bool) -> RunPlan:
        algorithm = find_algorithm(algorithm_id)
        # A call that fails whatever the user decides says why (its preview asked nobody: see family).
        check_before_approval(algorithm, parameters, self.ctx.project)
        # The second lock: classified again as it runs, whatever the approve node decided.
        require_approval(algorithm, parameters, self.ctx.project, approved, self.ctx.trusted_file)
        prepared = resolve_parameters(algorithm, parameters, self.ctx.project, approved)
        prepared.notes += distance_limit_notes(algorithm.id(), prepared.values)
        renamed = renamed_note(algorithm_id, algorithm)
        if renamed:
            prepared.notes.insert(0, renamed)
        context = QgsProcessingContext()
        context.setProject(self.ctx.project)
        expression_context = QgsExpressionContext()
        expression_context.appendScope(QgsExpressionContextUtils.globalScope())
        expression_context.appendScope(QgsExpressionContextUtils.projectScope(self.ctx.project))
        context.setExpressionContext(expression_context)
        reprojected = {r.parameter: r.target for r in prepared.reprojections}
        crs = first_layer_crs(prepared.values, self.ctx.project, reprojected)
        # $area is ellipsoidal even in a project without an ellipsoid; every measure says its unit.
        measures = plan_measures(algorithm, prepared.values, self.ctx.project, context, crs)
        prepared.notes += measures.notes()
        return RunPlan(algorithm.id(), prepared, context, QgsProcessingFeedback(), measures=measures)

    def _take_layer(self, plan: RunPlan, layer_id: str, source_id: str) -> QgsMapLayer:
        layer = plan.context.takeResultLayer(layer_id)
        if layer is None:
            raise ToolError(f"the intermediate layer {layer_id} was not produced")
        plan.keep.append(layer)
        source = self.ctx.project.mapLayer(source_id)
        if source is not None:
            plan.prepared.notes += check_reprojection(
                source.crs(),
                source.extent(),
                layer,
                f"the reprojected copy of {source.name()!r}",
                self.ctx.project.transformContext(),
            )
        return layer

    def _check_outputs(self, plan: RunPlan, results: dict[str, Any]) -> list[str]:
        """Every new output layer's coordinates fit its CRS; a reprojection's lie where QGIS's operation puts its input.

        Returns notes (a difference a check cannot attribute keeps the result and is said).
        """
        algorithm = find_algorithm(plan.algorithm_id)
        values = plan.prepared.values
        source = values.get("INPUT")
        source = self.ctx.project.mapLayer(source) if isinstance(source, str) else source
        operation = values.get("OPERATION") if plan.algorithm_id == REPROJECT else ""
        notes: list[str] = []
        for definition in algorithm.parameterDefinitions():
            value = results.get(definition.name()) if definition.isDestination() else None
            if not isinstance(value, str) or not value or self.ctx.project.mapLayer(value) is not None:
                continue
            layer = plan.context.temporaryLayerStore().mapLayer(value) or _load_path(value, definition.type())
            if layer is None:
                continue  # reported as a missing output when published
            plan.keep.append(layer)
            what = f"the {definition.name()} layer of {plan.algorithm_id}"
            if plan.algorithm_id in REPROJECTIONS and isinstance(source, QgsMapLayer):
                notes += check_reprojection(
                    source.crs(),
                    source.extent(),
                    layer,
                    what,
                    plan.context.transformContext(),
                    operation if isinstance(operation, str) else "",
                )
            else:
                check_layer(layer, what)
        return notes

    def _prepare(self, plan: RunPlan, algorithm_id: str, values: dict[str, Any]) -> QgsProcessingAlgorithm:
        algorithm = QgsApplication.processingRegistry().createAlgorithmById(algorithm_id)
        if algorithm is None:
            raise ToolError(f"the algorithm {algorithm_id} is no longer available")
        plan.keep.append(algorithm)
        ok, message = algorithm.checkParameterValues(values, plan.context)
        if not ok:
            raise ToolError(f"{algorithm_id} refused the parameters: {message}")
        if not algorithm.prepare(values, plan.context, plan.feedback):
            # QGIS 3.34+'s native Voronoi refuses two points here, in its log, where 3.22's Python one raised.
            log = _log_tail(plan.feedback)
            raise ToolError(f"{algorithm_id} could not start.{log}{way_forward(algorithm_id, log)}")
        return algorithm

    # -- one algorithm ---------------------------------------------------------
    def _execute(self, plan: RunPlan, algorithm_id: str, values: dict[str, Any]) -> dict[str, Any]:
        algorithm = self.ctx.on_main(self._prepare, plan, algorithm_id, values)
        run = algorithm.runPrepared
        try:
            if has_flag(algorithm, FLAG_NO_THREADING):
                # QGIS forbids running these off the main thread (they touch the project or the GUI).
                results = self.ctx.on_main(run, values, plan.context, plan.feedback)
            else:
                # Never on the calling thread: see algorithm_thread for why that thread must not be short-lived.
                results = run_on_algorithm_thread(run, values, plan.context, plan.feedback)
        except QgsProcessingException as exc:
            self.ctx.check_cancelled()
            hint = way_forward(algorithm_id, f"{exc}")
            raise ToolError(f"{algorithm_id} failed: {exc}{_log_tail(plan.feedback)}{hint}") from None
        if plan.feedback.isCanceled():
            raise RunCancelled("stopped by the user")
        post = self.ctx.on_main(algorithm.postProcess, plan.context, plan.feedback)
        return dict(post or results or {})

    def _publish(self, plan: RunPlan, results: dict[str, Any], output_name: str) -> ToolResult:
        """Add the result layers to the project (main thread); summarise them for the model, and name them.

        Every output is resolved before anything is added: an algorithm that
        reports success but produced no layer (GDAL tools do) fails the call
        with its log, and the project is left as it was.
        """
        algorithm = find_algorithm(plan.algorithm_id)
        prepared = plan.prepared
        destinations = {d.name(): d for d in algorithm.parameterDefinitions() if d.isDestination()}
        resolved = [
            (name, self._resolve_output(plan, name, definition.type(), results.get(name)))
            for name, definition in destinations.items()
            if results.get(name) not in (None, "")
        ]
        taken = {layer.name() for layer in ordered_layers(self.ctx.project)}
        base = self._base_name(plan, output_name)
        lines: list[str] = [f"{plan.algorithm_id} finished."]
        lines += [f"Note: {note}" for note in prepared.notes]
        added: list[QgsMapLayer] = []
        index = 0  # among layer outputs: the first takes the name asked for, whatever files come before it
        for name, output in resolved:
            if isinstance(output, QgsMapLayer):
                layer_name = unique_name(base if index == 0 else f"{base}_{slug(name)}", taken)
                output.setName(layer_name)
                taken.add(layer_name)
                if isinstance(output, QgsVectorLayer):
                    style_result(output)  # see-through: the source and its selection stay readable under it
                if index == 0 and isinstance(output, QgsVectorLayer):
                    names = set(output.fields().names())
                    record_field_units(output, {k: v for k, v in plan.measures.fields.items() if k in names})
                self.ctx.project.addMapLayer(output)
                added.append(output)
                index += 1
                lines.append(f"{name}: added layer {summarise_layer(output)}")
                lines += one_feature_values(output)
            else:
                lines.append(f"{name}: {output}")
        lines += self._group_steps(plan, added)
        values = []
        selected: list[Selection] = []
        statistics = statistic_figures(prepared.values, results, self.ctx.project)
        for key, value in sorted(results.items()):
            if key in destinations:
                continue
            layer = self.ctx.project.mapLayer(value) if isinstance(value, str) else None
            if layer is not None:
                lines.append(f"{key}: {_existing_layer_note(layer)}")
                if isinstance(layer, QgsVectorLayer):  # a selection algorithm: the layer's selection as it left it
                    selected.append(Selection(layer.name(), layer.selectedFeatureCount()))
            else:
                values.append(f"{key}={_short_value(value)}{with_unit(statistics.get(key))}")
        if values:
            lines.append("Values: " + "; ".join(values))
        made = tuple(AddedLayer(layer.name(), layer.id()) for layer in added)
        figures = (*plan.measures.figures, *statistics.values())
        return ToolResult(
            truncate("\n".join(lines)), ToolArtifact(added=made, selected=tuple(selected), figures=figures)
        )

    def _group_steps(self, plan: RunPlan, added: list[QgsMapLayer]) -> list[str]:
        """Layers an earlier step of this run made and this step used go into a hidden group below the result."""
        token = plan.run_token
        if not added or token is None or token is _OUTSIDE_RUNS:
            return []  # not inside an agent run: no steps to tell apart
        produced = self._produced.setdefault(token, [])
        used = [r.layer_id for r in plan.prepared.reprojections]
        for value in plan.prepared.values.values():
            used += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
        intermediates = [layer_id for layer_id in used if layer_id in produced]
        produced.extend(layer.id() for layer in added)
        if not intermediates:
            return []
        names = [layer.name() for i in intermediates if (layer := self.ctx.project.mapLayer(i)) is not None]
        group = group_intermediates(self.ctx.project, intermediates, added[0])
        if group is None:
            return []
        return [f"Intermediate layers {', '.join(map(repr, names))} were moved into the hidden group {group!r}."]

    def _resolve_output(self, plan: RunPlan, name: str, kind: str, value: Any) -> QgsMapLayer | str:
        """A new layer to add, or a note about an existing layer or a plain value."""
        if isinstance(value, QgsMapLayer):  # already stored in a GeoPackage of the project's
            plan.keep.append(value)
            return value
        if isinstance(value, str) and self.ctx.project.mapLayer(value) is not None:
            return _existing_layer_note(self.ctx.project.mapLayer(value))
        layer = plan.context.takeResultLayer(value) if isinstance(value, str) else None
        if layer is None and isinstance(value, str):
            layer = _load_path(value, kind)
        if layer is not None:
            plan.keep.append(layer)  # released on the main thread if the call fails before adding it
            return layer
        if kind in LAYER_OUTPUTS:
            raise ToolError(
                f"{plan.algorithm_id} reported success but produced no {name} layer.{_log_tail(plan.feedback)}"
            )
        return _short_value(value)


class ProgressPoller:
    """Read the feedback's progress a few times a second and report it.

    Connecting to ``progressChanged`` would call Python once per feature from
    the algorithm's inner loop (100,000 calls for 100,000 features), slowing
    the algorithm and contending for the GIL with QGIS's main thread.
    """

    def __init__(self, feedback: QgsProcessingFeedback, label: str) -> None:
        self._feedback = feedback
        self._label = label
        self._report = progress_reporter()
        self._stopped = threading.Event()
        self._context = contextvars.copy_context()  # the progress sink of this tool call
        self._thread = threading.Thread(target=self._context.run, args=(self._poll,), daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        last = -1.0
        while not self._stopped.wait(POLL_SECONDS):
            percent = self._feedback.progress()
            if percent != last:
                last = percent
                self._report(percent, self._label)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=1.0)


def summarise_layer(layer: QgsMapLayer) -> str:
    """``'rivers_buffer_500m': Polygon, 2 features, EPSG:25832, extent ..., fields: name (String), ...``"""
    parts = [repr(layer.name())]
    if isinstance(layer, QgsVectorLayer):
        fields = layer.fields()
        listed = ", ".join(f"{f.name()} ({f.typeName()})" for f in list(fields)[:MAX_FIELDS_LISTED])
        more = f", … ({fields.count() - MAX_FIELDS_LISTED} more)" if fields.count() > MAX_FIELDS_LISTED else ""
        parts.append(
            f": {geometry_label(layer)}, {features_label(layer)}, {crs_label(layer)}, "
            f"extent {format_extent(layer.extent(), layer.crs().isGeographic())}, fields: {listed}{more}"
        )
    elif isinstance(layer, QgsRasterLayer):
        parts.append(
            f": raster {layer.width()} x {layer.height()} pixels, {layer.bandCount()} band(s), {crs_label(layer)}, "
            f"extent {format_extent(layer.extent(), layer.crs().isGeographic())}"
        )
    return "".join(parts)


def one_feature_values(layer: QgsMapLayer) -> list[str]:
    """A result of one feature (a total, one dissolved whole): its values, with their units, read here at once.

    Without them the model had to read the layer again to learn the one figure
    it ran the algorithm for; small models answered without it instead.
    """
    if not isinstance(layer, QgsVectorLayer) or layer.featureCount() != 1:
        return []
    names = layer.fields().names()
    if not names or len(names) > MAX_FIELDS_LISTED:
        return []
    request = QgsFeatureRequest().setFlags(QgsFeatureRequest.Flag.NoGeometry).setLimit(1)
    feature = next(iter(layer.getFeatures(request)), None)
    if feature is None:
        return []
    units = field_units(layer)
    values = [f"{name}={stored_text(python_value(feature[name]))}{with_unit(units.get(name))}" for name in names]
    return ["Its one feature: " + "; ".join(values)]


def _existing_layer_note(layer: QgsMapLayer) -> str:
    """For algorithms that act on a layer already in the project (selections, in-place edits)."""
    note = f"layer {layer.name()!r} (already in the project)"
    if isinstance(layer, QgsVectorLayer):
        note += f" now has {layer.selectedFeatureCount():,} selected features"
    return note


def _load_path(path: str, kind: str) -> QgsMapLayer | None:
    name = path.rsplit("/", 1)[-1]
    if kind == "rasterDestination":
        raster = raster_layer(path, name)
        return raster if raster.isValid() else None
    if kind in ("vectorDestination", "sink"):
        vector = vector_layer(path, name, "ogr")
        return vector if vector.isValid() else None
    return None


def _distance_suffix(plan: RunPlan, project: QgsProject) -> str:
    """``m`` when distances end up in metres (a projected CRS in metres, or after reprojection)."""
    if plan.prepared.reprojections:
        return "m"
    for layer_id in plan.prepared.values.values():
        layer = project.mapLayer(layer_id) if isinstance(layer_id, str) else None
        if layer is not None and layer.crs().isValid():
            return "m" if layer.crs().mapUnits() == DISTANCE_METERS else ""
    return ""


def _short_value(value: Any) -> str:
    value = python_value(value)  # a NULL output is a QVariant under Qt 5
    text = "NULL" if value is None else plain_number(value) if isinstance(value, float) else str(value)
    return text if len(text) <= 120 else text[:119] + "…"


def _log_tail(feedback: QgsProcessingFeedback) -> str:
    """The algorithm's own log, trimmed: its error lines first, then how it ended."""
    lines = [line.rstrip() for line in (feedback.textLog() or "").splitlines() if line.strip()]
    if not lines:
        return ""
    errors = [line for line in lines if _ERROR_LINE.search(line)][:8]
    tail = [line for line in lines[-6:] if line not in errors]
    text = "\n".join([*errors, *(["…"] if errors and tail else []), *tail])
    return f"\nAlgorithm log (trimmed):\n{text[:LOG_CHARS]}"


def _empty_copied_layer(item: StagedResult) -> None:
    """Drop a stored temporary layer's features (worker).

    A 100,000-feature memory layer takes about 100 ms to free; left to the
    processing context, that happens on the main thread and freezes QGIS.  The
    snapshot goes first, so the features are no longer shared and are freed
    in place; the emptied layer keeps its style for the stored copy.
    """
    item.source = None
    layer = item.layer
    if layer is not None and layer.providerType() == "memory":
        layer.dataProvider().truncate()
