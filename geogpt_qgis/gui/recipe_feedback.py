"""Recipes grown from the user's work: a thumbs-up under an answer, and the list of them in the options page.

``TurnCalls`` keeps the question and the calls that succeeded in the turn on
screen; ``LikeButton`` (under a finished answer) turns them into a recipe
(``core.recipe_learning``: the project's names become placeholders) and
stores it in the profile's library (``tools/examples/recipe_store.py``), where
``find_examples`` finds it. ``MyRecipesBox`` lists them and deletes them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from qgis.PyQt.QtCore import Qt, pyqtSignal
from qgis.PyQt.QtGui import QFontMetrics
from qgis.PyQt.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from geogpt_qgis.core.events import ToolFinished, ToolStarted
from geogpt_qgis.core.recipes import Call, Recipe
from geogpt_qgis.toolbelt.i18n import tr

log = logging.getLogger(__name__)
THUMBS_UP = "\N{THUMBS UP SIGN}"
PLAIN_THUMB = "+1"  # where no font draws the emoji (a bare Debian has none), rather than an empty box


def thumb(widget: QWidget) -> str:
    """The thumbs-up if a font on this system draws it (Qt's fallback fonts count), else "+1"."""
    return THUMBS_UP if QFontMetrics(widget.font()).inFontUcs4(ord(THUMBS_UP)) else PLAIN_THUMB


class TurnCalls:
    """The user's question and the calls that succeeded while its answer was written."""

    def __init__(self) -> None:
        self.question = ""
        self._started: dict[str, Call] = {}
        self.calls: list[Call] = []
        self.added: set[str] = set()  # layers the turn made: their names are generalised from their parts

    def start(self, question: str) -> None:
        self.question = question
        self._started.clear()
        self.calls = []
        self.added = set()

    def record(self, event: object) -> None:
        if isinstance(event, ToolStarted):
            self._started[event.call_id] = (event.name, dict(event.args))
        elif isinstance(event, ToolFinished) and event.ok and event.call_id in self._started:
            self.calls.append(self._started.pop(event.call_id))
            if event.artifact is not None:
                self.added.update(layer.name for layer in event.artifact.added)


def project_names(project: Any) -> tuple[dict[str, str], set[str]]:
    """The project's layer names with their shape, and its field names (main thread)."""
    from qgis.core import QgsVectorLayer, QgsWkbTypes

    shapes = {"Point": "point", "Line": "line", "Polygon": "polygon"}
    layers: dict[str, str] = {}
    fields: set[str] = set()
    for layer in project.mapLayers().values():
        shape = ""
        if isinstance(layer, QgsVectorLayer):
            shape = shapes.get(QgsWkbTypes.geometryDisplayString(layer.geometryType()), "")
            fields.update(layer.fields().names())
        layers[layer.name()] = shape
    return layers, fields


class LikeButton(QToolButton):
    """👍 under an answer: keep the run as a worked example in the profile's own library."""

    saved = pyqtSignal(str)  # the recipe's id

    def __init__(
        self,
        question: str,
        calls: list[Call],
        project: Any,
        added: set[str] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("geogptLike")
        self.question, self.calls, self.project = question, list(calls), project
        self.added = set(added or ())
        self.setText(thumb(self))
        self.setToolTip(tr("Good answer: keep its method as a worked example for the assistant"))
        self.setAutoRaise(True)
        self.clicked.connect(self.keep)

    def keep(self) -> Recipe | None:
        """Store the run as a recipe (once); ``None`` when it has no call worth keeping."""
        from geogpt_qgis.core.recipe_learning import generalise
        from geogpt_qgis.tools.examples.recipe_store import add_recipe

        layers, fields = project_names(self.project)
        layers = {name: shape for name, shape in layers.items() if name not in self.added}
        recipe = generalise(self.question, self.calls, layers, fields)
        self.setEnabled(False)
        if recipe is None:
            self.setText(thumb(self) + " " + tr("Nothing to keep: the answer used no tool"))
            return None
        try:
            add_recipe(recipe)
        except OSError as exc:
            log.warning("the example could not be saved: %s", exc)
            self.setText(thumb(self) + " " + tr("Could not save the example"))
            return None
        self.setText(thumb(self) + " " + tr("Kept as a worked example"))
        self.saved.emit(recipe.id)
        return recipe


class MyRecipesBox(QGroupBox):
    """The options page's list of the user's own recipes, with Delete."""

    def __init__(self, parent: QWidget | None = None, path: Path | None = None) -> None:
        super().__init__(tr("My worked examples"), parent)
        self.path = path  # None: the profile's library
        self.list = QListWidget()
        self.list.setObjectName("geogptMyRecipes")
        self.list.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        # An empty list says what goes there and how one gets there (instead of an empty white box).
        self.empty_hint = QLabel(
            tr(
                "No worked examples yet. When an answer did what you wanted, press 👍 under it: its steps are kept "
                "here, and the assistant follows them for similar questions."
            )
        )
        self.empty_hint.setObjectName("geogptMyRecipesHint")
        self.empty_hint.setWordWrap(True)
        self.delete_button = QPushButton(tr("Delete"))
        self.delete_button.clicked.connect(self.delete_selected)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.delete_button)
        column = QVBoxLayout(self)
        column.addWidget(self.empty_hint)
        column.addWidget(self.list)
        column.addLayout(row)
        self.reload()

    def reload(self) -> None:
        from geogpt_qgis.tools.examples.recipe_store import user_recipes

        self.list.clear()
        for recipe in user_recipes(self.path):
            item = QListWidgetItem(recipe.question)
            item.setData(Qt.ItemDataRole.UserRole, recipe.id)
            item.setToolTip("\n".join(name for name, _ in recipe.calls))
            self.list.addItem(item)
        empty = self.list.count() == 0
        self.delete_button.setEnabled(not empty)
        self.delete_button.setVisible(not empty)
        self.list.setVisible(not empty)
        self.empty_hint.setVisible(empty)

    def delete_selected(self) -> int:
        """Delete the selected recipes from the profile's library; how many went."""
        from geogpt_qgis.tools.examples.recipe_store import delete_recipe

        chosen = [item.data(Qt.ItemDataRole.UserRole) for item in self.list.selectedItems()]
        gone = sum(delete_recipe(recipe_id, self.path) for recipe_id in chosen)
        self.reload()
        return gone
