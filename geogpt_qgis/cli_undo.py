"""Undo run on the command line: ``ask ... --save OUT.qgz`` keeps the run's undo, ``undo-run`` uses it.

``ask`` takes the project's state when it has read it (``RunUndo.start``, the
same as the dock) and, when the run's project is saved, writes the undo record
beside it as JSON: ``OUT.undo-run.json`` (the state before, a digest of the
state as saved, the definitions of layers the run removed, and the old values
of the features whose edits were saved).  A run that changed nothing leaves no
record (and removes an older one, which no longer fits that project).

``python -m geogpt_qgis undo-run --project OUT.qgz`` reads the project and the
record, refuses (exit 1, nothing changed) when the project was changed since
it was saved in a way the undo would lose (a layer added, removed, renamed,
moved or restyled, say; ``--force`` undoes anyway, and what the undo restores goes back
to before the run, the changes made to it since included), puts the state before the
run back, writes the project in place, reverts the saved edits in their data
sources, and deletes the record (a run is undone once).  Layers the run added
leave the project; their data stays in their result files beside it.  A
run's temporary memory layers are not kept (a saved project does not keep
their features either).  Exit status: 0 undone, 1 refused or failed, 2 no
project or no record.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from qgis.core import QgsProject

    from geogpt_qgis.tools.project.run_undo import RunUndo

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def undo_record_path(project_file: Path) -> Path:
    """Where the undo of the run that saved ``project_file`` is kept: beside it, ``NAME.undo-run.json``."""
    return project_file.with_name(project_file.stem + ".undo-run.json")


def add_parser(commands: Any) -> None:
    """The ``undo-run`` command, beside ``ask`` and ``mcp``."""
    undo = commands.add_parser(
        "undo-run", help="put a project saved by ask --save back as it was before that question's run"
    )
    undo.add_argument("--project", required=True, help="the project ask --save wrote (its .undo-run.json beside it)")
    undo.add_argument(
        "--force", action="store_true", help="undo even if the project was changed since the run saved it"
    )


def start_recording(project: QgsProject) -> RunUndo:
    """The state before the run (main thread, once the project is read)."""
    from geogpt_qgis.tools.project.run_undo import RunUndo

    return RunUndo.start(project, portable=True)


def keep_record(undo: RunUndo, saved_as: Path, err: TextIO) -> None:
    """After the project was saved as ``saved_as``: write the run's undo beside it (nothing when it changed nothing)."""
    record = undo_record_path(saved_as)
    changes = undo.finish()
    if not changes:
        record.unlink(missing_ok=True)
        return
    record.write_text(json.dumps(undo.to_dict()), encoding="utf-8")
    err.write(
        f"Undo record saved in {record} (undo the run with: python -m geogpt_qgis undo-run --project {saved_as})\n"
    )


def run_undo_command(args: argparse.Namespace, err: TextIO) -> int:
    """``undo-run``: start QGIS headless, undo the run recorded beside the project, save it; the exit status."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    project_file = Path(args.project)
    record = undo_record_path(project_file)
    if not project_file.is_file():
        err.write(f"error: no project file at {project_file}\n")
        return EXIT_USAGE
    if not record.is_file():
        err.write(
            f"error: no run to undo: {record} does not exist (ask --save writes it when a run changes the project)\n"
        )
        return EXIT_USAGE
    from qgis.core import QgsApplication, QgsProject

    from geogpt_qgis.toolbelt.qgis_profile import user_profile_folder

    app = QgsApplication([], False, user_profile_folder(), "desktop")
    app.initQgis()
    try:
        project = QgsProject.instance()
        if not project.read(str(project_file)):
            err.write(f"error: QGIS could not read the project {project_file}: {project.error()}\n")
            return EXIT_USAGE
        return _undo(project, project_file, record, bool(args.force), err)
    finally:
        QgsProject.instance().clear()
        app.exitQgis()


def _undo(project: QgsProject, project_file: Path, record: Path, force: bool, err: TextIO) -> int:
    from geogpt_qgis.tools.project.run_undo import RunUndo

    try:
        undo = RunUndo.from_dict(project, json.loads(record.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        err.write(f"error: the undo record {record} cannot be read: {exc}\n")
        return EXIT_FAILED
    blocked = undo.blocked()
    if blocked and not force:
        err.write(
            f"error: {project_file} changed since the run saved it ({'; '.join(blocked)}); undoing would lose "
            "those changes. Nothing was changed. Use --force to undo anyway.\n"
        )
        return EXIT_FAILED
    lines = undo.undo(force=True)
    if not project.write(str(project_file)):
        err.write(f"error: could not save the project to {project_file}: {project.error()}\n")
        return EXIT_FAILED
    record.unlink()
    for line in lines:
        err.write(f"  {line}\n")
    err.write(f"Undid the run: {project_file} is as it was before it.\n")
    return EXIT_OK
