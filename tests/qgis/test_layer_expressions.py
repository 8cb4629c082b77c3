"""Expressions that ride inside a layers parameter are judged like any other expression.

``native:writevectortiles_*`` take their layers as a list of objects whose
``filterExpression`` QGIS evaluates per feature: ``env('...')`` there ran
without the user's approval, while the same text as a processing formula
asked.  Now any text in a layers parameter that is neither a layer nor a file
is checked as an expression.
"""

from __future__ import annotations

import asyncio

import pytest

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.approval import ApprovalRequest
from geogpt_qgis.tools.processing.family import ProcessingTools
from tests.support.runs import call_in_thread


@pytest.fixture
def kit(tool_ctx) -> Toolkit:
    return Toolkit(ProcessingTools(tool_ctx).tools())


def _call(kit: Toolkit, filter_expression: str) -> tuple[object, object]:
    layers = [{"layer": "schools", "filterExpression": filter_expression}]
    args = {"algorithm": "native:writevectortiles_mbtiles", "parameters": {"LAYERS": layers, "MAX_ZOOM": 0}}
    request = call_in_thread(asyncio.run, kit.approval_request("c1", "run_algorithm", args))
    return request, args


def test_a_filter_expression_with_effects_in_a_layers_parameter_asks(kit):
    request, args = _call(kit, "length(env('HOME')) > 0")
    assert isinstance(request, ApprovalRequest) and "read_private" in request.effects
    assert "env()" in request.details, request.details  # under "It will:"
    outcome = call_in_thread(asyncio.run, kit.run("run_algorithm", args, None))
    assert not outcome.ok and "approv" in outcome.text


def test_a_pure_filter_expression_in_a_layers_parameter_runs_unasked(kit):
    request, _ = _call(kit, '"pupils" > 300')
    assert request is None
