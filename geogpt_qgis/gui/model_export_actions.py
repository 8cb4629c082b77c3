"""The dock's "Export as model…": one answer's analysis, or the whole conversation's, as a Processing model.

Under an answer, a button beside Copy and Retry exports the algorithm steps
of that answer (recorded from its run's events); in the conversation's menu,
an action exports every step of the conversation (its stored history, read on
the agent's thread).  A file dialog picks the path; the extension picks the
form: ``.model3`` for the Graphical Modeler, ``.py`` for a PyQGIS script.
``export_to`` does the writing without a dialog (tests call it).  The model is
built and written on the main thread, where the project lives: a few
children, milliseconds; what the export could not hold is said in the chat.
``AnswerExport`` only listens to the run controller's signals and events, so
the controller itself needs no change for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qgis.PyQt.QtCore import QObject
from qgis.PyQt.QtWidgets import QFileDialog, QHBoxLayout, QToolButton, QWidget

from geogpt_qgis.core.analysis_steps import Analysis, Step, StepRecorder, analysis_of, steps_of_entries
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

if TYPE_CHECKING:
    from qgis.core import QgsProject

    from geogpt_qgis.gui.answer_actions import AnswerActions
    from geogpt_qgis.gui.conversation_view import ConversationView
    from geogpt_qgis.gui.run_controller import RunController

Say = Callable[[str, str], object]  # (text, level: "info" / "warning" / "error"), e.g. ChatView.add_notice
SCRIPT_SUFFIX = ".py"
MODEL_SUFFIX = ".model3"
PROPOSED_NAME = "analysis.model3"


def export_to(path: str, analysis: Analysis, project: QgsProject) -> tuple[str, str]:
    """Write ``analysis`` to ``path`` (a model, or a script for ``.py``); the message for the user and its level."""
    from geogpt_qgis.tools.base import ToolError
    from geogpt_qgis.tools.processing.model_export import export_model
    from geogpt_qgis.tools.processing.script_export import export_script

    target = Path(path)
    is_script = target.suffix.lower() == SCRIPT_SUFFIX
    if not is_script and target.suffix.lower() != MODEL_SUFFIX:
        target = target.with_name(target.name + MODEL_SUFFIX)
    try:
        report = (export_script if is_script else export_model)(analysis, target, project)
    except (ToolError, OSError) as exc:
        return tr("Could not export the analysis: {e}").format(e=exc), "error"
    saved = (
        tr("Saved the PyQGIS script {p}: {n} step(s).")
        if is_script
        else tr("Saved the Processing model {p}: {n} step(s).")
    )
    text = saved.format(p=report.path, n=report.steps)
    if not report.outside:
        return text, "info"
    left_out = "; ".join(report.outside)
    return text + " " + tr("Not in it (redo these by hand): {steps}").format(steps=left_out), "warning"


def ask_path(parent: QWidget) -> str:
    """The file the user picks (``""``: cancelled); the filter chosen decides the form when no extension is typed."""
    model_filter, script_filter = tr("Processing model (*.model3)"), tr("PyQGIS script (*.py)")
    proposed = str(Path(PlgOptionsManager.get_plg_settings().last_export_folder or Path.home()) / PROPOSED_NAME)
    path, chosen = QFileDialog.getSaveFileName(
        parent, tr("Export analysis as model"), proposed, f"{model_filter};;{script_filter}"
    )
    if not path:
        return ""
    PlgOptionsManager.set_value("last_export_folder", str(Path(path).parent))
    if chosen == script_filter and not path.lower().endswith(SCRIPT_SUFFIX):
        path += SCRIPT_SUFFIX
    return str(path)


def offer_model_export(steps: Sequence[Step], project: QgsProject, say: Say) -> QToolButton:
    """"Export as model…" for the algorithm steps of an answer's turn (off when it ran none), on a line of its own.

    Its own line under the answer, not in the Copy/Retry row: that row has to
    fit a dock 300 px wide (tests/qgis/test_narrow_dock.py).
    """
    analysis = analysis_of(list(steps))
    line = QWidget()
    line.setObjectName("geogptExportModelLine")
    row = QHBoxLayout(line)
    row.setContentsMargins(0, 0, 0, 0)
    button = QToolButton(line)
    button.setObjectName("geogptExportModel")
    button.setText(tr("Export as model…"))
    button.setAutoRaise(True)
    button.setEnabled(not analysis.empty)
    button.setToolTip(
        tr("Save this answer's processing steps as a Processing model or a PyQGIS script, to run again")
        if not analysis.empty
        else tr("No processing algorithm ran for this answer")
    )

    def clicked() -> None:
        path = ask_path(line)
        if path:
            say(*export_to(path, analysis, project))

    button.clicked.connect(clicked)
    row.addWidget(button)
    row.addStretch(1)
    return button


def install_conversation_export(view: ConversationView) -> Any:
    """Add "Export analysis as model…" to the conversation menu: every step of the conversation on screen."""
    bar = view.conversation_bar
    action = bar.menu.addAction(tr("Export analysis as model…"))
    bar.menu.insertAction(bar.run_log_action, action)  # beside "Export to Markdown…"

    def triggered() -> None:
        path = ask_path(view)
        if path:
            export_conversation(view, path)

    action.triggered.connect(triggered)
    return action


def export_conversation(view: ConversationView, path: str, thread_id: str = "") -> None:
    """Write the analysis of a conversation (default: the one on screen) to ``path``; the result said in the chat.

    Its history is read on the agent's thread; the export runs when it arrives, here on the main thread.
    """
    from geogpt_qgis.agent.transcript import transcript

    conversation = view.runs.conversation

    def write(messages: list[Any]) -> None:
        analysis = analysis_of(steps_of_entries(transcript(messages)))
        text, level = export_to(path, analysis, view.project)
        view.chat.add_notice(text, level)
        view.composer.status.setText(text if level != "warning" else tr("Exported; some steps are not in it."))

    view.relay.when_done(conversation.history(thread_id or None), write, view._store_failed)


class AnswerExport(QObject):
    """Records the calls of each run the controller paints, and offers their export under the finished answer.

    It only listens: to the conversation's events (the run on screen only, as
    the controller filters them), to a message being sent (a new question: new
    steps) and to a run finishing (the answer's actions are in the chat then).
    """

    def __init__(self, runs: RunController, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.runs = runs
        self.steps = StepRecorder()
        self.button: QToolButton | None = None  # under the newest answer, for tests
        runs.message_sent.connect(lambda _text: self.steps.reset())
        runs.conversation.event.connect(self._on_event)
        runs.run_finished.connect(self._on_finished)

    def _on_event(self, run_id: int, event: object) -> None:
        if run_id == self.runs.run_id:  # not a stopped run still winding down
            self.steps.record(event)

    def _on_finished(self, status: str) -> None:
        if status != "finished":
            return
        if _newest_answer_actions(self.runs.chat.items()) is not None:  # an answer to offer it under
            project = self.runs.conversation.ctx.project
            self.button = offer_model_export(self.steps.steps, project, self.runs.chat.add_notice)
            self.runs.chat.add_item(self.button.parentWidget())


def _newest_answer_actions(items: Sequence[QWidget]) -> AnswerActions | None:
    """The Copy/Retry row of the newest answer: after the last user message, or none."""
    from geogpt_qgis.gui.answer_actions import AnswerActions

    for widget in reversed(items):
        if isinstance(widget, AnswerActions):
            return widget
        if widget.objectName() == "geogptUserMessage":
            return None
    return None


def install_model_export(runs: RunController, view: ConversationView) -> AnswerExport:
    """Both exports in the dock: under each finished answer, and in the conversation's menu."""
    install_conversation_export(view)
    return AnswerExport(runs, view)
