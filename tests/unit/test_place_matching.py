"""Place names: accents, typos, layer words, and honest ambiguity (Qt-free)."""

from __future__ import annotations

import pytest

from geogpt_qgis.tools.insights.places.matching import (
    Candidate,
    decide,
    merge_duplicates,
    normalize,
    parse_query,
    query_score,
    shortlist,
    trigram_similarity,
)

# (layer, name) pairs as in the demo town, plus an accented synthetic layer.
PLACES = [
    ("schools", "Nordby School"),
    ("schools", "Nordby Primary"),
    ("schools", "Nordby Secondary"),
    ("schools", "Østervang Academy"),
    ("schools", "Mølleby School"),
    ("schools", "Søndre Park School"),
    ("districts", "Nordby"),
    ("districts", "Centre"),
    ("districts", "Østervang"),
    ("districts", "Søndre Park"),
    ("parks", "Søndre Park"),
    ("parks", "Nordby Common"),
    ("hospitals", "Nordby Hospital"),
    ("roads", "King's Road"),
    ("towns", "Tromsø"),
    ("towns", "Bærum"),
    ("towns", "Café Müller"),
]
SOURCES = sorted({layer for layer, _ in PLACES})


def find(text: str):
    query = parse_query(text, SOURCES)
    candidates = [
        Candidate(name, layer, query_score(query, layer, name))
        for layer, name in PLACES
        if not query.source or layer == query.source
    ]
    return decide(query, shortlist(candidates))


def test_normalize_folds_case_accents_and_nordic_letters():
    assert normalize("Søndre  Park!") == "sondre park"
    assert normalize("ØSTERVANG") == "ostervang"
    assert normalize("Bærum") == "baerum"
    assert normalize("Café Müller") == "cafe muller"
    assert normalize("King's Road") == "kings road"


def test_trigram_similarity_is_pg_trgms():
    # PostgreSQL: SELECT similarity('nordby schol', 'nordby school') -> 0.8
    assert trigram_similarity("nordby schol", "nordby school") == pytest.approx(0.8)
    assert trigram_similarity("abc", "abc") == 1.0
    assert trigram_similarity("abc", "xyz") == 0.0


@pytest.mark.parametrize(
    ("asked", "name", "layer"),
    [
        ("Nordby schol", "Nordby School", "schools"),  # typo
        ("nordby SCHOOL", "Nordby School", "schools"),  # case
        ("Ostervang", "Østervang", "districts"),  # missing accent, exact beats longer names
        ("Ostervang Akademy", "Østervang Academy", "schools"),  # accent and typo
        ("Molleby skole", "Mølleby School", "schools"),
        ("the Centre district", "Centre", "districts"),  # filler word and layer word
        ("Nordby hospital", "Nordby Hospital", "hospitals"),
        ("Kings Road", "King's Road", "roads"),
        ("Tromso", "Tromsø", "towns"),
        ("Baerum", "Bærum", "towns"),
        ("cafe muller", "Café Müller", "towns"),
    ],
)
def test_typos_and_missing_accents_find_the_place(asked, name, layer):
    decision = find(asked)
    assert decision.chosen is not None, (decision.candidates, decision.closest)
    assert (decision.chosen.name, decision.chosen.source) == (name, layer)


def test_two_places_with_the_same_name_are_ambiguous():
    decision = find("Sondre Park")
    assert decision.chosen is None and decision.ambiguous
    assert {(c.name, c.source) for c in decision.candidates} == {("Søndre Park", "districts"), ("Søndre Park", "parks")}


def test_layer_prefix_settles_the_ambiguity():
    decision = find("parks:Søndre Park")
    assert decision.chosen is not None
    assert (decision.chosen.name, decision.chosen.source) == ("Søndre Park", "parks")
    assert parse_query("no_such_layer:Nordby", SOURCES).source == ""  # not a layer: the whole text is the name


def test_no_match_gives_the_closest_names():
    decision = find("Zanzibar")
    assert decision.chosen is None and not decision.ambiguous
    assert len(decision.closest) == 3


def test_the_same_place_in_two_layers_counts_once():
    original = Candidate("Nordby School", "schools", 0.96, source_size=31, location=(10.0, 20.0))
    copy = Candidate("Nordby School", "schools_near_rivers", 0.96, source_size=5, location=(10.2, 20.0))
    twin = Candidate("Nordby School", "public.schools", 0.96, kind="table", connection="db", location=(10.0, 20.0))
    elsewhere = Candidate("Nordby School", "old_schools", 0.96, source_size=50, location=(900.0, 20.0))
    merged = merge_duplicates([twin, copy, original, elsewhere], 1.0)
    assert [(c.source, len(c.also_in)) for c in merged] == [("old_schools", 0), ("schools", 2)]
