"""A finished run the user liked, turned into a recipe: names become placeholders, values are generalised.

The question and the calls that answered it are rewritten with the same
placeholders: each layer the run named becomes ``<point layer>``, ``<other
point layer>``, ``<polygon layer>``... after its shape, each field ``<field>``
(then ``<other field>``), distances ``<distance>``, other numbers
``<number>``, quoted values ``<value>``, capitalised names in the question
``<place>``. So a recipe never carries the user's data, only the method.
Qt-free.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from geogpt_qgis.core.recipes import Call, Recipe

# Calls that only look for a method teach nothing once the method is known (the last two: find_algorithm's
# old names, still in stored conversations).
SKIPPED_TOOLS = frozenset(
    {"find_examples", "describe_capabilities", "find_algorithm", "search_algorithms", "describe_algorithm"}
)
DISTANCE_KEYS = frozenset({"DISTANCE", "MAX_DISTANCE", "BUFFER", "SEARCH_DISTANCE", "TOLERANCE"})
_ORDINALS = ("", "other ", "third ", "fourth ")
_NUMBER = re.compile(r"(?<![\w.<])\d+(?:\.\d+)?(?![\w.>])")
_QUOTED = re.compile(r"'(?:[^']|'')*'")
_UNITS = r"(?:m|metres?|meters?|km|kilometres?|kilometers?|miles?|ft|feet)"


class _Names:
    """Placeholders handed out in order of first use, per kind."""

    def __init__(self, layers: Mapping[str, str], fields: Iterable[str]) -> None:
        self.shapes = dict(layers)
        self.fields = set(fields)
        self.given: dict[str, str] = {}

    def placeholder(self, name: str, kind: str) -> str:
        if name not in self.given:
            used = sum(1 for p in self.given.values() if p.endswith(f"{kind}>"))
            self.given[name] = f"<{_ORDINALS[min(used, len(_ORDINALS) - 1)]}{kind}>"
        return self.given[name]

    def layer(self, name: str) -> str:
        shape = self.shapes.get(name, "")
        return self.placeholder(name, f"{shape} layer" if shape else "layer")


def generalise(
    question: str,
    calls: Iterable[Call],
    layers: Mapping[str, str],
    fields: Iterable[str],
) -> Recipe | None:
    """The recipe of a run (``None`` when it made no call worth keeping); ``layers`` maps name -> shape."""
    names = _Names(layers, fields)
    kept = [(tool, args) for tool, args in calls if tool not in SKIPPED_TOOLS]
    if not kept:
        return None
    template = _question(question, names)  # first: the question's names take the first placeholders
    general = tuple((tool, {key: _value(key, value, names) for key, value in args.items()}) for tool, args in kept)
    digest = hashlib.sha1(template.encode("utf-8"), usedforsecurity=False).hexdigest()[:10]
    return Recipe(id=f"mine-{digest}", family="mine", question=template, calls=general)


def _value(key: str, value: Any, names: _Names) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "<distance>" if key.upper() in DISTANCE_KEYS else value
    if isinstance(value, list):
        return [_value(key, item, names) for item in value]
    if isinstance(value, dict):
        return {k: _value(k, item, names) for k, item in value.items()}
    if not isinstance(value, str):
        return value
    if value in names.shapes:
        return names.layer(value)
    if value in names.fields:
        return names.placeholder(value, "field")
    if key.upper() in DISTANCE_KEYS and _NUMBER.fullmatch(value.strip()):
        return "<distance>"
    return _text(value, names)


def _text(text: str, names: _Names) -> str:
    """An expression, SQL statement or output name with its names, literals and numbers generalised."""
    out = _QUOTED.sub(lambda m: _literal(m.group(0)[1:-1], names), text)
    out = _in_order(out, {name: name for name in names.shapes}, names.layer, 0)
    out = _in_order(out, {name: name for name in names.fields}, lambda name: names.placeholder(name, "field"), 0)
    return _NUMBER.sub("<number>", out)


def _literal(inner: str, names: _Names) -> str:
    """A quoted literal: a layer's name (as in overlay_nearest('hospitals', ...)) or a value."""
    return f"'{names.layer(inner)}'" if inner in names.shapes else "'<value>'"


def _question(question: str, names: _Names) -> str:
    out = re.sub(rf"\b\d+(?:[.,]\d+)?\s*{_UNITS}\b", "<distance>", question, flags=re.I)
    out = re.sub(r"'[^']{1,60}'|\"[^\"]{1,60}\"", "<value>", out)
    layer_forms = {
        form: name for name in names.shapes for form in ({name, name.rstrip("s")} if len(name) > 3 else {name})
    }
    out = _in_order(out, layer_forms, names.layer, re.I)
    field_forms = {name: name for name in names.fields if len(name) > 2}
    out = _in_order(out, field_forms, lambda name: names.placeholder(name, "field"), 0)
    out = re.sub(r"(?<=[a-z0-9,] )[A-ZÆØÅ][\w'-]+(?: [A-ZÆØÅ][\w'-]+)*", "<place>", out)
    return _NUMBER.sub("<number>", out).strip()


def _in_order(text: str, forms: Mapping[str, str], placeholder: Callable[[str], str], flags: int) -> str:
    """``text`` with each form replaced by its name's placeholder, handed out in order of appearance."""
    if not forms:
        return text
    alternatives = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
    # Letters and digits bound a name, underscores do not: schools_near_hospitals names two layers.
    pattern = re.compile(rf"(?<![^\W_]|<)(?:{alternatives})(?![^\W_]|>)", flags)
    lowered = {form.lower(): name for form, name in forms.items()}

    def swap(match: re.Match[str]) -> str:
        name = forms.get(match.group(0)) or lowered.get(match.group(0).lower(), match.group(0))
        return placeholder(name)

    return pattern.sub(swap, text)
