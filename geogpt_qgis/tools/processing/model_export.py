"""An analysis as a QGIS Processing model (``.model3``), for the Graphical Modeler and for running it again.

Each algorithm step becomes a child algorithm wired output to input as it
ran; the layers the analysis started from become the model's layer
parameters, named after the layers; values stay values; each result layer is
a model output of the same name.  Steps a model cannot hold (SQL, code,
places, styling, edits) are listed in the model's help, and in the report the
caller shows: never dropped silently.  The plan (``analysis_plan``) is shared
with the PyQGIS script (``script_export``), so both run the same steps.

Built and written on the main thread: a model of a few children is made in
milliseconds, and nothing of the analysis runs here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qgis.core import (
    QgsProcessingModelAlgorithm,
    QgsProcessingModelChildAlgorithm,
    QgsProcessingModelChildParameterSource,
    QgsProcessingModelOutput,
    QgsProcessingModelParameter,
    QgsProcessingParameterMapLayer,
    QgsProcessingParameterRasterLayer,
    QgsProcessingParameterVectorLayer,
    QgsProject,
)
from qgis.PyQt.QtCore import QPointF

from geogpt_qgis.__about__ import TITLE
from geogpt_qgis.core.analysis_steps import Analysis
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.analysis_plan import CHILD, INPUT, AnalysisPlan, InputLayer, Wire, plan_analysis

MODEL_GROUP = "GeoGPT"
MODEL_SUFFIX = ".model3"
# Where the Modeler draws the parts: inputs in a row on top, the steps below in a column, outputs beside them.
COLUMN_X, ROW_Y, STEP_GAP, OUTPUT_X = 120.0, 60.0, 130.0, 380.0


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote: the file, its steps and inputs, and the calls it could not hold."""

    path: Path
    steps: int
    inputs: tuple[str, ...]  # the layers it starts from, by name
    outputs: tuple[str, ...]  # the result layers it makes, by name
    outside: tuple[str, ...]  # calls of the analysis a model cannot hold


def export_model(analysis: Analysis, path: Path, project: QgsProject, name: str = "") -> ExportReport:
    """Write ``analysis`` as a Processing model to ``path`` (main thread); ``ToolError`` when it cannot be."""
    plan = _plan(analysis, project)
    model = build_model(plan, name or path.stem)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not model.toFile(str(path)):
        raise ToolError(f"could not write the model to {path}")
    return report_of(plan, path)


def report_of(plan: AnalysisPlan, path: Path) -> ExportReport:
    outputs = tuple(name for step in plan.steps for name in step.outputs.values())
    inputs = tuple(item.layer for item in plan.inputs)
    return ExportReport(path, len(plan.steps), inputs, outputs, tuple(plan.outside))


def _plan(analysis: Analysis, project: QgsProject) -> AnalysisPlan:
    if analysis.empty:
        held = "; ".join(step.label for step in analysis.outside)
        raise ToolError(
            "no processing algorithm ran in this analysis: nothing a model can hold"
            + (f" (its steps: {held})" if held else "")
        )
    return plan_analysis(analysis, project)


def build_model(plan: AnalysisPlan, name: str) -> QgsProcessingModelAlgorithm:
    """The Processing model of ``plan``: parameters, children wired as they ran, outputs, and help."""
    model = QgsProcessingModelAlgorithm(name, MODEL_GROUP)
    for column, item in enumerate(plan.inputs):
        component = QgsProcessingModelParameter(item.name)
        component.setDescription(item.layer)
        component.setPosition(QPointF(COLUMN_X + column * 200.0, ROW_Y))
        model.addModelParameter(_parameter(item), component)
    for row, step in enumerate(plan.steps, start=1):
        child = QgsProcessingModelChildAlgorithm(step.algorithm_id)
        child.setChildId(step.child_id)
        child.setDescription(step.description)
        y = ROW_Y + row * STEP_GAP
        child.setPosition(QPointF(COLUMN_X, y))
        for parameter, wires in step.wires.items():
            child.addParameterSources(parameter, [_source(wire) for wire in wires])
        for parameter, value in step.defaults.items():
            child.addParameterSources(parameter, [QgsProcessingModelChildParameterSource.fromStaticValue(value)])
        outputs = {}
        for index, (output, layer) in enumerate(step.outputs.items()):
            model_output = QgsProcessingModelOutput(layer, layer)
            model_output.setChildId(step.child_id)
            model_output.setChildOutputName(output)
            model_output.setPosition(QPointF(OUTPUT_X, y + index * 40.0))
            outputs[layer] = model_output
        child.setModelOutputs(outputs)
        model.addChildAlgorithm(child)
    model.setHelpContent(help_content(plan))
    return model


def help_content(plan: AnalysisPlan) -> dict[str, str]:
    """The model's help: what it does, where it came from, what it leaves out, and each input's layer."""
    names = ", ".join(f"'{item.layer}'" for item in plan.inputs) or "no layer"
    lines = [
        f"Exported by {TITLE} from an analysis of {len(plan.steps)} processing step(s), starting from {names}. "
        "Run it on the same layers to make the same result layers again, or on other layers with the same fields."
    ]
    if plan.outside:
        lines += ["", "Steps of the analysis this model does not hold (redo them by hand):"]
        lines += [f"- {label}" for label in plan.outside]
    content = {"ALG_DESC": "\n".join(lines), "ALG_CREATOR": TITLE}
    content.update({item.name: f"The layer '{item.layer}' in the analysis." for item in plan.inputs})
    return content


def _parameter(item: InputLayer) -> Any:
    if item.kind == "raster":
        return QgsProcessingParameterRasterLayer(item.name, item.layer)
    if item.kind == "vector":
        if item.data_types:
            return QgsProcessingParameterVectorLayer(item.name, item.layer, item.data_types)
        return QgsProcessingParameterVectorLayer(item.name, item.layer)
    return QgsProcessingParameterMapLayer(item.name, item.layer)


def _source(wire: Wire) -> QgsProcessingModelChildParameterSource:
    if wire.kind == INPUT:
        return QgsProcessingModelChildParameterSource.fromModelParameter(wire.name)
    if wire.kind == CHILD:
        return QgsProcessingModelChildParameterSource.fromChildOutput(wire.name, wire.output)
    return QgsProcessingModelChildParameterSource.fromStaticValue(wire.value)
