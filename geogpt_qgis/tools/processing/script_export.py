"""An analysis as a standalone PyQGIS script: one ``processing.run`` call per step, wired as they ran.

The same plan as the Processing model (``analysis_plan``): the layers the
analysis started from are variables at the top (a project layer's name or id,
or a file path: change them to run it on other data), each step's result
feeds the steps that used it, and the result layers are added to the current
project under the names they had.  Calls a script of algorithms cannot hold
are listed in its header, as the model lists them in its help.  Written as
text with ``repr`` for every value: nothing from the conversation (a layer
name, a value) can become code.
"""

from __future__ import annotations

from pathlib import Path

from qgis.core import QgsProject

from geogpt_qgis.__about__ import TITLE
from geogpt_qgis.core.analysis_steps import Analysis
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.analysis_plan import CHILD, INPUT, AnalysisPlan, PlannedStep, Wire
from geogpt_qgis.tools.processing.model_export import ExportReport, _plan, report_of
from geogpt_qgis.tools.processing.params import TEMPORARY_OUTPUT

RESULTS = "results"  # the script's dict of result layers, by name


def export_script(analysis: Analysis, path: Path, project: QgsProject) -> ExportReport:
    """Write ``analysis`` as a PyQGIS script to ``path`` (main thread); ``ToolError`` when it cannot be."""
    plan = _plan(analysis, project)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script_text(plan), encoding="utf-8")
    except OSError as exc:
        raise ToolError(f"could not write the script to {path}: {exc}") from None
    return report_of(plan, path)


def script_text(plan: AnalysisPlan) -> str:
    """The script of ``plan``: inputs as variables, one ``processing.run`` per step, results added to the project."""
    variables = {item.name: item.name.upper() for item in plan.inputs}
    lines = [
        f'"""Exported by {TITLE}: {len(plan.steps)} processing step(s), run as they ran in the analysis.',
        "",
        "Run it in QGIS's Python console (or any PyQGIS script with processing initialised).",
        '"""',
        "",
    ]
    if plan.outside:  # comments: a call's text needs no escaping there, only to stay on its line
        lines.append("# Steps of the analysis this script does not hold (redo them by hand):")
        lines += [f"# - {_one_line(label)}" for label in plan.outside]
        lines.append("")
    lines += ["import processing", "from qgis.core import QgsProject", ""]
    lines.append("# The layers the analysis started from: a project layer's name or id, or a file path.")
    lines += [f"{variables[item.name]} = {item.layer!r}" for item in plan.inputs]
    lines += ["", f"{RESULTS} = {{}}"]
    for index, step in enumerate(plan.steps, start=1):
        lines += ["", *_step_lines(index, step, variables)]
    lines += [
        "",
        "# The result layers, under the names they had in the analysis.",
        f"for name, layer in {RESULTS}.items():",
        "    layer.setName(name)",
        "    QgsProject.instance().addMapLayer(layer)",
        "",
    ]
    return "\n".join(lines)


def _step_lines(index: int, step: PlannedStep, variables: dict[str, str]) -> list[str]:
    made = ", ".join(step.outputs.values()) or "no layer"
    lines = [
        f"# Step {index}: {_one_line(step.description)} -> {_one_line(made)}",
        f"{step.child_id} = processing.run(",
    ]
    lines.append(f"    {step.algorithm_id!r},")
    lines.append("    {")
    for parameter, wires in step.wires.items():
        values = [_expression(wire, variables) for wire in wires]
        shown = f"[{', '.join(values)}]" if parameter in step.many else values[0]
        lines.append(f"        {parameter!r}: {shown},")
    lines += [f"        {output!r}: {TEMPORARY_OUTPUT!r}," for output in [*step.outputs, *step.temporary]]
    lines += ["    },", ")"]
    lines += [f"{RESULTS}[{layer!r}] = {step.child_id}[{output!r}]" for output, layer in step.outputs.items()]
    return lines


def _expression(wire: Wire, variables: dict[str, str]) -> str:
    if wire.kind == INPUT:
        return variables[wire.name]
    if wire.kind == CHILD:
        return f"{wire.name}[{wire.output!r}]"
    return repr(wire.value)


def _one_line(text: str) -> str:
    """Text for a comment: a line break in a layer name would end the comment and start code."""
    return " ".join(text.split())
