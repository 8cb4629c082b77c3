"""Rank processing algorithms for a task described in an analyst's words, offline.

SQLite FTS5 (as the recipe search, ``core.recipe_search``) ranks by ``bm25()``
over each algorithm's name, id, tags, group, short description and help text
(each field weighted), with light stemming and a small vocabulary that maps how
analysts say things ("nearest neighbour", "spatial join", "within") onto the
words QGIS uses.  No model, no network: ranking ~650 algorithms takes about a
millisecond (``bench.algorithm_search``).  Qt-free, so it is tested on plain data."""

from __future__ import annotations

import functools
import math
import re
import sqlite3
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from geogpt_qgis.core.sqlite_text import sqlite_query

_WORD = re.compile(r"[a-z0-9]+")

# Field weights: a word in the name says much more than one in the help text.
FIELD_WEIGHTS = {"name": 3.0, "id": 2.5, "tags": 2.0, "grp": 0.6, "short": 1.2, "help": 0.35}

# Providers analysts expect first when several do the same job.
PROVIDER_PRIOR = {"native": 1.0, "qgis": 0.9, "gdal": 0.55, "grass7": 0.35, "grass": 0.35, "saga": 0.3}

STOPWORDS = frozenset(
    "a an the of to in on for by and or with from into each per all my me i want how do does can is are be "
    "that this these those it its as at which what where layer layers feature features using use make get "
    "find show give some".split()
)

# Analysts' words -> words QGIS uses (after stemming).  Each list is added to the query, at a lower weight.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "nearest": ("distance", "hub", "neighbor", "closest"),
    "closest": ("nearest", "distance", "hub"),
    "neighbour": ("neighbor", "nearest"),
    "neighbor": ("nearest",),
    "spatial": ("location",),
    "within": ("location", "distance", "extract"),
    "inside": ("location", "within", "contain"),
    "near": ("distance", "location", "within"),
    "around": ("buffer", "distance"),
    "merge": ("dissolve", "union", "combine"),
    "combine": ("merge", "union"),
    "cut": ("clip", "split", "difference"),
    "erase": ("difference",),
    "subtract": ("difference",),
    "remove": ("delete", "difference", "drop"),
    "filter": ("extract", "select", "expression"),
    "select": ("extract", "selection"),
    "subset": ("extract", "select"),
    "attribute": ("field", "attribute"),
    "column": ("field", "attribute"),
    "compute": ("calculate", "calculator"),
    "calculate": ("calculator", "field", "expression"),
    "area": ("geometry", "attribute", "calculate"),
    "length": ("geometry", "attribute", "calculate"),
    "perimeter": ("geometry", "attribute"),
    "reproject": ("crs", "transform", "projection"),
    "project": ("reproject", "crs"),
    "projection": ("crs", "reproject"),
    "crs": ("reproject", "projection"),
    "transform": ("reproject",),
    "join": ("attribute", "location", "field"),
    "count": ("number", "point"),
    "centroid": ("centroid", "center", "centre"),
    "center": ("centroid",),
    "centre": ("centroid",),
    "middle": ("centroid",),
    "density": ("heatmap", "kernel"),
    "hotspot": ("heatmap", "kernel", "density"),
    "heat": ("heatmap",),
    "thiessen": ("voronoi",),
    "voronoi": ("voronoi", "thiessen"),
    "hull": ("convex", "concave"),
    "envelope": ("bounding", "box", "extent"),
    "bbox": ("bounding", "box"),
    "outline": ("boundary",),
    "edge": ("boundary",),
    "fishnet": ("grid",),
    "hexagon": ("grid", "hexagon"),
    "tessellation": ("grid",),
    "random": ("random",),
    "sample": ("random", "sampling"),
    "statistics": ("statistic", "stats", "summary"),
    "summary": ("statistic",),
    "summarize": ("statistic", "aggregate", "category"),
    "summarise": ("statistic", "aggregate", "category"),
    "overlay": ("intersection", "union", "overlay"),
    "valid": ("fix", "validity", "repair"),
    "aggregate": ("aggregate", "statistic", "dissolve"),
    "group": ("category", "aggregate"),
    "category": ("categories",),
    "duplicate": ("duplicate",),
    "fix": ("repair", "valid", "fix"),
    "repair": ("fix",),
    "invalid": ("validity", "fix"),
    "simplify": ("simplify", "generalize"),
    "generalize": ("simplify",),
    "smooth": ("smooth",),
    "explode": ("explode", "singlepart", "multipart"),
    "singlepart": ("multipart",),
    "split": ("split",),
    "points": ("point",),
    "vertex": ("vertices", "node"),
    "vertices": ("vertex", "node"),
    "node": ("vertex", "vertices"),
    "along": ("along", "interpolate"),
    "interval": ("along", "distance"),
    "elevation": ("dem", "raster", "terrain"),
    "dem": ("elevation", "terrain", "raster"),
    "terrain": ("slope", "aspect", "hillshade", "dem"),
    "contour": ("contour", "isoline"),
    "rasterize": ("rasterize", "vector"),
    "vectorize": ("polygonize",),
    "polygonize": ("polygonize",),
    "zonal": ("zonal", "statistic"),
    "reclassify": ("reclassify", "table"),
    "route": ("shortest", "path", "network"),
    "shortest": ("path", "network"),
    "network": ("shortest", "path", "service"),
    "isochrone": ("service", "area", "network"),
    "catchment": ("service", "area"),
    "overlap": ("overlap", "intersection"),
    "intersect": ("intersection", "location"),
    "touching": ("touch", "location"),
    "table": ("field", "attribute"),
    "lookup": ("join", "field"),
    "xy": ("point", "table", "coordinate"),
    "coordinates": ("coordinate", "point", "table"),
    "csv": ("table", "point", "delimited"),
    "geocode": ("point", "table"),
    "distance": ("distance",),
    "matrix": ("matrix", "distance"),
    "line": ("line",),
    "lines": ("line",),
    "polygon": ("polygon",),
    "polygons": ("polygon",),
    "intersection": ("intersection", "intersect"),
    "many": ("count", "number"),
    "number": ("count",),
    "attach": ("join", "attribute"),
    "keep": ("extract", "select"),
    "lie": ("location", "within"),
    "new": ("add", "field"),
    "convert": ("polygonize", "translate", "to"),
    # Everyday nouns hint at the geometry the analyst has in mind.
    "district": ("polygon",),
    "region": ("polygon",),
    "zone": ("polygon", "buffer"),
    "neighbourhood": ("polygon",),
    "parcel": ("polygon",),
    "county": ("polygon",),
    "building": ("polygon",),
    "school": ("point",),
    "hospital": ("point",),
    "shop": ("point",),
    "tree": ("point",),
    "station": ("point",),
    "address": ("point",),
    "road": ("line",),
    "street": ("line",),
    "river": ("line",),
}

