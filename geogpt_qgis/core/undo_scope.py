"""What "Undo run" cannot take back, said on the approval card before a step runs.

Undo run puts the project back (layers, tree, styles, labels, selections, the
map view) and reverts feature edits made through QGIS's layers.  A file
written outside the project, a change in a database, or what arbitrary code
does outside the project are not the project's: once done they stay.  The user
must know that before approving, so the note is added in one place (where every
approval request leaves the toolkit) from the request's effects, never by each
tool.  Qt-free.
"""

from __future__ import annotations

from collections.abc import Iterable

from geogpt_qgis.core.effects import Effect

# The effects whose outcome Undo run cannot take back, and what the card says for each.
NOT_UNDONE = {
    Effect.WRITE_FILE: "Undo run cannot undo this: files it writes stay written.",
    Effect.WRITE_DATABASE: "Undo run cannot undo this: the change to the database stays.",
    Effect.RUN_CODE: "Undo run puts the project back, but cannot undo what the code does to files, databases "
    "or data sources directly.",
}


def undo_notes(effects: Iterable[Effect]) -> list[str]:
    """The notes for a request with ``effects``: one per effect Undo run cannot take back, in order."""
    return [NOT_UNDONE[effect] for effect in dict.fromkeys(effects) if effect in NOT_UNDONE]


def with_undo_notes(notes: list[str], effects: Iterable[Effect]) -> list[str]:
    """``notes`` with the undo notes for ``effects`` added once (a request previewed again keeps one each)."""
    return [*notes, *(note for note in undo_notes(effects) if note not in notes)]
