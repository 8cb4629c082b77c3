"""Under a run that changed the project: "Undo run", which puts the project back as it was before that run.

The button holds the run's ``RunUndo`` (taken when the question was sent, ended
when the run ended).  It is enabled while the project still fits: nothing the
undo would restore changed since the run ended (``RunUndo.blocked``).  When
the user, or a later run, added, removed, renamed, moved or restyled a layer,
or changed its edits, the button is disabled and says what changed: undoing
would lose or mix up that later work.  Runs are undone newest first (undoing
the later run makes the earlier one fit again).  A map moved or a selection
changed since does not block: the undo puts the view and the selections of
before the run back, and the tooltip says so.  Whether it fits is checked again
on the project's own change signals (coalesced into one check per event-loop
pass) and, authoritatively, on the click.  Main thread only; the check and the
undo take milliseconds per layer (a style export each).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from qgis.PyQt import sip
from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtWidgets import QLabel, QToolButton, QVBoxLayout, QWidget

from geogpt_qgis.toolbelt.i18n import tr

if TYPE_CHECKING:
    from geogpt_qgis.tools.project.run_undo import RunUndo


class UndoRunAction(QWidget):
    """The "Undo run" button of one run, and what the undo did or why it cannot run."""

    def __init__(self, undo: RunUndo, changes: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("geogptUndoRun")
        self.undo = undo
        self.changes = changes
        self.button = QToolButton()
        self.button.setText(tr("Undo run"))
        self.button.setAutoRaise(True)
        self.button.clicked.connect(self.run_undo)
        self.report = QLabel()
        self.report.setWordWrap(True)
        self.report.hide()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.button)
        column.addWidget(self.report)
        self._check = QTimer(self)
        self._check.setSingleShot(True)
        self._check.setInterval(0)
        self._check.timeout.connect(self.refresh)
        links, project = self._listen(), self.undo.project
        # No reference to self (it is going away); the project may have gone first (the end of QGIS).
        self.destroyed.connect(lambda *_args: _disconnect(links) if not sip.isdeleted(project) else None)
        self.refresh()

    def _listen(self) -> list[tuple[Any, Any]]:
        """Check again when the project changes (one check per pass of the event loop, however many signals)."""
        timer = self._check

        def schedule(*_args: object) -> None:
            if not sip.isdeleted(timer):
                timer.start()

        project = self.undo.project
        links = [(project.dirtySet, schedule), (project.layersAdded, schedule), (project.layersRemoved, schedule)]
        for signal, slot in links:
            signal.connect(slot)
        return links

    def refresh(self) -> list[str]:
        """Enable the button while the run can be undone; returns what blocks it ([] when nothing does)."""
        blocked = self.undo.blocked()
        self.button.setEnabled(not blocked)
        if self.undo.done:
            self.button.setText(tr("Undone"))
            return blocked
        if blocked:
            self.button.setToolTip(
                tr(
                    "Cannot undo this run: since it ended, {what}. Undoing it now would lose those changes; "
                    "undo later runs first, or put them back."
                ).format(what="; ".join(blocked))
            )
            return blocked
        tip = tr("Put the project back as it was before this run: {what}.").format(what="; ".join(self.changes))
        overridden = self.undo.overridden()
        if overridden:
            tip += " " + tr("Since the run, {what}: the view and selections of before the run come back too.").format(
                what="; ".join(overridden)
            )
        self.button.setToolTip(tip)
        return blocked

    def run_undo(self) -> None:
        """Undo the run if the project still fits; say what was done, or why not."""
        blocked = self.refresh()
        if blocked:
            self._say(self.button.toolTip())
            return
        try:
            lines = self.undo.undo()
        except ValueError as exc:  # changed between the check and now: nothing was touched
            self._say(tr("Cannot undo this run: {why}.").format(why=exc))
            self.refresh()
            return
        self._say(tr("Run undone: {what}.").format(what="; ".join(lines) or tr("nothing needed changing")))
        self.refresh()

    def _say(self, text: str) -> None:
        self.report.setText(text)
        self.report.show()


def _disconnect(links: list[tuple[Any, Any]]) -> None:
    for signal, slot in links:
        with contextlib.suppress(TypeError, RuntimeError):  # the project went first
            signal.disconnect(slot)
    links.clear()
