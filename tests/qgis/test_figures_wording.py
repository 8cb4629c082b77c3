"""What an analyst reads every day: one feature is "1 feature", not "1 features"."""

from __future__ import annotations

from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project import ProjectTools
from tests.support.runs import call_in_thread


def test_one_feature_is_singular_in_results_and_reads(tool_ctx, demo_project):
    text = call_in_thread(
        ProcessingTools(tool_ctx).run_algorithm,
        "native:extractbyexpression",
        {"INPUT": "schools", "EXPRESSION": "$id = 1"},
        "one_school",
    )
    assert ": Point, 1 feature, EPSG:25832" in text, text
    read = call_in_thread(ProjectTools(tool_ctx).read_features, "one_school", ["name"])
    assert read.startswith("All 1 of 1 feature of 'one_school':"), read
    described = call_in_thread(ProjectTools(tool_ctx).describe_layer, "one_school")
    assert "Point, 1 feature, visible" in described and "values from all 1 feature)" in described, described
    twin = call_in_thread(ProjectTools(tool_ctx).read_features, "schools", ["name"], "", 2)
    assert twin.startswith("First 2 features of 'schools'"), twin
