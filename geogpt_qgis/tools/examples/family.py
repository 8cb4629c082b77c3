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
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.core.guided_schema import WorkedExamples
from geogpt_qgis.core.recipe_binding import question_mentions, slot_values
from geogpt_qgis.core.recipe_search import RecipeIndex, Vocabulary
from geogpt_qgis.core.recipes import Recipe, bind, load, placeholders, render, render_replies
from geogpt_qgis.core.tokens import estimate_tokens
from geogpt_qgis.tools.base import ToolFamily, ToolFunction
from geogpt_qgis.tools.layers import VectorReadPlan, plan_vector_read, read_sample

if TYPE_CHECKING:
    from qgis.core import QgsProject

    from geogpt_qgis.core.cancel import CancelToken

MAX_EXAMPLES = 3
MAX_TOKENS = 300  # all examples together, as the agent estimates tokens
# Worked examples put beside a question in a guided conversation (``guided_examples``): fewer, as a small model
# copies the first it reads.
GUIDED_EXAMPLES = 2
GUIDED_TOKENS = 200

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
            _index = (recipes, RecipeIndex(recipes, own=len(extra)))
        return _index[1]


def render_examples(recipes: list[Recipe], max_tokens: int = MAX_TOKENS, form: Callable[[Recipe], str] = render) -> str:
    """The examples as the model reads them, best first, those that fit in ``max_tokens`` (at least one, clipped)."""
    shown: list[str] = []
    for recipe in recipes:
        text = form(recipe)
        if shown and estimate_tokens("\n".join([*shown, text])) > max_tokens:
            continue
        shown.append(text)
    out = "\n".join(shown)
    while estimate_tokens(out) > max_tokens and "\n" in out:
        out = out.rsplit("\n", 1)[0]
    return out


def guided_examples(
    question: str, names: ProjectNames, tools: frozenset[str], values: dict[str, str] | None = None
) -> WorkedExamples:
    """Worked examples for ``question`` written as guided replies (JSON calls); empty when none matches.

    A guided conversation puts them beside each question (``agent.guided``):
    a small model asked to call ``find_examples`` passes it the project's name
    instead of the question; handed the examples, with the layers, fields and
    numbers the question names filled in, it copies the right call.  Only
    recipes whose calls are all among ``tools`` (those the conversation can
    run) are shown.  ``values``: text values of the layers the question names
    (``text_values``), each with its field.
    """
    layers, fields = names
    index = recipe_index(user_recipes_or_none())
    ranked = index.search(question, Vocabulary.of(layers, fields), len(index.recipes))
    found = [r for r in ranked if all(name in tools for name, _args in r.calls)][:GUIDED_EXAMPLES]
    mentions = question_mentions(question, layers, fields, values)
    filled = [bound(recipe, slot_values(placeholders(recipe), mentions)) for recipe in found]
    if not filled:
        return WorkedExamples()
    algorithms = {
        str(args.get("algorithm")): tuple(args.get("parameters") or {})
        for recipe in filled
        for name, args in recipe.calls
        if name == "run_algorithm" and isinstance(args.get("parameters"), dict)
    }
    return WorkedExamples(render_examples(filled, GUIDED_TOKENS, render_replies), tuple(algorithms.items()))


def bound(recipe: Recipe, values: dict[str, str]) -> Recipe:
    """``recipe`` with the placeholders ``values`` gives filled in (the others kept)."""
    return replace(recipe, question=bind(recipe.question, values), calls=tuple(recipe.bound_calls(values)))


def user_recipes_or_none() -> tuple[Recipe, ...]:
    """The profile's own recipes (none if the store cannot be read)."""
    from geogpt_qgis.tools.examples.recipe_store import user_recipes

    return user_recipes()


# The project's layer names with their shape (point, line, polygon or ""), and its field names.
ProjectNames = tuple[dict[str, str], list[str]]
# Text values a question may name unquoted ("primary" schools): read from the first rows of the layers it names.
VALUE_ROWS = 10_000
VALUE_CHARS = (3, 40)
UNQUOTABLE = "'\"\\\n\r"


def named_layer_plans(project: QgsProject, question: str, layers: dict[str, str]) -> list[VectorReadPlan]:
    """Snapshots of the vector layers ``question`` names, to read their values off the main thread (main thread).

    ``layers``: the project's layer names with their shapes, as ``project_names`` read them.
    """
    from qgis.core import QgsVectorLayer

    named = {mention.value for mention in question_mentions(question, layers, ()) if mention.kind == "layer"}
    return [
        plan_vector_read(layer)
        for layer in project.mapLayers().values()
        if isinstance(layer, QgsVectorLayer) and layer.name() in named
    ]


def text_values(plans: list[VectorReadPlan], cancel: CancelToken) -> dict[str, str]:
    """Each text value in the first ``VALUE_ROWS`` rows of ``plans``' layers, with the field holding it (worker)."""
    shortest, longest = VALUE_CHARS
    values: dict[str, str] = {}
    for plan in plans:
        for row in read_sample(plan, VALUE_ROWS, cancel):
            for name, value in zip(plan.field_names, row, strict=False):
                if (
                    isinstance(value, str)
                    and shortest <= len(value) <= longest
                    and any(c.isalpha() for c in value)
                    and not any(c in UNQUOTABLE for c in value)  # it goes between the quotes of an expression
                ):
                    values.setdefault(value, name)
    return values


def project_names(project: QgsProject) -> ProjectNames:
    """The project's layer names with their shape, and their field names (main thread)."""
    from qgis.core import QgsVectorLayer, QgsWkbTypes

    shapes = {"Point": "point", "Line": "line", "Polygon": "polygon"}
    layers: dict[str, str] = {}
    fields: set[str] = set()
    for layer in project.mapLayers().values():
        if isinstance(layer, QgsVectorLayer):
            layers[layer.name()] = shapes.get(QgsWkbTypes.geometryDisplayString(layer.geometryType()), "")
            fields.update(layer.fields().names())
        else:
            layers[layer.name()] = ""
    return layers, sorted(fields)


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
        return user_recipes_or_none()

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
        return Vocabulary.of(*project_names(self.ctx.project))
