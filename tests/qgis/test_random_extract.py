"""A random extract is a random sample without repeats on every QGIS (tools/processing/random_sample.py).

QGIS before 3.30 drew ids with replacement: on 3.22, 5 of 31 schools came back
as 4 features in about one run in six and with a repeat in about one in four.
Thirty runs make a pass by luck there about one chance in 10^7.
"""

from __future__ import annotations

import pytest
from qgis.core import QgsProject, QgsVectorLayer

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.processing.random_sample import needs_own_sample
from tests.support.runs import call_in_thread

RUNS = 30


@pytest.fixture
def tools(tool_ctx) -> ProcessingTools:
    return ProcessingTools(tool_ctx)


def names(project: QgsProject, layer_name: str) -> list[str]:
    layer = project.mapLayersByName(layer_name)[0]
    assert isinstance(layer, QgsVectorLayer)
    return [feature["name"] for feature in layer.getFeatures()]


def extract(tools: ProcessingTools, project: QgsProject, run: int, **parameters: object) -> list[str]:
    name = f"sample_{run}"
    call_in_thread(tools.run_algorithm, "native:randomextract", {"INPUT": "schools", **parameters}, name)
    picked = names(project, name)
    project.removeMapLayer(project.mapLayersByName(name)[0].id())
    return picked


def test_a_random_extract_has_the_number_asked_for_all_different_and_from_the_source(tools, demo_project):
    schools = names(demo_project, "schools")
    seen: set[str] = set()
    for run in range(RUNS):
        picked = extract(tools, demo_project, run, METHOD=0, NUMBER=5)
        assert len(picked) == 5 and len(set(picked)) == 5, picked
        assert set(picked) <= set(schools)
        seen |= set(picked)
    assert len(seen) > 10  # random: thirty samples of 5 reach far more than one sample's schools


def test_a_percentage_is_rounded_down_as_qgis_340_does_and_too_many_is_refused(tools, demo_project):
    count = len(names(demo_project, "schools"))
    picked = extract(tools, demo_project, 0, METHOD=1, NUMBER=10)
    assert len(picked) == len(set(picked)) == count * 10 // 100  # 3 of 31
    with pytest.raises(ToolError, match=r"greater than feature count|more than the 31 features"):
        extract(tools, demo_project, 1, METHOD=0, NUMBER=count + 1)
    assert not demo_project.mapLayersByName("sample_1")


def test_the_own_sample_is_used_only_where_qgis_needs_it():
    assert needs_own_sample("native:randomextract", 32216)
    assert not needs_own_sample("native:randomextract", 34015)
    assert not needs_own_sample("native:extractbyexpression", 32216)
