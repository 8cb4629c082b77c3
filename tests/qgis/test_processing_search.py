"""Search quality over the algorithms installed in this QGIS, on queries in analysts' words."""

from __future__ import annotations

import math
import threading

import pytest

from geogpt_qgis.tools.processing.catalog import current_index, usable_algorithms
from geogpt_qgis.tools.processing.search import AlgorithmEntry, AlgorithmIndex, stem, tokens
from tests.support.search_queries import SEARCH_CASES


def test_at_least_90_percent_of_analyst_queries_find_the_expected_algorithm_in_the_top_5():
    assert len(SEARCH_CASES) >= 40
    index = current_index()
    installed = {entry.id for entry in index.entries}
    for _, expected in SEARCH_CASES:
        assert any(e in installed for e in expected), expected
    misses = []
    for query, expected in SEARCH_CASES:
        top = [m.entry.id for m in index.search(query, 5)]
        if not any(e in top for e in expected):
            misses.append((query, top))
    hit_rate = 1 - len(misses) / len(SEARCH_CASES)
    assert hit_rate >= 0.9, misses


def test_the_index_covers_every_usable_algorithm_and_skips_deprecated_ones():
    index = current_index()
    ids = {entry.id for entry in index.entries}
    assert ids == {a.id() for a in usable_algorithms()}
    assert "native:buffer" in ids
    assert "qgis:variabledistancebuffer" not in ids  # deprecated in QGIS 3.22
    assert len(ids) > 300


def test_stemming_and_vocabulary():
    assert stem("buffers") == stem("buffered") == stem("buffering") == "buffer"
    assert stem("polygons") == "polygon"
    assert tokens("Join attributes, by location") == ["join", "attribut", "by", "location"]
    toy = AlgorithmIndex(
        [
            AlgorithmEntry("native:countpointsinpolygon", "Count points in polygon", provider="native"),
            AlgorithmEntry("native:buffer", "Buffer", provider="native"),
            AlgorithmEntry("gdal:buffervectors", "Buffer vectors", provider="gdal"),
        ]
    )
    assert [m.entry.id for m in toy.search("how many trees per district", 1)] == ["native:countpointsinpolygon"]
    # Same words: QGIS's own implementation ranks above GDAL's.
    assert [m.entry.id for m in toy.search("buffer", 2)] == ["native:buffer", "gdal:buffervectors"]
    assert toy.search("the of and", 5) == []


def test_fts5_query_syntax_in_the_words_is_searched_as_words_from_any_thread():
    toy = AlgorithmIndex(
        [
            AlgorithmEntry("native:buffer", "Buffer", provider="native"),
            AlgorithmEntry("native:selectwithindistance", "Select within distance", provider="native"),
        ]
    )
    found: list[list[str]] = []
    worker = threading.Thread(
        target=lambda: found.append([m.entry.id for m in toy.search('NEAR(buffer) AND "not" OR * ^ id:x', 5)])
    )
    worker.start()
    worker.join()
    assert len(found) == 1 and found[0][0] == "native:buffer"  # "near" also finds the distance one


def test_a_score_is_bm25_with_the_field_weight_and_the_rarity_over_all_fields():
    """FTS5's bm25 (k1 1.2, b 0.75) of one word in the name, computed here by hand, times the name's weight."""
    toy = AlgorithmIndex(
        [
            AlgorithmEntry("native:a", "Tapered buffers", provider="native"),
            AlgorithmEntry("native:b", "Buffer", provider="native"),
            AlgorithmEntry("native:c", "Clip", provider="native"),
        ]
    )
    (match,) = toy.search("taper", 5)
    rarity = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # in 1 of 3 algorithms
    average = (2 + 1 + 1) / 3  # name lengths in words
    saturation = 1 * (1.2 + 1) / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / average))
    whole_query_in_name = 1.6
    assert match.entry.id == "native:a"
    assert match.score == pytest.approx(3.0 * rarity * saturation * whole_query_in_name, rel=1e-9)
