"""find_examples on the demo project: the right method comes back, compact, with the user's recipes first in line."""

from __future__ import annotations

import json

import pytest

from bench.real_tokens import real_counter
from geogpt_qgis.agent.prompts import build_system_prompt
from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.recipes import Recipe
from geogpt_qgis.core.tokens import estimate_tokens
from geogpt_qgis.tools.examples import recipe_store
from geogpt_qgis.tools.examples.family import MAX_TOKENS, ExampleTools
from tests.support.runs import call_in_thread


@pytest.fixture
def examples(tool_ctx, tmp_path, monkeypatch) -> ExampleTools:
    monkeypatch.setattr(recipe_store, "store_path", lambda: tmp_path / "my_recipes.json")
    return ExampleTools(tool_ctx)


def test_the_schema_is_at_most_60_tekken_tokens_and_the_prompt_gets_one_line(examples):
    (schema,) = Toolkit(examples.tools()).schemas
    assert real_counter()(json.dumps(schema, ensure_ascii=False)) <= 60
    prompt = build_system_prompt((examples.prompt_hint,))
    assert prompt.count("find_examples") == 1 and "\n" not in examples.prompt_hint


@pytest.mark.parametrize(
    ("question", "method"),
    [
        ("How far is each school from the nearest hospital?", "native:joinbynearest"),
        ("How many schools are there in every district?", "native:countpointsinpolygon"),
        ("Which schools are less than 300 m from the rivers?", "native:extractwithindistance"),
        ("What is the total length of roads per district?", "native:sumlinelengths"),
    ],
)
def test_the_project_names_become_placeholders_and_the_method_comes_back(examples, question, method):
    text = call_in_thread(examples.find_examples, question).text
    assert method in text
    assert 1 <= text.count("Q: ") <= 3
    assert estimate_tokens(text.split("\n", 1)[1]) <= MAX_TOKENS
    assert real_counter()(text) <= MAX_TOKENS + 40  # the heading line included


def test_a_recipe_of_the_users_own_is_found_and_a_deleted_one_is_not(examples, tmp_path):
    mine = Recipe(
        id="mine-1",
        family="mine",
        question="flood risk score of each <polygon layer> from <line layer>",
        calls=(("run_pyqgis", {"code": "score(<polygon layer>, <line layer>)"}),),
    )
    recipe_store.add_recipe(mine)
    text = call_in_thread(examples.find_examples, "What is the flood risk score of each park from the rivers?").text
    assert "score(<polygon layer>, <line layer>)" in text.split("Q: ")[1]
    assert recipe_store.delete_recipe("mine-1")
    assert "score(" not in call_in_thread(examples.find_examples, "flood risk score of each park from the rivers").text


def test_a_question_with_nothing_to_match_says_what_to_do_instead(examples):
    assert "find_algorithm" in call_in_thread(examples.find_examples, "the of and").text


def test_the_values_a_question_may_name_are_read_from_the_layers_it_names_and_fit_between_quotes(qgis_app):
    from qgis.core import QgsFeature, QgsProject, QgsVectorLayer

    from geogpt_qgis.core.cancel import CancelToken
    from geogpt_qgis.tools.examples.family import named_layer_plans, project_names, text_values

    project = QgsProject()
    clinics = QgsVectorLayer(
        "Point?crs=EPSG:25832&field=kind:string&field=name:string&field=beds:integer", "clinics", "memory"
    )
    other = QgsVectorLayer("Point?crs=EPSG:25832&field=zone:string", "parks", "memory")
    rows = [
        ("primary", "O'Brien Clinic", 5),
        ("walk-in", 'The "Big" One', 7),
        ("primary", "x", 9),
        ("ab", "c:\\d e", 1),
    ]
    for kind, name, beds in rows:
        feature = QgsFeature(clinics.fields())
        feature.setAttributes([kind, name, beds])
        clinics.dataProvider().addFeature(feature)
    feature = QgsFeature(other.fields())
    feature.setAttributes(["forest"])
    other.dataProvider().addFeature(feature)
    project.addMapLayers([clinics, other])
    plans = named_layer_plans(project, "How many primary clinics are there?", project_names(project)[0])
    assert [plan.layer_name for plan in plans] == ["clinics"]  # only the layers the question names are read
    # Text only, 3 to 40 characters, and nothing that would break the quotes of the expression it is put into.
    assert text_values(plans, CancelToken()) == {"primary": "kind", "walk-in": "kind"}
