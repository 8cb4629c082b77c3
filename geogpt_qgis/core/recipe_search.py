"""Find the recipes whose question looks like the user's: normalised text, SQLite FTS5 with bm25, offline.

Both the recipes' templates and the user's question are normalised the same
way before indexing and search, as Talk2PowerSystem does with its templates:
the project's layer and field names, numbers with their units, quoted values,
CRS codes and capitalised place names become placeholders, so "schools within
500 m of the rivers" and "<point layer> within <distance> of <line layer>"
share their words. A few synonyms are folded to one word (closest -> nearest).
No network and no model: an in-memory FTS5 table (Porter stemmer), searched
with an OR of the question's words and ranked by bm25. Qt-free.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from geogpt_qgis.core.recipes import Recipe

# Placeholder kinds, each one FTS token (they must survive the tokenizer and the stemmer unchanged).
TOKENS = {
    "layer": "zzlayer",
    "field": "zzfield",
    "distance": "zzdistance",
    "area": "zzarea",
    "number": "zznumber",
    "value": "zzvalue",
    "place": "zzplace",
    "crs": "zzcrs",
}
_PLACEHOLDER = re.compile(r"<([a-z][a-z0-9 ]*)>")
_DISTANCE_UNITS = r"(?:m|metres?|meters?|km|kilometres?|kilometers?|mi|miles?|ft|feet|foot|yards?|yd)"
_AREA_UNITS = r"(?:m2|m²|km2|km²|ha|hectares?|acres?|sq\.? ?(?:m|km|metres?|meters?|kilometres?|kilometers?))"
_NUMBER = r"\d+(?:[.,]\d+)?"
AREA_PATTERN = re.compile(rf"\b{_NUMBER}\s*{_AREA_UNITS}(?![a-z])", re.I)
DISTANCE_PATTERN = re.compile(rf"\b{_NUMBER}\s*{_DISTANCE_UNITS}(?![a-z])", re.I)
NUMBER_PATTERN = re.compile(rf"\b{_NUMBER}\b")
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bepsg\s*[: ]?\s*\d{4,6}\b|\b(?:wgs ?84|utm(?: zone)?(?: \d+)?|etrs ?89)\b", re.I), " <crs> "),
    (AREA_PATTERN, " <area> "),
    (DISTANCE_PATTERN, " <distance> "),
    (re.compile(r"'[^']{1,60}'|\"[^\"]{1,60}\"|«[^»]{1,60}»"), " <value> "),
    (NUMBER_PATTERN, " <number> "),
]
_SHAPES = frozenset({"point", "line", "polygon"})
# Words folded to one spelling, so paraphrases meet the templates' words.
SYNONYMS = {
    "closest": "nearest",
    "nearby": "near",
    "proximity": "near",
    "neighbor": "neighbour",
    "neighbors": "neighbours",
    "distant": "far",
    "away": "far",
    "farther": "far",
    "further": "far",
    "inside": "in",
    "within": "within",
    "located": "in",
    "lie": "in",
    "lies": "in",
    "contained": "in",
    "amount": "number",
    "tally": "count",
    "sum": "total",
    "totals": "total",
    "average": "mean",
    "avg": "mean",
    "column": "field",
    "columns": "field",
    "attribute": "field",
    "attributes": "field",
    "property": "field",
    "properties": "field",
    "projection": "crs",
    "coordinate": "crs",
    "reference": "crs",
    "srid": "crs",
    "epsg": "crs",
    "reproject": "reproject",
    "transform": "reproject",
    "convert": "reproject",
    "biggest": "largest",
    "highest": "largest",
    "maximum": "largest",
    "max": "largest",
    "most": "largest",
    "lowest": "smallest",
    "minimum": "smallest",
    "least": "smallest",
    "pick": "select",
    "highlight": "select",
    "radius": "buffer",
    "catchment": "buffer",
    "surrounding": "around",
    "districts": "zone",
    "district": "zone",
    "zones": "zone",
    "each": "per",
    "every": "per",
    "neighbourhood": "zone",
    "neighbourhoods": "zone",
    "region": "zone",
    "regions": "zone",
    "area": "area",
    "postgis": "sql",
    "postgres": "sql",
    "postgresql": "sql",
    "database": "sql",
    "db": "sql",
    "wfs": "ogc",
    "api": "ogc",
    "server": "ogc",
    "service": "ogc",
}
STOPWORDS = frozenset(
    "a an the of to for and or is are be it its this that these those does did i me my we our your "
    "please can could would will shall should there their them what which who whom whose show give tell "
    "find get list me all any with by on from as at into onto up down out about some one".split()
)


@dataclass(frozen=True)
class Vocabulary:
    """Names in the user's project that become placeholders: layers (tables, collections), fields, places.

    ``layers`` maps a folded name to its shape (point, line, polygon or ""), so "schools" becomes
    ``<point layer>`` as in the templates.
    """

    layers: dict[str, str] = field(default_factory=dict)
    fields: frozenset[str] = frozenset()
    places: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, layers: dict[str, str] | Iterable[str] = (), fields: Iterable[str] = (), places: Iterable[str] = ()
    ) -> Vocabulary:
        shapes = dict(layers) if isinstance(layers, dict) else dict.fromkeys(layers, "")
        folded = {form: shape for name, shape in shapes.items() for form in name_forms(name, singular=True)}
        plural = {f"{form}s" for form in _all_forms(fields) if form.isalpha()}
        return cls(folded, frozenset(_all_forms(fields) | plural), frozenset(_all_forms(places)))


def _all_forms(names: Iterable[str]) -> set[str]:
    return {form for name in names for form in name_forms(name)}


def name_forms(name: str, singular: bool = False) -> set[str]:
    """A name lower-cased, without its schema, with spaces for underscores (and "school" for "schools")."""
    text = name.strip().lower()
    if not text:
        return set()
    found: set[str] = set()
    for form in {text, text.split(".")[-1]}:
        found.update({form, form.replace("_", " ")})
        if singular and form.endswith("ies"):
            found.add(form[:-3] + "y")
        elif singular and form.endswith("s") and not form.endswith("ss"):
            found.add(form[:-1])
    return found


def normalise(text: str, vocabulary: Vocabulary = Vocabulary()) -> str:
    """``text`` with names, numbers, values and places as placeholders, folded to the words the index knows."""
    out = text
    for pattern, placeholder in _RULES:
        out = pattern.sub(placeholder, out)
    out = _names_to_placeholders(out, vocabulary)
    out = _capitalised_places(out)
    words = []
    for word in re.findall(r"<[a-z][a-z0-9 ]*>|[a-zA-Z0-9_]+", out):
        if word.startswith("<"):
            words.append(_token(word[1:-1]))
            continue
        lower = word.lower()
        lower = SYNONYMS.get(lower, lower)
        if lower not in STOPWORDS and len(lower) > 1:
            words.append(lower)
    return " ".join(words)


def _token(placeholder: str) -> str:
    """The one FTS token of a placeholder: ``<point layer>`` -> zzlayer point, ``<other number>`` -> zznumber."""
    words = placeholder.split()
    kind = "layer" if words[-1] in ("layer", "table", "collection", "task") else words[-1]
    token = TOKENS.get(kind, TOKENS["value"])
    shape = [w for w in words[:-1] if w in ("point", "line", "polygon")]
    return " ".join([token, *shape])


def _names_to_placeholders(text: str, vocabulary: Vocabulary) -> str:
    named: list[tuple[str, str]] = [(name, "<place>") for name in vocabulary.places]
    named += [(name, f"<{shape} layer>" if shape else "<layer>") for name, shape in vocabulary.layers.items()]
    named += [(name, "<field>") for name in vocabulary.fields]
    for kind in ("<place>", "layer>", "<field>"):  # places first, then layers, then fields; longest names first
        for name, placeholder in sorted(named, key=lambda item: -len(item[0])):
            if placeholder.endswith(kind) and len(name) >= 2:
                text = re.sub(rf"(?<![\w<]){re.escape(name)}(?![\w>])", placeholder, text, flags=re.I)
    return text


_CAPITALISED = re.compile(r"(?<=[a-z0-9,;:] )([A-ZÆØÅÄÖÜ][\w'-]+(?: [A-ZÆØÅÄÖÜ][\w'-]+)*)")


def _capitalised_places(text: str) -> str:
    """Capitalised words inside a sentence (not its first word) are names: ``the Nordby district`` -> <place>."""
    return _CAPITALISED.sub(lambda m: "<place>" if m.group(1).upper() != m.group(1) else m.group(1), text)


@dataclass
class RecipeIndex:
    """The recipes in an in-memory FTS5 table; ``search`` returns the best few for a question.

    The first ``own`` recipes are the user's (kept from their own runs).
    """

    recipes: Sequence[Recipe]
    own: int = 0
    _db: sqlite3.Connection = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE recipe USING fts5(question, other, tokenize='porter unicode61')")
        rows = [
            (i, normalise(r.question), " ".join(normalise(a) for a in (*r.alternatives, r.family, r.note)))
            for i, r in enumerate(self.recipes)
        ]
        self._db.executemany("INSERT INTO recipe (rowid, question, other) VALUES (?, ?, ?)", rows)
        # Each wording's words, shapes left out: a question worded exactly as one of them finds that recipe first.
        self._wordings = {
            _unshaped(normalise(wording)): i
            for i, r in reversed(list(enumerate(self.recipes)))
            for wording in (r.question, *r.alternatives)
        }

    def search(self, question: str, vocabulary: Vocabulary = Vocabulary(), limit: int = 3) -> list[Recipe]:
        """The recipes that match ``question`` best (bm25 over both columns), at most ``limit``."""
        words = sorted(set(normalise(question, vocabulary).split()))
        if not words:
            return []
        query = " OR ".join(f'"{w}"' for w in words)
        with self._lock:
            found = self._db.execute(
                "SELECT rowid FROM recipe WHERE recipe MATCH ? ORDER BY bm25(recipe, 2.0, 1.0) LIMIT ?",
                (query, limit),
            ).fetchall()
        ranked = [rowid for (rowid,) in found]
        exact = self._wordings.get(_unshaped(" ".join(words)))
        if exact is not None:
            # Ahead of every recipe bm25 ranked higher, except the user's own: theirs stay first.
            position = ranked.index(exact) if exact in ranked else len(ranked)
            ahead = [i for i in ranked[:position] if i < self.own]
            ranked = [*ahead, exact, *(i for i in ranked if i != exact and i not in ahead)][:limit]
        return [self.recipes[rowid] for rowid in ranked]


def _unshaped(normalised: str) -> frozenset[str]:
    """The words of a normalised text as a set, without the shapes of layer placeholders."""
    return frozenset(normalised.split()) - _SHAPES