# Multi-word phrases, on stemmed tokens, that name an algorithm's job.
PHRASES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("how", "many"): ("count",),
    ("more", "than"): ("attribute", "expression", "extract"),
    ("less", "than"): ("attribute", "expression", "extract"),
    ("remove", "from"): ("difference",),
    ("raster", "to", "polygon"): ("polygonize",),
    ("polygon", "to", "raster"): ("rasterize",),
    ("spatial", "join"): ("join", "attribute", "location"),
    ("nearest", "neighbour"): ("nearest", "neighbour"),
}


@functools.lru_cache(maxsize=16384)  # the metadata's ~29,000 words are ~4,000 distinct ones
def stem(word: str) -> str:
    """A light English stemmer: buffers/buffered/buffering -> buffer, computed/compute -> comput."""
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Lower-cased, stemmed words of ``text``; ids split on ':' and '_'."""
    return [stem(w) for w in _WORD.findall(text.lower().replace("_", " "))]


@dataclass(frozen=True)
class AlgorithmEntry:
    """What the index knows about one algorithm."""

    id: str
    name: str
    group: str = ""
    tags: str = ""
    short: str = ""
    help: str = ""
    provider: str = ""

    @property
    def summary(self) -> str:
        """One line: the short description, else the help's first sentence."""
        text = self.short or self.help
        text = re.sub(r"<[^>]+>", " ", text)
        text = " ".join(text.split())
        first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
        return first[:160]


@dataclass(frozen=True)
class Match:
    entry: AlgorithmEntry
    score: float


