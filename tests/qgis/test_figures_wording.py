"""What an analyst reads every day: one feature is "1 feature", not "1 features"."""

from __future__ import annotations

from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread


def test_one_feature_is_singular_in_results_and_reads(tool_ctx, demo_project):
    text = call_in_thread(
        ProcessingTools(tool_ctx).run_algorithm,
        "native:extractbyexpression",
        {"INPUT": "schools", "EXPRESSION": "$id = 1"},
        "one_school",
    ).text
    assert ": Point, 1 feature, EPSG:25832" in text, text
    read = call_in_thread(ProjectTools(tool_ctx).read_features, "one_school", ["name"]).text
    assert read.startswith("All 1 of 1 feature of 'one_school':"), read
    described = call_in_thread(ProjectTools(tool_ctx).describe_layer, "one_school").text
    assert "Point, 1 feature, visible" in described and "values from all 1 feature)" in described, described
    twin = call_in_thread(ProjectTools(tool_ctx).read_features, "schools", ["name"], "", 2).text
    assert twin.startswith("First 2 features of 'schools'"), twin


def test_field_names_do_not_grow_across_steps(tool_ctx, demo_project):
    """Was: fid, then result_fid beside it, then result_result_fid a step later."""
    tools = ProcessingTools(tool_ctx)
    source = demo_project.mapLayersByName("schools")[0]
    names = [source.fields().names()]
    layer = "schools"
    for step in range(3):
        out = f"step_{step}"
        call_in_thread(tools.run_algorithm, "native:extractbyexpression", {"INPUT": layer, "EXPRESSION": "true"}, out)
        result = demo_project.mapLayersByName(out)[0]
        names.append(result.fields().names())
        assert sorted(f["fid"] for f in result.getFeatures()) == sorted(f["fid"] for f in source.getFeatures())
        layer = out
    assert all(step == names[0] for step in names), names
