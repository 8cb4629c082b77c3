"""The user's own values for a recipe's placeholders, read from the question that found it.

A worked example with ``<point layer>`` and ``<distance>`` in it asks a small
model to translate twice: from the template to its question, and from the
placeholder to a name.  Models of a few hundred million weights copy the
placeholder itself.  So the layers, fields, numbers and quoted values the
question names are matched to the placeholders of the same kind,
in the order the question names them (the first point layer is
``<point layer>``, the second ``<other point layer>``), and the example is
shown with them filled in.  A placeholder the question gives no value for
stays as it is, and so do ``<distance>`` and ``<area>``: their number
depends on the layer's CRS, which only the call decides (they are still read,
so that "5 ha" never fills ``<number>`` with 5).  Qt-free.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from geogpt_qgis.core.recipe_search import AREA_PATTERN, DISTANCE_PATTERN, NUMBER_PATTERN, name_forms

# Kinds never filled in: a distance is a number in the units of the layer's CRS (the runner refuses "500 m"), and
# which layer and CRS that is, the model's call decides; "500 m" shown as 500 would be wrong on a layer in feet.
UNFILLED = frozenset({"distance", "area"})
_QUOTED = re.compile(r"'([^']{1,60})'|\"([^\"]{1,60})\"|«([^»]{1,60})»")


@dataclass(frozen=True)
class Mention:
    """A name, distance, number or quoted value in the question, where it stands."""

    start: int
    end: int
    kind: str  # layer, field, area, distance, number, value
    value: str
    shape: str = ""


def question_mentions(
    question: str, layers: dict[str, str], fields: Iterable[str], values: Mapping[str, str] | None = None
) -> list[Mention]:
    """What ``question`` names, in its order; ``layers`` maps each layer's name to its shape.

    ``values`` maps text values of the data (``primary``) to the field that
    holds them (``type``): a value the question names unquoted ("How many
    primary schools?") fills ``<value>``, and its field ``<field>``.  SmolLM2
    copied ``"<field>" = '<value>'`` as it was shown, four times.
    """
    taken: list[Mention] = []
    for kind, names in (("layer", layers), ("field", dict.fromkeys(fields, ""))):
        found = [
            Mention(m.start(), m.end(), kind, name, shape)
            for name, shape in names.items()
            for form in name_forms(name, singular=kind == "layer")
            if len(form) >= 2
            for m in re.finditer(rf"(?<!\w){re.escape(form)}(?!\w)", question, flags=re.I)
        ]
        _keep_free(taken, found)
    _keep_values(taken, question, values or {})
    for kind, pattern in (("area", AREA_PATTERN), ("distance", DISTANCE_PATTERN)):  # read, never filled in
        _keep_free(taken, [Mention(m.start(), m.end(), kind, m.group(0).strip()) for m in pattern.finditer(question)])
    quoted = [
        Mention(m.start(), m.end(), "value", next(g for g in m.groups() if g)) for m in _QUOTED.finditer(question)
    ]
    _keep_free(taken, quoted)
    _keep_free(taken, [Mention(m.start(), m.end(), "number", m.group(0)) for m in NUMBER_PATTERN.finditer(question)])
    return sorted(taken, key=lambda m: m.start)


def slot_values(placeholders: Iterable[str], mentions: list[Mention]) -> dict[str, str]:
    """A value for each placeholder (in the order the recipe uses them) that a mention of its kind fills.

    Each mention fills one placeholder at most: ``<layer>`` and ``<polygon
    layer>`` in one recipe are two layers.
    """
    used: set[int] = set()
    values: dict[str, str] = {}
    for placeholder in dict.fromkeys(placeholders):
        words = placeholder[1:-1].split()
        words = words[1:] if words[0] == "other" else words
        kind = "layer" if words[-1] == "layer" else words[-1]
        if kind in UNFILLED:
            continue
        shape = words[0] if kind == "layer" and len(words) == 2 else ""
        for index, mention in enumerate(mentions):
            if index in used or mention.kind != kind or (shape and mention.shape != shape):
                continue
            used.add(index)
            values[placeholder] = mention.value
            break
    return values


def _keep_values(taken: list[Mention], question: str, values: Mapping[str, str]) -> None:
    """Each value of ``values`` the question names where nothing else is named, after its field (no width)."""
    lowered = question.lower()
    found = [
        (Mention(m.start(), m.start(), "field", field), Mention(m.start(), m.end(), "value", value))
        for value, field in values.items()
        if value.lower() in lowered
        for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", question, flags=re.I)
    ]
    for field, value in sorted(found, key=lambda pair: (pair[1].start - pair[1].end, pair[1].start)):
        if all(value.end <= other.start or value.start >= other.end for other in taken):
            taken += [field, value]


def _keep_free(taken: list[Mention], found: list[Mention]) -> None:
    """Add the longest of ``found`` first, each only where no mention is yet."""
    for mention in sorted(found, key=lambda m: (m.start - m.end, m.start)):
        if all(mention.end <= other.start or mention.start >= other.end for other in taken):
            taken.append(mention)