class AlgorithmIndex:
    """Algorithm metadata in in-memory SQLite FTS5 tables, one per field, ranked with FTS5's ``bm25()``.

    Each field (``COLUMNS``) is its own FTS5 table holding the words ``tokens`` makes
    (stemmed here, so the query's synonyms meet them), so each field has its own length
    normalisation: a long help text does not dilute a hit in the name.  A document's
    score is the sum, over the query's terms and the fields, of the term's weight (its
    own word 1, a synonym less), the field's weight (``FIELD_WEIGHTS``) and bm25 of the
    term in that field.  FTS5 scores a term's rarity within the one field; it is rescaled
    to its rarity over every field (a word such as "polygon" is rare in names but common
    overall, and ranking it as rare cost 2 of the 58 test queries).  Coverage of the
    query's own words, a whole-phrase hit in the name and the provider's prior then scale
    the score.  Made once per registry state (``catalog``); ``search`` runs on any thread.
    """

    def __init__(self, entries: Iterable[AlgorithmEntry]) -> None:
        self.entries = list(entries)
        self._lock = threading.Lock()
        self._built = False
        self._names: list[str] = []
        self._words: list[frozenset[str]] = []
        self._factors: dict[str, list[tuple[str, float]]] = defaultdict(list)
        self._db = sqlite3.connect(":memory:", check_same_thread=False)

    def build(self) -> None:
        """Fill the tables (once; ~0.1 s).  ``search`` calls it: the index is made on the main thread, where
        the registry is read, and filled on the first search's thread (the agent's worker), not the main one.
        """
        with self._lock:
            if not self._built:
                self._fill()
                self._built = True

    def _fill(self) -> None:
        self._names = [" ".join(tokens(entry.name)) for entry in self.entries]
        texts: dict[str, list[tuple[int, str]]] = {table: [] for table in COLUMNS}
        in_field: dict[str, Counter[str]] = {table: Counter() for table in COLUMNS}
        anywhere: Counter[str] = Counter()
        for rowid, entry in enumerate(self.entries):
            fields = _fields(entry)
            words = frozenset(word for text in fields for word in text.split())
            self._words.append(words)
            anywhere.update(words)
            for table, text in zip(COLUMNS, fields, strict=True):
                texts[table].append((rowid, text))
                in_field[table].update(set(text.split()))
        for table in COLUMNS:  # table names are the constants in COLUMNS
            self._db.execute(sqlite_query("CREATE VIRTUAL TABLE {} USING fts5(text, tokenize='unicode61')", table))
            self._db.executemany(sqlite_query("INSERT INTO {} (rowid, text) VALUES (?, ?)", table), texts[table])
        # term -> (field, the field's weight x the term's rarity overall / its rarity in the field as FTS5 counts it)
        count = len(self.entries)
        for table, frequencies in in_field.items():
            for term, frequency in frequencies.items():
                factor = FIELD_WEIGHTS[table] * _idf(anywhere[term], count) / _fts5_idf(frequency, count)
                self._factors[term].append((table, factor))

    def _query_terms(self, query: str) -> dict[str, float]:
        """The query's own stemmed words (weight 1) plus vocabulary expansions (lower weight)."""
        all_words = _WORD.findall(query.lower())
        stems = [stem(w) for w in all_words]
        terms: dict[str, float] = {}

        def add(term: str, weight: float) -> None:
            term = stem(term)
            terms[term] = max(terms.get(term, 0.0), weight)

        for word, stemmed in zip(all_words, stems, strict=True):
            if word in STOPWORDS:
                continue
            add(word, 1.0)
            weight = 0.2 if stemmed in _GEOMETRY_HINTS else 0.45
            for synonym in _SYNONYMS_BY_STEM.get(stemmed, ()):
                add(synonym, weight)
        for phrase, expansion in PHRASES.items():
            size = len(phrase)
            if any(tuple(stems[i : i + size]) == phrase for i in range(len(stems) - size + 1)):
                for term in expansion:
                    add(term, 0.9)
        return terms

    def search(self, query: str, limit: int = 5) -> list[Match]:
        """The best ``limit`` algorithms for ``query``, best first (empty if nothing matches)."""
        terms = self._query_terms(query)
        if not terms:
            return []
        self.build()
        selects: list[str] = []
        values: list[float | str] = []
        for term, weight in terms.items():
            for table, factor in self._factors.get(term, ()):
                selects.append(_SELECT[table])
                values += [weight * factor, f'"{term}"']  # terms are [a-z0-9]+: a quoted one is just the word
        scores: dict[int, float] = defaultdict(float)
        with self._lock:
            for start in range(0, len(selects), _BATCH):
                sql = " UNION ALL ".join(selects[start : start + _BATCH])
                for rowid, score in self._db.execute(sql, values[2 * start : 2 * (start + _BATCH)]):
                    scores[rowid] += score
        own = {term for term, weight in terms.items() if weight >= 1.0}
        phrase = " ".join(tokens(query))
        scored: list[Match] = []
        for rowid, score in scores.items():
            if score <= 0:
                continue
            entry = self.entries[rowid]
            if phrase and phrase in self._names[rowid]:  # the whole query in the name
                score *= 1.6
            if own:
                score *= 0.6 + 0.4 * len(own & self._words[rowid]) / len(own)
            score *= PROVIDER_PRIOR.get(entry.provider, 0.5)
            scored.append(Match(entry, score))
        scored.sort(key=lambda m: (-m.score, m.entry.id))
        return scored[:limit]


