"""An expression that would build too much in one evaluation is refused before QGIS evaluates it.

QGIS cannot interrupt one evaluation: ``array_foreach(generate_series(1, 100000000), @element)``
held select_features for 26 s and gigabytes (the fuzzer found it).  These tests check the bound
from the parse tree, that approval does not lift it, and that every tool path which evaluates an
expression (filters, selections, labels, style rules, processing formulas) refuses it quickly
and changes nothing.
"""

from __future__ import annotations

import asyncio

import pytest

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.approval import ApprovalRequest
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.family import MapTools
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.edits import EditTools
from geogpt_qgis.tools.project.family import ProjectTools
from geogpt_qgis.tools.safety.expression_size import MAX_SERIES_ITEMS
from geogpt_qgis.tools.safety.expressions import check_expression, require_safe_expression
from tests.support.runs import call_in_thread

SERIES_BOMB = "array_foreach(generate_series(1, 100000000), @element)"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (SERIES_BOMB, "100,000,000 values"),
        ("array_length(generate_series(1, 20000)) > 0", "20,000 values"),
        ("array_length(generate_series(0, 1, 0.00001)) > 0", "values per feature"),
        # Series inside one another run once per item: 200 x 200 = 40,000.
        ("array_length(array_foreach(generate_series(1, 200), generate_series(1, 200))) > 0", "40,000 values"),
        ("array_length(generate_series(stop:=50000, start:=1)) > 0", "50,000 values"),
        ("eval('array_length(generate_series(1, 1000000))') > 0", "1,000,000 values"),
        ('array_length(generate_series(1, "pupils")) > 0', "written as numbers"),
        ("generate_series(1, 30000)[0] = 1", "30,000 values"),  # QGIS 3.22 hands the index node over untyped
        ("length(lpad('', 100000000, 'x')) > 0", "at most 10,000 characters"),
        ("length(rpad(\"name\", '50000', 'x')) > 0", "at most 10,000 characters"),
        ("area(buffer($geometry, 10, segments:=10000000)) > 0", "segments per quarter circle"),
        ('area(buffer($geometry, 10, "pupils")) > 0', "must be a number written"),
        ("num_points(make_regular_polygon(make_point(0, 0), 1, 5000000)) > 0", "sides"),
        ("num_points(smooth($geometry, 40)) > 0", "iterations"),
        ("format_number(1, 1000000000) <> ''", "decimal places"),
        ("to_dms($x, 'x', 1000000000) <> ''", "decimal places"),
    ],
)
def test_an_oversized_expression_is_refused_even_when_approved(qgis_app, text, says):
    check = check_expression(text)
    assert not check.parse_error, check.parse_error
    assert check.safe, "only pure functions: the refusal is about size, not effects"
    assert any(says in problem for problem in check.too_big), check.too_big
    for approved in (False, True):
        with pytest.raises(ToolError, match="is not evaluated"):
            require_safe_expression(text, "the filter", approved)


@pytest.mark.parametrize(
    "text",
    [
        "array_length(generate_series(1, 10)) = 10",
        f"array_length(generate_series(1, {MAX_SERIES_ITEMS})) > 0",
        "array_length(generate_series(10, 1)) = 0",  # an empty series builds nothing
        "array_length(generate_series(-5, -1)) = 5",
        "area(buffer($geometry, 10)) > 0",  # the default 8 segments
        "area(buffer($geometry, 10, 64)) > 0",
        "lpad(to_string(\"pupils\"), 6, '0') <> ''",
        "num_points(smooth($geometry, 3)) > 0",
        "format_number(\"pupils\", 2) <> ''",
        "to_dm($y, 'y', 3) <> ''",
        "string_to_array(\"name\", ' ')[0] <> ''",
    ],
)
def test_ordinary_sizes_pass(qgis_app, text):
    check = check_expression(text)
    assert not check.parse_error, check.parse_error
    assert check.too_big == (), check.too_big
    require_safe_expression(text, "the filter")


def test_between_is_seen_into_where_qgis_has_it(qgis_app):
    """``BETWEEN`` (QGIS 3.26+) is a node of its own: the walk looks inside it; 3.22 cannot parse it."""
    from qgis.core import Qgis

    bomb = check_expression('"pupils" BETWEEN 1 AND array_length(generate_series(1, 99999))')
    plain = check_expression('"pupils" BETWEEN 100 AND 400')
    if Qgis.QGIS_VERSION_INT < 32600:
        assert bomb.parse_error and plain.parse_error  # nothing evaluates an expression that does not parse
        return
    assert any("99,999 values" in problem for problem in bomb.too_big), bomb.too_big
    assert not plain.parse_error and plain.too_big == ()


@pytest.fixture
def toolkit(tool_ctx) -> Toolkit:
    families = [ProjectTools(tool_ctx), EditTools(tool_ctx), ProcessingTools(tool_ctx), MapTools(tool_ctx)]
    return Toolkit([tool for family in families for tool in family.tools()])


CALLS = [
    ("select_features", {"layer": "landuse", "expression": SERIES_BOMB}),
    ("read_features", {"layer": "schools", "expression": SERIES_BOMB}),
    ("label_layer", {"layer": "schools", "text": f"array_to_string({SERIES_BOMB})"}),
    (
        "run_algorithm",
        {
            "algorithm": "native:fieldcalculator",
            "parameters": {"INPUT": "schools", "FIELD_NAME": "n", "FORMULA": f"array_length({SERIES_BOMB})"},
            "output_name": "schools_n",
        },
    ),
]


@pytest.mark.parametrize(("tool", "args"), CALLS, ids=[name for name, _ in CALLS])
def test_every_tool_refuses_the_series_bomb_without_asking_or_evaluating(demo_project, toolkit, tool, args):
    layers_before = sorted(layer.name() for layer in demo_project.mapLayers().values())
    selected_before = {
        layer.name(): layer.selectedFeatureCount()
        for layer in demo_project.mapLayers().values()
        if hasattr(layer, "selectedFeatureCount")
    }
    request = call_in_thread(asyncio.run, toolkit.approval_request("c1", tool, args))
    assert not isinstance(request, ApprovalRequest), "no card for a call that cannot run"
    outcome = call_in_thread(asyncio.run, toolkit.run(tool, args, None))
    assert not outcome.ok
    assert "100,000,000 values" in outcome.text and f"at most {MAX_SERIES_ITEMS:,}" in outcome.text, outcome.text
    assert sorted(layer.name() for layer in demo_project.mapLayers().values()) == layers_before
    assert {
        layer.name(): layer.selectedFeatureCount()
        for layer in demo_project.mapLayers().values()
        if hasattr(layer, "selectedFeatureCount")
    } == selected_before


def test_a_kind_of_node_the_walk_cannot_look_into_is_refused_not_skipped(qgis_app):
    """A node kind a later QGIS adds could hold a series: what cannot be seen into is refused, by construction."""
    from geogpt_qgis.tools.safety.expression_size import SizeCheck, check_sizes

    class UnknownNode:  # stands in for a node type this QGIS does not have (none can be built here)
        def nodeType(self) -> int:  # noqa: N802 - the QGIS method it stands in for
            return 99

        def dump(self) -> str:
            return "something new"

    check = SizeCheck()
    check_sizes(UnknownNode(), check)
    assert check.problems == ["an expression part this check cannot look into (something new)"]
