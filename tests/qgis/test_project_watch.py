"""What the user changed in the project between turns, and what does not count."""

from __future__ import annotations

import pytest
from qgis.core import QgsVectorLayer

from geogpt_qgis.tools.project_watch import MAX_ITEMS, ProjectWatcher
from tests.support.runs import call_in_thread


@pytest.fixture
def watcher(demo_project, bridge):
    created = ProjectWatcher(demo_project, bridge)
    yield created
    created.close()


def memory_layer(name: str) -> QgsVectorLayer:
    return QgsVectorLayer("Point?crs=EPSG:25832", name, "memory")


def test_nothing_changed_means_no_note(watcher):
    assert watcher.drain() == ""


def test_changes_that_cancel_out_leave_nothing(watcher, demo_project):
    layer = demo_project.addMapLayer(memory_layer("scratch"))
    demo_project.removeMapLayer(layer.id())
    parks = demo_project.mapLayersByName("parks")[0]
    parks.setName("green")
    parks.setName("parks")
    assert watcher.drain() == ""


def test_repeated_renames_keep_the_net_effect_and_a_drain_starts_over(watcher, demo_project):
    parks = demo_project.mapLayersByName("parks")[0]
    parks.setName("green")
    parks.setName("green_spaces")
    assert watcher.drain() == "Since your last answer, the user renamed layer 'parks' to 'green_spaces'."
    assert watcher.drain() == ""
    demo_project.removeMapLayer(parks.id())
    assert watcher.drain() == "Since your last answer, the user removed layer 'green_spaces'."


def test_the_agents_own_changes_do_not_count(watcher, demo_project, bridge):
    schools = demo_project.mapLayersByName("schools")[0]

    def agent_step() -> None:
        schools.selectByExpression("\"type\" = 'primary'")
        demo_project.mapLayersByName("parks")[0].setName("green")
        demo_project.addMapLayer(memory_layer("result"))

    call_in_thread(bridge.call, agent_step)
    assert watcher.drain() == ""
    schools.removeSelection()
    assert watcher.drain() == "Since your last answer, the user cleared the selection in 'schools'."


def test_opening_another_project_is_one_note_not_a_list_of_layers(watcher, demo_project):
    path = demo_project.fileName()
    demo_project.clear()
    assert demo_project.read(path)
    assert watcher.drain() == (
        "Since your last answer, the user opened another project ('Elvbury demo town'); "
        "the layers listed above are the ones now open."
    )
    demo_project.mapLayersByName("roads")[0].setName("streets")  # still watched after the reload
    assert watcher.drain() == "Since your last answer, the user renamed layer 'roads' to 'streets'."


def test_many_changes_are_counted_past_a_limit(watcher, demo_project):
    for i in range(MAX_ITEMS + 3):
        demo_project.addMapLayer(memory_layer(f"layer_{i}"))
    note = watcher.drain()
    assert note.count("added layer") == MAX_ITEMS
    assert note.endswith("; and 3 more changes.")
