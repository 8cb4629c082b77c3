"""Worked examples ("recipes"): a question template with placeholders and the tool calls that answered it.

Small models fail more often on method than on syntax (a buffer loop where
``native:joinbynearest`` answers, an area in degrees), so the agent can fetch
a few solved questions that look like the user's (``core.recipe_search``).
The shipped library is ``resources/recipes.json``; each recipe there carries
the demo-town values its test runs it with (``demo``) and what that run must
give (``expect``), so a recipe never teaches a wrong method or a renamed
algorithm. Qt-free.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geogpt_qgis.core.guided_schema import ARGUMENTS_KEY, TOOL_KEY

_PACKAGE = Path(__file__).resolve().parents[1]
# Installed, resources/ sits inside the plugin folder; in the repository, beside the package (as the icons do).
_PLACES = (_PACKAGE / "resources" / "recipes.json", _PACKAGE.parent / "resources" / "recipes.json")
SHIPPED = next((place for place in _PLACES if place.exists()), _PLACES[0])
PLACEHOLDER = re.compile(r"<[a-z][a-z0-9 ]*>")

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Recipe:
    """One solved question: its template, other wordings, the calls, and a one-line hint on the method."""

    id: str
    family: str
    question: str
    calls: tuple[Call, ...]
    alternatives: tuple[str, ...] = ()
    note: str = ""
    demo: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recipe:
        return cls(
            id=str(data["id"]),
            family=str(data.get("family", "")),
            question=str(data["q"]),
            calls=tuple((str(name), dict(args)) for name, args in data["calls"]),
            alternatives=tuple(str(a) for a in data.get("alt", ())),
            note=str(data.get("note", "")),
            demo=dict(data.get("demo", {})),
            expect=dict(data.get("expect", {})),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "family": self.family, "q": self.question}
        data["calls"] = [[name, args] for name, args in self.calls]
        if self.alternatives:
            data["alt"] = list(self.alternatives)
        if self.note:
            data["note"] = self.note
        return data

    def bound_calls(self, values: dict[str, Any] | None = None) -> list[Call]:
        """The calls with placeholders replaced (by ``values``, or the demo values)."""
        chosen = self.demo if values is None else values
        return [(name, bind(args, chosen)) for name, args in self.calls]


def bind(value: Any, values: dict[str, Any]) -> Any:
    """``value`` with each placeholder replaced; a string that is one placeholder takes the value's own type."""
    if isinstance(value, str):
        if value in values:
            return values[value]
        return PLACEHOLDER.sub(lambda m: str(values.get(m.group(0), m.group(0))), value)
    if isinstance(value, list):
        return [bind(item, values) for item in value]
    if isinstance(value, dict):
        return {key: bind(item, values) for key, item in value.items()}
    return value


def load(path: Path = SHIPPED) -> list[Recipe]:
    """The recipes in a library file (``{"recipes": [...]}``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Recipe.from_json(item) for item in data["recipes"]]


def render(recipe: Recipe) -> str:
    """A recipe as the model reads it: compact, one call per line."""
    lines = [f"Q: {recipe.question}"]
    lines += [f"  {name}({_compact(args)})" for name, args in recipe.calls]
    if recipe.note:
        lines.append(f"  # {recipe.note}")
    return "\n".join(lines)


def placeholders(recipe: Recipe) -> list[str]:
    """The placeholders ``recipe``'s calls use, in the order they first appear (then those of its question)."""
    text = json.dumps([args for _name, args in recipe.calls], ensure_ascii=False) + recipe.question
    return list(dict.fromkeys(PLACEHOLDER.findall(text)))


def render_replies(recipe: Recipe) -> str:
    """A recipe as a guided reply would write its calls: one JSON object per call (``core.guided_schema``).

    A small model copies the form it must reply in far better than it
    translates another notation into it.
    """
    lines = [f"Q: {recipe.question}"]
    lines += [json.dumps({TOOL_KEY: name, ARGUMENTS_KEY: args}, ensure_ascii=False) for name, args in recipe.calls]
    if recipe.note:
        lines.append(f"# {recipe.note}")
    return "\n".join(lines)


def _compact(args: dict[str, Any]) -> str:
    shown = (f"{key}={json.dumps(value, ensure_ascii=False, separators=(',', ':'))}" for key, value in args.items())
    return ", ".join(shown)
