"""Only the layers that were asked for: no unasked secondary outputs, and a multi-step result that stands out."""

from __future__ import annotations

import pytest
from qgis.core import QgsLayerTreeGroup

from geogpt_qgis.core.cancel import CancelToken, current_cancel_token
from geogpt_qgis.tools.processing.family import ProcessingTools
from tests.support.runs import call_in_thread


@pytest.fixture
def tools(tool_ctx) -> ProcessingTools:
    return ProcessingTools(tool_ctx)


def layer_names(project) -> set[str]:
    return {layer.name() for layer in project.mapLayers().values()}


def in_one_run(token: CancelToken, tools: ProcessingTools, *args) -> str:
    """A tool call made inside the agent run that ``token`` belongs to."""

    def call() -> str:
        current_cancel_token.set(token)
        return tools.run_algorithm(*args).text

    return call_in_thread(call)


@pytest.mark.parametrize(
    ("algorithm", "parameters", "extra"),
    [
        (
            "native:extractbyattribute",
            {"INPUT": "schools", "FIELD": "type", "OPERATOR": 0, "VALUE": "primary"},
            "FAIL_OUTPUT",
        ),
        ("native:extractbyexpression", {"INPUT": "schools", "EXPRESSION": '"pupils" > 300'}, "FAIL_OUTPUT"),
        ("native:joinattributesbylocation", {"INPUT": "schools", "JOIN": "districts"}, "NON_MATCHING"),
    ],
)
def test_optional_secondary_outputs_are_made_only_when_asked(tools, demo_project, algorithm, parameters, extra):
    before = layer_names(demo_project)
    result = call_in_thread(tools.run_algorithm, algorithm, parameters, "picked").text
    assert layer_names(demo_project) - before == {"picked"}
    assert extra not in result

    asked = call_in_thread(tools.run_algorithm, algorithm, {**parameters, extra: "TEMPORARY_OUTPUT"}, "asked").text
    assert layer_names(demo_project) - before == {"picked", "asked", f"asked_{extra.lower()}"}
    assert f"{extra}: added layer 'asked_{extra.lower()}'" in asked


def test_describe_algorithm_says_optional_outputs_are_made_only_when_asked(tools):
    text = call_in_thread(tools.find_algorithm, "native:extractbyattribute").text
    assert "Outputs (added to the project as layers; leave them out): OUTPUT (" in text
    assert (
        'Optional outputs, made only if you pass NAME="TEMPORARY_OUTPUT" (only when the user asked): FAIL_OUTPUT'
        in text
    )


def test_a_multi_step_analysis_puts_its_steps_in_a_hidden_group_below_the_result(tools, demo_project):
    run = CancelToken()
    in_one_run(run, tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 500}, "river_zone")
    in_one_run(run, tools, "native:dissolve", {"INPUT": "river_zone"}, "river_zone_merged")
    last = in_one_run(
        run, tools, "native:clip", {"INPUT": "schools", "OVERLAY": "river_zone_merged"}, "schools_near_rivers"
    )

    root = demo_project.layerTreeRoot()
    top = root.children()[0]
    assert top.name() == "schools_near_rivers" and top.isVisible()
    group = root.children()[1]
    assert isinstance(group, QgsLayerTreeGroup) and group.name() == "schools_near_rivers: steps"
    assert not group.itemVisibilityChecked() and not group.isExpanded()
    assert sorted(layer.name() for layer in group.findLayers()) == ["river_zone", "river_zone_merged"]
    assert (
        "Intermediate layers 'river_zone_merged' were moved into the hidden group 'schools_near_rivers: steps'" in last
    )
    assert {"river_zone", "river_zone_merged", "schools_near_rivers"} <= layer_names(demo_project)  # nothing deleted


def test_separate_runs_do_not_group_each_other_s_results(tools, demo_project):
    in_one_run(CancelToken(), tools, "native:buffer", {"INPUT": "rivers", "DISTANCE": 500}, "river_zone")
    second = in_one_run(CancelToken(), tools, "native:clip", {"INPUT": "schools", "OVERLAY": "river_zone"}, "near")
    assert "hidden group" not in second
    assert not [
        node
        for node in demo_project.layerTreeRoot().children()
        if isinstance(node, QgsLayerTreeGroup) and node.name().endswith(": steps")
    ]
