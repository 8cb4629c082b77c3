"""Every tool answers with a ``ToolResult`` (text for the model, typed artifact): by its signature, and when run.

A tool that returned plain text (or a text rebuilt from a result with ``+``)
would hand the dock, the Sources list and the run log nothing; the signature is
what mypy holds every return statement to.
"""

from __future__ import annotations

import typing

from geogpt_qgis.core.artifacts import LayerRef, ToolResult
from geogpt_qgis.tools.project import ProjectTools
from geogpt_qgis.tools.registry import build_families
from tests.support.runs import call_in_thread


def test_every_tool_of_every_family_says_it_returns_a_tool_result(tool_ctx):
    tools = [tool for family in build_families(tool_ctx) for tool in family.tools()]
    assert len(tools) >= 15  # every family, whether or not it is available here
    wrong = {tool.__name__: typing.get_type_hints(tool).get("return") for tool in tools}
    assert {name: hint for name, hint in wrong.items() if hint is not ToolResult} == {}


def test_a_layer_read_is_named_with_its_id_and_text_alone_is_what_the_model_reads(tool_ctx, demo_project):
    listed = call_in_thread(ProjectTools(tool_ctx).describe_layer)  # the list: nothing read in particular
    assert isinstance(listed, ToolResult) and listed.artifact.empty and listed.text.startswith("9 layers")
    schools = demo_project.mapLayersByName("schools")[0]
    described = call_in_thread(ProjectTools(tool_ctx).describe_layer, "schools")
    assert described.artifact.layers == (LayerRef("schools", schools.id()),)
    assert f"Layer 'schools' (id {schools.id()})" in described.text
