"""A worked example filled in with what the user's question names (core.recipe_binding)."""

from __future__ import annotations

from geogpt_qgis.core.recipe_binding import question_mentions, slot_values
from geogpt_qgis.core.recipes import Recipe, bind, placeholders

LAYERS = {"schools": "point", "hospitals": "point", "rivers": "line", "districts": "polygon", "elevation": ""}
FIELDS = ["name", "pupils", "district", "population"]


def values(question: str, wanted: list[str]) -> dict[str, str]:
    return slot_values(wanted, question_mentions(question, LAYERS, FIELDS))


def test_layers_fields_and_numbers_fill_the_placeholders_of_their_kind_a_distance_is_left_to_the_call():
    # A distance's number is in the units of the layer's CRS, which the call decides: "500 m" is not the number.
    # It is still read as a distance, so its 500 never fills <number>.
    assert values("Buffer the rivers by 500 m.", ["<layer>", "<distance>", "<number>"]) == {"<layer>": "rivers"}
    assert values("Select the districts larger than 5 ha", ["<layer>", "<area>", "<number>"]) == {
        "<layer>": "districts"
    }
    assert values("Which schools have more than 400 pupils?", ["<layer>", "<field>", "<number>"]) == {
        "<layer>": "schools",
        "<field>": "pupils",
        "<number>": "400",
    }
    # A singular or differently cased name is the layer's own name.
    assert values("Which School is nearest?", ["<point layer>"]) == {"<point layer>": "schools"}


def test_shaped_placeholders_take_layers_of_that_shape_in_the_order_the_question_names_them():
    found = values("how far is each school from its nearest hospital", ["<point layer>", "<other point layer>"])
    assert found == {"<point layer>": "schools", "<other point layer>": "hospitals"}
    # Two placeholders in one recipe are two layers, never the same one twice.
    found = values("Clip the rivers to the districts.", ["<layer>", "<polygon layer>"])
    assert found == {"<layer>": "rivers", "<polygon layer>": "districts"}
    found = values("Clip the districts.", ["<layer>", "<polygon layer>"])
    assert found == {"<layer>": "districts"}


def test_a_layer_name_is_not_read_again_as_a_field_and_what_the_question_lacks_stays_a_placeholder():
    # "district" is a field of the schools, and the singular of the districts layer: the layer it is here.
    found = values("Count the schools in each district.", ["<polygon layer>", "<point layer>", "<field>"])
    assert found == {"<polygon layer>": "districts", "<point layer>": "schools"}
    recipe = Recipe(
        "buffer",
        "analysis",
        "buffer <layer> by <distance>",
        (
            (
                "run_algorithm",
                {"algorithm": "native:buffer", "parameters": {"INPUT": "<layer>", "DISTANCE": "<distance>"}},
            ),
        ),
    )
    assert placeholders(recipe) == ["<layer>", "<distance>"]
    filled = recipe.bound_calls(values("Buffer the rivers.", placeholders(recipe)))
    assert filled[0][1]["parameters"] == {"INPUT": "rivers", "DISTANCE": "<distance>"}
    assert bind(recipe.question, {"<layer>": "rivers"}) == "buffer rivers by <distance>"


def test_a_value_of_the_data_named_unquoted_fills_value_and_its_field_fills_field():
    """SmolLM2 copied "<field>" = '<value>' as shown; "primary" is a value of the schools' type."""
    data = {"primary": "type", "Centre": "district", "Elvbury General Hospital": "name"}
    wanted = ["<layer>", "<field>", "<value>"]
    found = slot_values(wanted, question_mentions("How many primary schools are there?", LAYERS, FIELDS, data))
    assert found == {"<layer>": "schools", "<field>": "type", "<value>": "primary"}
    # Whole words only, the longest first, and never where a layer or field is named.
    assert "<value>" not in slot_values(wanted, question_mentions("primaryschools", LAYERS, FIELDS, data))
    found = slot_values(wanted, question_mentions("How many schools are in the centre?", LAYERS, FIELDS, data))
    assert found == {"<layer>": "schools", "<field>": "district", "<value>": "Centre"}  # as the data writes it
    found = slot_values(wanted, question_mentions("beds at Elvbury General Hospital", LAYERS, FIELDS, data))
    assert "<value>" not in found  # "hospital" names the layer there: the layer is read first
    assert slot_values(["<value>"], question_mentions("the schools district", LAYERS, FIELDS, {"district": "x"})) == {}
    # The binding fills the example: the expression a small model copies is the right one.
    recipe = Recipe(
        "r",
        "inspection",
        "select <layer> with <field> = <value>",
        calls=(("select_features", {"layer": "<layer>", "expression": "\"<field>\" = '<value>'"}),),
    )
    filled = bind(recipe.calls[0][1]["expression"], found | {"<field>": "type", "<value>": "primary"})
    assert filled == "\"type\" = 'primary'"