COLUMNS = ("name", "id", "tags", "grp", "short", "help")  # one FTS5 table each ("group" is an SQL keyword)
# One term in one field: FTS5's bm25 (lower is better) times the factor given first.
_SELECT = {
    table: sqlite_query("SELECT rowid, ? * -bm25({}) FROM {} WHERE {} MATCH ?", table, table, table)
    for table in COLUMNS
}
_BATCH = 100  # SELECTs per statement (SQLite allows at most 500 in one compound SELECT)


def _idf(frequency: int, count: int) -> float:
    """A term's rarity over all fields (BM25's, kept positive)."""
    return math.log(1 + (count - frequency + 0.5) / (frequency + 0.5))


def _fts5_idf(frequency: int, count: int) -> float:
    """The rarity FTS5's ``bm25()`` gives a term found in ``frequency`` of ``count`` rows (its floor included)."""
    return max(math.log((count - frequency + 0.5) / (frequency + 0.5)), 1e-6)


def _fields(entry: AlgorithmEntry) -> tuple[str, ...]:
    """The entry's columns, in ``COLUMNS`` order, as the space-separated words ``tokens`` makes."""
    return tuple(
        " ".join(words)
        for words in (
            tokens(entry.name),
            tokens(entry.id.split(":", 1)[-1]) + _split_id(entry.id),
            tokens(entry.tags),
            tokens(entry.group),
            tokens(entry.short),
            tokens(re.sub(r"<[^>]+>", " ", entry.help)),
        )
    )


# Everyday nouns only hint at a geometry type: a weak signal.
_GEOMETRY_HINTS = frozenset(
    stem(w)
    for w in "district region zone neighbourhood parcel county building school hospital shop tree station "
    "address road street river".split()
)
_SYNONYMS_BY_STEM: dict[str, tuple[str, ...]] = {}
for _word, _expansion in SYNONYMS.items():
    _SYNONYMS_BY_STEM[stem(_word)] = _SYNONYMS_BY_STEM.get(stem(_word), ()) + _expansion
PHRASES = {tuple(stem(w) for w in phrase): expansion for phrase, expansion in PHRASES.items()}


def _split_id(algorithm_id: str) -> list[str]:
    """``native:joinattributesbylocation`` -> the id's own words when glued together (join, attribute, location)."""
    name = algorithm_id.split(":", 1)[-1].lower()
    found = [w for w in _GLUED_WORDS if w in name]
    return [stem(w) for w in found]


# Words QGIS glues together in algorithm ids (``extractbylocation``); found by substring.
_GLUED_WORDS = (
    "buffer",
    "clip",
    "dissolve",
    "intersection",
    "union",
    "difference",
    "extract",
    "location",
    "attribute",
    "join",
    "count",
    "point",
    "polygon",
    "line",
    "centroid",
    "reproject",
    "field",
    "calculator",
    "distance",
    "nearest",
    "hub",
    "random",
    "grid",
    "voronoi",
    "convex",
    "hull",
    "merge",
    "split",
    "simplify",
    "smooth",
    "statistic",
    "zonal",
    "heatmap",
    "density",
    "expression",
    "select",
    "explode",
    "vertices",
    "raster",
    "vector",
    "polygonize",
    "rasterize",
    "slope",
    "aspect",
    "hillshade",
    "contour",
    "shortest",
    "path",
    "service",
    "area",
    "sum",
    "length",
    "bounding",
    "geometry",
    "duplicate",
    "fix",
    "within",
    "multipart",
    "singlepart",
    "interpolate",
    "along",
    "overlap",
    "category",
    "aggregate",
    "matrix",
    "table",
    "translate",
)


def format_matches(matches: Sequence[Match]) -> str:
    """``native:buffer — Buffer: Computes a buffer area ...`` one per line."""
    return "\n".join(f"- {m.entry.id} — {m.entry.name}: {m.entry.summary}" for m in matches)
