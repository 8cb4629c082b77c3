"""Retrieval of recipes: normalisation, and 210 paraphrased questions against the shipped library.

The questions (tests/unit/recipe_questions.py) were written for this test, each with the recipe that answers
it; the goal is the right recipe in the top 3 for at least 90% of them, each search within 20 ms, and first for
at least 85% (a guided conversation shows a small model the first two, and it copies the first).
"""

from __future__ import annotations

import statistics
import time

import pytest

from geogpt_qgis.core.recipe_search import RecipeIndex, Vocabulary, normalise
from geogpt_qgis.core.recipes import Recipe, load
from tests.unit.recipe_questions import QUESTIONS

# The demo town as the tool sees it: layer names with their shapes, field names.
DEMO = Vocabulary.of(
    layers={
        **{"schools": "point", "hospitals": "point", "roads": "line", "rivers": "line"},
        **{"parks": "polygon", "districts": "polygon", "landuse": "polygon"},
        **{"public.schools": "point", "public.roads": "line"},
    },
    fields="name type pupils beds emergency class maxspeed population code area_ha kind width_m district".split(),
)


@pytest.fixture(scope="module")
def index() -> RecipeIndex:
    return RecipeIndex(load())


def test_names_numbers_values_and_places_become_placeholders():
    text = normalise("Which schools are within 1.5 km of the Elv River, with 'primary' type and 300 pupils?", DEMO)
    assert text.split() == [
        *("zzlayer", "point", "within", "zzdistance", "zzplace", "zzlayer", "line"),
        *("zzvalue", "zzfield", "zznumber", "zzfield"),
    ]
    assert normalise("reproject to EPSG:4326 and keep parks over 2 ha", DEMO).split() == [
        *("reproject", "zzcrs", "keep", "zzlayer", "polygon", "over", "zzarea"),
    ]
    # The templates' own placeholders give the same tokens as the names they stand for.
    assert normalise("<point layer> within <distance> of <line layer>") == normalise(
        "schools within 500 m of rivers", DEMO
    )


def test_the_question_set_names_real_recipes_and_is_large_enough():
    ids = {r.id for r in load()}
    assert len(QUESTIONS) >= 200
    assert {want for _, want in QUESTIONS} <= ids
    assert len({q for q, _ in QUESTIONS}) == len(QUESTIONS)


def test_the_right_recipe_is_in_the_top_3_for_90_percent_within_20_ms(index):
    hits, first, took = 0, 0, []
    for question, want in QUESTIONS:
        started = time.perf_counter()
        found = [r.id for r in index.search(question, DEMO)]
        took.append(time.perf_counter() - started)
        hits += want in found
        first += found[:1] == [want]
    top3, top1 = hits / len(QUESTIONS), first / len(QUESTIONS)
    p95 = statistics.quantiles(took, n=20)[-1]
    median = statistics.median(took)
    print(f"top-1 {top1:.1%}, top-3 {top3:.1%}, median {median * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms")
    assert top3 >= 0.90
    assert top1 >= 0.85  # 81.9% before a question worded as one of a recipe's wordings found that recipe first
    assert p95 <= 0.020


def test_a_question_worded_as_a_recipe_wording_finds_that_recipe_first_whatever_the_layers_shape(index):
    # "how many <layer> are there" is count-features' wording; nearest-count shares more words with a point layer.
    assert index.search("How many schools are there?", DEMO)[0].id == "count-features"
    assert index.search("How many districts are there?", DEMO)[0].id == "count-features"
    assert index.search("how many schools have each hospitals as their nearest", DEMO)[0].id == "nearest-count"


def test_a_question_of_stopwords_only_or_symbols_finds_nothing_and_does_not_fail(index):
    assert index.search("the of and", DEMO) == []
    assert index.search('" * ( ) - ^ : AND', DEMO) == []  # FTS5 syntax in a question is only text
    assert len(index.search("NEAR(hospital) OR school*", DEMO)) == 3


def test_the_users_own_recipe_that_ranks_higher_stays_ahead_of_an_exactly_worded_shipped_one():
    mine = Recipe(
        "mine-0",
        "mine",
        "Which <point layer> are within <distance> of the <place> <line layer>?",
        (("run_algorithm", {"algorithm": "native:extractwithindistance"}),),
    )
    shipped = load()
    question = "hospitals within 2 km of the roads"  # worded exactly as the shipped within-distance recipe
    assert RecipeIndex(shipped).search(question, DEMO)[0].id == "within-distance"
    assert [r.id for r in RecipeIndex([mine, *shipped], own=1).search(question, DEMO)][:2] == [
        "mine-0",
        "within-distance",
    ]
    # Counted as the user's only when it is: the same list with no own recipes puts the exact wording first.
    assert RecipeIndex([mine, *shipped]).search(question, DEMO)[0].id == "within-distance"
