"""The worked-examples tool family: ``find_examples`` hands the model solved questions like the user's.

Small models go wrong on method more than on syntax; a few worked examples
(a question template with placeholders and the calls that answered it) show
the method. The recipes are the shipped library (``resources/recipes.json``)
and the user's own (``tools/examples/recipe_store.py``), searched offline by
``core.recipe_search`` with the project's layer and field names as the
vocabulary the normaliser replaces. One tool with a one-argument schema:
it is paid on every model call.
"""

from __future__ import annotations

import functools
import threading

from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.core.recipe_search import RecipeIndex, Vocabulary
from geogpt_qgis.core.recipes import Recipe, load, render
from geogpt_qgis.core.tokens import estimate_tokens
from geogpt_qgis.tools.base import ToolFamily, ToolFunction

MAX_EXAMPLES = 3
MAX_TOKENS = 300  # all examples together, as the agent estimates tokens

_lock = threading.Lock()
_index: tuple[tuple[Recipe, ...], RecipeIndex] | None = None


@functools.cache
def shipped_recipes() -> tuple[Recipe, ...]:
    """The library that ships with the plugin, read once."""
    return tuple(load())


def recipe_index(extra: tuple[Recipe, ...] = ()) -> RecipeIndex:
    """The index over the shipped recipes and ``extra`` (the user's), rebuilt only when those change."""
    global _index
    recipes = (*extra, *shipped_recipes())
    with _lock:
        if _index is None or _index[0] != recipes:
            _index = (recipes, RecipeIndex(recipes))
        return _index[1]


def render_examples(recipes: list[Recipe], max_tokens: int = MAX_TOKENS) -> str:
    """The examples as the model reads them, best first, those that fit in ``max_tokens`` (at least one, clipped)."""
    shown: list[str] = []
    for recipe in recipes:
        text = render(recipe)
        if shown and estimate_tokens("\n".join([*shown, text])) > max_tokens:
            continue
        shown.append(text)
    out = "\n".join(shown)
    while estimate_tokens(out) > max_tokens and "\n" in out:
        out = out.rsplit("\n", 1)[0]
    return out


class ExampleTools(ToolFamily):
    """Worked examples of questions like the user's, from the shipped and the user's own recipe library."""

    name = "examples"
    title = "Worked examples"
    summary = "solved questions like yours, with the calls that answered them"
    prompt_hint = "Unsure how to solve it? find_examples first."

    def tools(self) -> list[ToolFunction]:
        return [self.find_examples]

    def user_recipes(self) -> tuple[Recipe, ...]:
        """The profile's own recipes (none if the store cannot be read)."""
        from geogpt_qgis.tools.examples.recipe_store import user_recipes

        return user_recipes()

    def find_examples(self, question: str) -> ToolResult:
        """Tool calls that solved similar questions."""
        vocabulary = self.ctx.on_main(self._vocabulary)
        found = recipe_index(self.user_recipes()).search(question, vocabulary, MAX_EXAMPLES)
        if not found:
            return ToolResult("No worked example matches; use find_algorithm or describe the data first.")
        return ToolResult(
            "Examples (replace <placeholders> with the user's layers, fields and values):\n" + render_examples(found)
        )

    def _vocabulary(self) -> Vocabulary:
        """The project's layer names with their shape, and their field names (main thread)."""
        from qgis.core import QgsVectorLayer, QgsWkbTypes

        shapes = {"Point": "point", "Line": "line", "Polygon": "polygon"}
        layers: dict[str, str] = {}
        fields: set[str] = set()
        for layer in self.ctx.project.mapLayers().values():
            if isinstance(layer, QgsVectorLayer):
                layers[layer.name()] = shapes.get(QgsWkbTypes.geometryDisplayString(layer.geometryType()), "")
                fields.update(layer.fields().names())
            else:
                layers[layer.name()] = ""
        return Vocabulary.of(layers, fields)
