"""``ask --export-model PATH``: the run's analysis written as a Processing model (or, for a ``.py``, a script).

The command records the calls of its run from the run's events, as the dock
does for an answer (``core.analysis_steps.StepRecorder``), and after a
finished run writes them on the main thread, where the project still holds
the layers they read.  What the model cannot hold is printed, as it is listed
in the model's help; an analysis without any algorithm is an error the
command reports (exit 1), not an empty file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from geogpt_qgis.core.analysis_steps import StepRecorder, analysis_of

if TYPE_CHECKING:
    from qgis.core import QgsProject

SCRIPT_SUFFIX = ".py"


def add_export_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--export-model",
        metavar="PATH.model3",
        help="write this run's processing steps as a QGIS Processing model (a PATH ending in .py: a PyQGIS script)",
    )


def export_after(status: int, path: str | None, steps: StepRecorder, project: QgsProject, err: TextIO) -> int:
    """The command's exit status once ``--export-model`` is done: written after a finished run (status 0) only;
    a failed export turns success into 1."""
    if status != 0 or not path:
        return status
    return 0 if write_export(path, steps, project, err) else 1


def write_export(path: str, steps: StepRecorder, project: QgsProject, err: TextIO) -> bool:
    """Write the recorded run to ``path`` (main thread); say what was written and left out; False on failure."""
    from geogpt_qgis.tools.base import ToolError
    from geogpt_qgis.tools.processing.model_export import export_model
    from geogpt_qgis.tools.processing.script_export import export_script

    target = Path(path).expanduser()
    analysis = analysis_of(steps.steps)
    try:
        if target.suffix.lower() == SCRIPT_SUFFIX:
            report = export_script(analysis, target, project)
        else:
            report = export_model(analysis, target, project)
    except (ToolError, OSError) as exc:
        err.write(f"error: could not export the model: {exc}\n")
        return False
    kind = "PyQGIS script" if target.suffix.lower() == SCRIPT_SUFFIX else "Processing model"
    err.write(
        f"Wrote the {kind} {report.path}: {report.steps} step(s) from {', '.join(report.inputs) or 'no layer'} "
        f"to {', '.join(report.outputs) or 'no layer'}\n"
    )
    if report.outside:
        err.write("Not in it (redo these by hand):\n" + "".join(f"  - {label}\n" for label in report.outside))
    return True
