"""The recipes teach the method where a plausible figure is wrong (issue 31): weighting rates, boundary rules."""

from __future__ import annotations

from geogpt_qgis.core.recipe_search import RecipeIndex, Vocabulary
from geogpt_qgis.core.recipes import load

TOWN = Vocabulary.of(layers={"districts": "polygon", "trees": "point"}, fields=["name", "rate_pct", "population"])


def test_a_mean_of_rates_is_taught_weighted():
    found = RecipeIndex(load()).search("mean average rate_pct of districts", TOWN)
    notes = " ".join(recipe.note for recipe in found)
    assert "weighted" in notes and "sum(rate*population)/sum(population)" in notes


def test_counting_points_per_zone_states_the_boundary_rule():
    found = RecipeIndex(load()).search("how many trees are in each district", TOWN)
    assert found and found[0].id == "count-points-per-zone"
    assert "boundary" in found[0].note and "overlapping zones" in found[0].note
