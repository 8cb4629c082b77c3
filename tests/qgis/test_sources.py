"""Sources: a scripted multi-step conversation through the real agent lists exactly the layers and algorithms it
used; the dock shows them under the answer, and a click on a layer name selects that layer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtGui import QTextCursor
from qgis.PyQt.QtTest import QTest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.artifacts import LayerRef
from geogpt_qgis.core.sources import Sources
from geogpt_qgis.gui.sources_view import SourcesView, TurnSources
from geogpt_qgis.tools.insights.charts import maker
from tests.support.dock import items_of, type_and_send
from tests.support.gpkg import read_layer
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import RunRecorder, wait_until

QUESTION = "How many pupils go to schools within 2 km of Nordby school, per district? Chart it."


@pytest.fixture(autouse=True)
def profile(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(maker, "profile_data_dir", lambda: tmp_path / "profile")
    return tmp_path / "profile"


def script(model_server) -> None:
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("find_places", {"names": ["Nordby schol"]})]),
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {
                            "algorithm": "native:buffer",
                            "parameters": {"INPUT": "place_nordby_school", "DISTANCE": 2000, "SEGMENTS": 16},
                            "output_name": "nordby_school_2km",
                        },
                    )
                ]
            ),
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {
                            "algorithm": "native:extractbylocation",
                            "parameters": {"INPUT": "schools", "PREDICATE": [0], "INTERSECT": "nordby_school_2km"},
                            "output_name": "schools_near_nordby_school",
                        },
                    )
                ]
            ),
            Turn(
                tool_calls=[
                    ToolCall(
                        "make_chart",
                        {"data": "schools_near_nordby_school", "kind": "bar", "x": "district", "y": "pupils"},
                    )
                ]
            ),
            Turn(text="Most of those pupils are in Nordby; see the chart."),
        ]
    )


def expected_pupils(gpkg: Path) -> dict[str, int]:
    """Pupils per district of the schools within 2 km of Nordby School, with shapely (the buffer's 16 segments
    per quarter make its edge up to ~2 m short of 2 km: no school sits that close to the line)."""
    schools = read_layer(gpkg, "schools")
    nordby = next(g for _, a, g in schools if a["name"] == "Nordby School")
    near = [a for _, a, g in schools if g.distance(nordby) <= 2000]
    totals: dict[str, int] = {}
    for attrs in near:
        totals[attrs["district"]] = totals.get(attrs["district"], 0) + attrs["pupils"]
    return totals


def test_sources_of_a_multi_step_conversation_name_exactly_what_it_used(model_server, worker, demo_project):
    script(model_server)
    recorder = RunRecorder(worker)
    run = worker.submit(QUESTION, ModelConfig(base_url=model_server.url, model="qwen3:8b", timeout=30))
    finished = recorder.wait(run, 90)
    assert finished.status == "finished", finished.error
    results = recorder.tool_results(run)
    assert [r.name for r in results] == ["find_places", "run_algorithm", "run_algorithm", "make_chart"]
    assert all(r.ok for r in results), [r.result for r in results if not r.ok]

    turn = TurnSources()
    for event in recorder.of(run):
        turn.record(event)
    # Each call named what it used and made: the place and where it was found, each algorithm's input and result.
    places, buffer, extract, chart = (r.artifact for r in results)
    assert places.layer_names == ("schools",) and places.added_names == ["place_nordby_school"]
    assert buffer.layer_names == ("place_nordby_school",) and buffer.added_names == ["nordby_school_2km"]
    (added,) = extract.added
    assert demo_project.mapLayer(added.layer_id).name() == added.name == "schools_near_nordby_school"
    assert chart.layer_names == ("schools_near_nordby_school",) and chart.chart.endswith(".png")

    sources = turn.sources()
    assert sources.layer_names == ["schools"]  # the place came from schools; everything else was made on the way
    assert [a.split(" ")[0] for a in sources.algorithms] == ["native:buffer", "native:extractbylocation"]
    assert sources.algorithms[0] == "native:buffer (INPUT=place_nordby_school, DISTANCE=2000, SEGMENTS=16)"
    assert "INTERSECT=nordby_school_2km" in sources.algorithms[1]
    assert sources.result_names == ["place_nordby_school", "nordby_school_2km", "schools_near_nordby_school"]
    assert not sources.tables and not sources.collections
    (chart,) = sources.charts
    data = json.loads(Path(chart).with_suffix(".json").read_text("utf-8"))
    gpkg = Path(demo_project.fileName()).with_name("elvbury.gpkg")
    assert dict(zip(data["categories"], data["series"][""], strict=True)) == expected_pupils(gpkg)

    # The stored conversation gives the same list back, from the artifacts stored with its tool results.
    future = worker.open_conversation(worker.thread_id)
    wait_until(future.done, 120)  # the Qt loop runs meanwhile: opening asks the main thread for the project
    opened = future.result()
    kinds = [e.kind for e in opened.entries]
    assert kinds == ["user", "tool", "tool", "tool", "tool", "chart", "answer", "sources"]
    restored = opened.entries[-1].args
    assert [layer["name"] for layer in restored["layers"]] == ["schools"]
    assert restored["algorithms"] == sources.algorithms and restored["charts"] == sources.charts
    assert Sources.from_dict(restored) == sources  # every layer with its id
    assert all(layer.layer_id for layer in sources.layers + sources.results)


def test_the_dock_lists_sources_and_a_click_selects_the_layer(panel, model_server, demo_project, qgis_iface):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "rivers"})]),
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {
                            "algorithm": "native:buffer",
                            "parameters": {"INPUT": "rivers", "DISTANCE": 500},
                            "output_name": "rivers_500m",
                        },
                    )
                ]
            ),
            Turn(text="The rivers' 500 m zone is in **rivers_500m**."),
        ]
    )
    type_and_send(panel, "Buffer the rivers by 500 m")
    wait_until(lambda: panel.statuses == ["finished"], 60)
    (view,) = items_of(panel, SourcesView)
    from geogpt_qgis.gui.markdown_view import MarkdownView

    items = panel.chat.items()
    answer = max(i for i, w in enumerate(items) if isinstance(w, MarkdownView))
    assert items.index(view) > answer  # under the answer (with its copy/retry row and thumbs-up)
    assert view.sources.layer_names == ["rivers"] and view.sources.result_names == ["rivers_500m"]
    assert view.sources.algorithms == ["native:buffer (INPUT=rivers, DISTANCE=500)"]
    assert view.header.text() == "Sources (3)" and not view.body.isVisible()
    view.header.click()  # as a click does (QTest.mouseClick at its centre missed it on QGIS 3.44 offscreen)
    wait_until(view.body.isVisible, 120)  # shown as the view lays itself out (QGIS 3.44, final rehearsal)
    wait_until(lambda: view.body.height() > 30, 120)

    # A real click on the link "rivers" in the Layers line.
    rivers = demo_project.mapLayersByName("rivers")[0]
    found = view.body.document().find("rivers")
    probe = QTextCursor(view.body.document())
    probe.setPosition(found.selectionStart() + 2)
    QTest.mouseClick(view.body.viewport(), Qt.MouseButton.LeftButton, pos=view.body.cursorRect(probe).center())
    wait_until(lambda: qgis_iface.activeLayer() is rivers, 120)
    assert "Selected layer rivers" in panel.status.text()
    view.click_layer("rivers_500m")
    assert qgis_iface.activeLayer() is demo_project.mapLayersByName("rivers_500m")[0]
    view.click_layer("gone")
    assert "no longer in the project" in panel.status.text()

    # A restored conversation shows its sources again, and their links still work.
    panel.view.open_conversation(panel.runs.thread_id())
    wait_until(lambda: len(items_of(panel, SourcesView)) == 1 and items_of(panel, SourcesView)[0] is not view, 120)
    restored = items_of(panel, SourcesView)[0]
    assert restored.sources.layer_names == ["rivers"]
    qgis_iface.setActiveLayer(demo_project.mapLayersByName("schools")[0])
    restored.click_layer("rivers")
    assert qgis_iface.activeLayer() is rivers


def test_two_layers_of_one_name_are_told_apart_by_id(panel, demo_project, qgis_iface):
    from qgis.core import QgsVectorLayer

    first = QgsVectorLayer("Point?crs=EPSG:25832", "buffer", "memory")
    second = QgsVectorLayer("Polygon?crs=EPSG:25832", "buffer", "memory")
    demo_project.addMapLayers([first, second])
    ids = [first.id(), second.id()]
    try:
        view = panel.chat.add_sources(
            Sources(layers=[LayerRef.of(first)], results=[LayerRef.of(second), LayerRef("rivers")])
        )
        links = view.body.toHtml()
        assert f"layer:{first.id()}" in links and f"layer:{second.id()}" in links and "layername:rivers" in links
        view.click_layer(LayerRef.of(second))
        assert qgis_iface.activeLayer() is second
        view.click_layer(LayerRef.of(first))
        assert qgis_iface.activeLayer() is first
        assert "Selected layer buffer" in panel.status.text()
        rivers = demo_project.mapLayersByName("rivers")[0]
        view.click_layer("rivers")  # stored without an id: by its name
        assert qgis_iface.activeLayer() is rivers
        gone = LayerRef.of(second)
        demo_project.removeMapLayer(second.id())
        view.click_layer(gone)  # its namesake is still there: never selected in its place
        assert qgis_iface.activeLayer() is rivers and "no longer in the project" in panel.status.text()
    finally:
        for layer_id in ids:
            if demo_project.mapLayer(layer_id) is not None:
                demo_project.removeMapLayer(layer_id)


def test_answers_without_tools_have_no_sources(panel, model_server):
    model_server.script([Turn(text="Hello!")])
    type_and_send(panel, "hi")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    assert not items_of(panel, SourcesView)
