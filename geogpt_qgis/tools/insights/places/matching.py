"""Name matching for places: accent-insensitive, typo-tolerant, and honest about ambiguity.  Qt-free.

People write "Ostervang" for "Østervang", "Nordby schol" for "Nordby School"
and "the Centre district" for the district called "Centre".  A name is
normalised (case, accents, ``ø``/``æ``/``ß``, punctuation) and compared three
ways: exact, trigram similarity computed exactly as PostgreSQL's ``pg_trgm``
does (so places found in PostGIS and in project layers rank on one scale), and
word containment ("Søndre" in "Søndre Park Primary").  A word of the query
that names a layer ("school" for ``schools``) narrows the search to it.

Matching never picks silently among equals: when two places score alike (the
district and the park both called "Søndre Park") the caller gets both as
candidates, to ask or to disambiguate with ``layer:name``.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Letters that Unicode does not decompose into a base letter plus accent.
_SPECIAL = str.maketrans(
    {
        "ø": "o",
        "Ø": "o",
        "æ": "ae",
        "Æ": "ae",
        "œ": "oe",
        "Œ": "oe",
        "ß": "ss",
        "đ": "d",
        "Đ": "d",
        "ð": "d",
        "Ð": "d",
        "þ": "th",
        "Þ": "th",
        "ł": "l",
        "Ł": "l",
        "ı": "i",
        "'": "",
        "’": "",
    }
)
# Field names that hold a feature's name, in PostgreSQL (``~*``) and Python regular expression syntax alike.
NAME_FIELD_PATTERN = (
    r"^(name|navn|nom|nombre|nome|naam|namn|nimi|title|titel|label|bezeichnung|stedsnavn)$|(^|_)(name|navn)(_|$)"
)
TYPE_FIELD_PATTERN = r"^(type|kind|class|category|fclass|amenity|typ|art|kategori|klasse|subtype)$"
STOP_WORDS = frozenset({"the", "of", "in", "at", "near", "around", "a", "an"})

MIN_SCORE = 0.55  # below this a name is not a match, only a suggestion
# The most of a name (asked for, or read from the data) the fuzzy comparisons look at: difflib's cost grows
# with the product of the two lengths, so an unbounded text could hold a run for minutes.
MATCH_CHARS = 200
MARGIN = 0.08  # candidates this close to the best are too close to call
EXACT = 1.0


def normalize(text: object) -> str:
    """``"Søndre  Park!"`` -> ``"sondre park"``: case, accents and punctuation removed."""
    decomposed = unicodedata.normalize("NFKD", str(text).translate(_SPECIAL))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return " ".join(re.findall(r"[^\W_]+", plain))


def trigrams(text: str) -> set[str]:
    """The trigrams ``pg_trgm`` extracts: each word padded with two spaces before and one after."""
    grams: set[str] = set()
    for word in text.split():
        padded = f"  {word} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return grams


def trigram_similarity(a: str, b: str) -> float:
    """``pg_trgm``'s ``similarity()``: shared trigrams over all trigrams of both (normalised) strings."""
    ta, tb = trigrams(a), trigrams(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def _word_matches(word: str, candidates: Sequence[str]) -> bool:
    for other in candidates:
        if word == other:
            return True
        if len(word) >= 4 and (other.startswith(word) or difflib.SequenceMatcher(None, word, other).ratio() >= 0.8):
            return True
    return False


def score(query: str, name: str) -> float:
    """How well the normalised ``name`` matches the normalised ``query``, 0 to 1 (1 only when equal)."""
    if not query or not name:
        return 0.0
    if query == name:
        return EXACT
    query, name = query[:MATCH_CHARS], name[:MATCH_CHARS]
    best = max(difflib.SequenceMatcher(None, query, name).ratio(), trigram_similarity(query, name))
    words, name_words = query.split(), name.split()
    if all(_word_matches(word, name_words) for word in words):
        # Every word of the query is in the name: "sondre" in "sondre park primary".
        best = max(best, 0.7 + 0.25 * min(len(query) / len(name), 1.0))
    return min(best, 0.99)


def layer_words(source: str) -> set[str]:
    """Words of a layer or table name and their singulars: ``public.schools`` -> {schools, school}."""
    words = set(normalize(source.split(".")[-1].replace("_", " ")).split())
    singulars = {w[:-1] for w in words if w.endswith("s") and len(w) > 3}
    singulars |= {w[:-2] for w in words if w.endswith("es") and len(w) > 4}
    return words | singulars


@dataclass(frozen=True)
class PlaceQuery:
    """One name the model asked for: the text as given, the normalised name, an optional source filter."""

    text: str
    name: str
    source: str = ""  # normalised layer/table the user narrowed to with "layer:name"

    def hint_remainder(self, source: str) -> str | None:
        """The name without the words naming ``source`` ("nordby school" -> "nordby" for ``schools``)."""
        words = layer_words(source)
        kept = [w for w in self.name.split() if w not in words]
        if len(kept) == len(self.name.split()) or not kept:
            return None
        return " ".join(kept)


def parse_query(text: str, sources: Iterable[str]) -> PlaceQuery:
    """Split ``"parks:Søndre Park"`` into a source filter and a name; drop filler words ("the Centre district")."""
    raw = str(text).strip()
    source = ""
    if ":" in raw:
        prefix, rest = raw.split(":", 1)
        wanted = normalize(prefix)
        known = {normalize(s): s for s in sources} | {normalize(s.split(".")[-1]): s for s in sources}
        if wanted in known and rest.strip():
            source, raw = normalize(known[wanted].split(".")[-1]), rest.strip()
    words = [w for w in normalize(raw).split() if w not in STOP_WORDS] or normalize(raw).split()
    return PlaceQuery(str(text), " ".join(words), source)


def source_key(source: str) -> str:
    """What ``layer:name`` compares against: the normalised layer name or table name without schema."""
    return normalize(source.split(".")[-1])


def query_score(query: PlaceQuery, source: str, name: str) -> float:
    """The score of a name in ``source`` for ``query``, counting the layer words of the query as a hint."""
    normalized = normalize(name)
    best = score(query.name, normalized)
    remainder = query.hint_remainder(source)
    if remainder is not None:
        best = max(best, score(remainder, normalized))
    return best


@dataclass
class Candidate:
    """All features called ``name`` in one layer or table: one place as the user means it."""

    name: str
    source: str  # layer name, or "schema.table" for a database table
    score: float
    kind: str = "layer"  # "layer" or "table"
    connection: str = ""  # for tables
    count: int = 1  # features with this name
    type_value: str = ""  # the most common value of a type-like field, if any
    source_size: int = 0  # features in the whole layer (prefers originals over derived copies)
    location: tuple[float, float] | None = None
    geometry_label: str = ""
    figure: Any = None  # its area or length (core.figures.Figure), for the artifact
    also_in: list[str] = field(default_factory=list)
    ref: Any = None  # whatever the searcher needs to fetch the features again (opaque here)

    @property
    def label(self) -> str:
        where = f"table {self.source} in {self.connection}" if self.kind == "table" else f"layer {self.source}"
        return f"{self.name!r} ({where})"


@dataclass
class PlaceOutcome:
    """What one query came to: a place, a set of look-alikes to choose from, or nothing."""

    query: PlaceQuery
    chosen: Candidate | None = None
    candidates: list[Candidate] = field(default_factory=list)  # when ambiguous, best first
    closest: list[Candidate] = field(default_factory=list)  # when nothing matched

    @property
    def ambiguous(self) -> bool:
        return self.chosen is None and bool(self.candidates)


def shortlist(candidates: Iterable[Candidate], limit: int = 8) -> list[Candidate]:
    """The best candidates of one query, best first (ties: bigger source, then name)."""
    ranked = sorted(candidates, key=lambda c: (-c.score, -c.source_size, c.source, c.name))
    good = [c for c in ranked if c.score >= MIN_SCORE]
    return (good or ranked)[:limit]


def merge_duplicates(candidates: list[Candidate], same_place: float) -> list[Candidate]:
    """One candidate per real place: a name at the same spot in two layers (a copy, a database twin) counts once.

    The kept one is a project layer before a table, then the biggest source (the
    original rather than a processing result made from it); the others are
    named in ``also_in``.
    """
    kept: list[Candidate] = []
    order = sorted(candidates, key=lambda c: (c.kind != "layer", -c.source_size))
    for candidate in order:
        twin = next((k for k in kept if _same_place(k, candidate, same_place)), None)
        if twin is None:
            kept.append(candidate)
        else:
            twin.also_in.append(candidate.label)
            twin.score = max(twin.score, candidate.score)
    return sorted(kept, key=lambda c: (-c.score, -c.source_size, c.source, c.name))


def _same_place(a: Candidate, b: Candidate, tolerance: float) -> bool:
    if normalize(a.name) != normalize(b.name) or a.location is None or b.location is None:
        return False
    return abs(a.location[0] - b.location[0]) <= tolerance and abs(a.location[1] - b.location[1]) <= tolerance


def decide(query: PlaceQuery, ranked: list[Candidate]) -> PlaceOutcome:
    """Pick the place ``query`` means, or say it is ambiguous, or that nothing matched (with the closest names).

    An exact name beats near ones; near ones within ``MARGIN`` of each other
    are ambiguous.
    """
    if not ranked or ranked[0].score < MIN_SCORE:
        return PlaceOutcome(query, closest=ranked[:3])
    top = ranked[0]
    if top.score >= EXACT:
        rivals = [c for c in ranked[1:] if c.score >= EXACT]
    else:
        rivals = [c for c in ranked[1:] if c.score >= max(MIN_SCORE, top.score - MARGIN)]
    if rivals:
        return PlaceOutcome(query, candidates=[top, *rivals][:5])
    return PlaceOutcome(query, chosen=top)
