"""A liked run becomes a recipe without the user's names or values (core/recipe_learning.py)."""

from __future__ import annotations

from geogpt_qgis.core.recipe_learning import generalise

LAYERS = {"schools": "point", "hospitals": "point", "districts": "polygon", "rivers": "line"}
FIELDS = {"name", "pupils", "type"}


def test_layers_fields_numbers_values_and_places_become_placeholders():
    recipe = generalise(
        "Which primary schools in Nordby are within 1.5 km of a hospital and have over 300 pupils?",
        [
            ("find_examples", {"question": "schools near hospitals"}),
            (
                "run_algorithm",
                {
                    "algorithm": "native:extractwithindistance",
                    "parameters": {"INPUT": "schools", "REFERENCE": "hospitals", "DISTANCE": 1500},
                    "output_name": "schools_near_hospitals",
                },
            ),
            (
                "read_features",
                {
                    "layer": "schools_near_hospitals",
                    "fields": ["name", "pupils"],
                    "expression": '"pupils" > 300 AND "type" = \'primary\'',
                },
            ),
        ],
        LAYERS,
        FIELDS,
    )
    assert recipe is not None and recipe.family == "mine" and recipe.id.startswith("mine-")
    assert recipe.question == (
        "Which primary <point layer> in <place> are within <distance> of a <other point layer> "
        "and have over <number> <field>?"
    )
    (run, params), (read, args) = recipe.calls
    assert run == "run_algorithm" and read == "read_features"  # find_examples is not part of the method
    assert params["parameters"] == {
        "INPUT": "<point layer>",
        "REFERENCE": "<other point layer>",
        "DISTANCE": "<distance>",
    }
    assert params["output_name"] == "<point layer>_near_<other point layer>"
    assert args["layer"] == "<point layer>_near_<other point layer>"
    assert args["fields"] == ["<other field>", "<field>"]
    assert args["expression"] == '"<field>" > <number> AND "<third field>" = \'<value>\''
    text = repr(recipe.to_json())
    for private in ("schools", "hospitals", "Nordby", "1500", "300", "primary"):
        assert private not in text.replace("primary <point", ""), private


def test_a_run_that_only_looked_for_a_method_is_not_a_recipe():
    assert generalise("how do I buffer?", [("find_algorithm", {"query": "buffer"})], LAYERS, FIELDS) is None
    assert generalise("how do I buffer?", [("search_algorithms", {"query": "buffer"})], LAYERS, FIELDS) is None
