"""Undo run in the real dock: a scripted model changes the project through the tools, one click puts it back."""

from __future__ import annotations

from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtTest import QTest

from geogpt_qgis.core.approval import POLICY_TRUST
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.undo_scope import NOT_UNDONE
from geogpt_qgis.gui.approval_card import ApprovalCard
from geogpt_qgis.gui.undo_run_action import UndoRunAction
from geogpt_qgis.tools.project import run_snapshot
from tests.support.dock import items_of, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until


def click(button) -> None:
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)


def state(project, canvas) -> tuple:
    snapshot = run_snapshot.take(project, canvas, keep=False)
    layers = tuple((s.ident, s.name, s.style_digest, s.selection, s.edits) for s in snapshot.layers)
    return layers, snapshot.tree, snapshot.custom_order


def test_undo_run_in_the_dock_puts_back_layers_names_order_styles_selection_view_and_edits(
    panel, model_server, demo_project, qgis_iface
):
    canvas = qgis_iface.mapCanvas()
    before = state(demo_project, canvas)
    view = run_snapshot.view_state(demo_project, canvas)
    layer_ids = set(demo_project.mapLayers())
    schools = demo_project.mapLayersByName("schools")[0]
    model_server.script(
        [
            Turn(
                tool_calls=[
                    ToolCall(
                        "run_algorithm",
                        {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 50}},
                    )
                ]
            ),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "name": "green_spaces", "move": "top"})]),
            Turn(tool_calls=[ToolCall("label_layer", {"layer": "districts", "text": "name"})]),
            Turn(tool_calls=[ToolCall("select_features", {"layer": "schools", "expression": "\"type\" = 'primary'"})]),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "hospitals", "zoom": True})]),
            Turn(
                tool_calls=[
                    ToolCall(
                        "edit_features", {"layer": "schools", "expression": "\"type\" = 'secondary'", "delete": True}
                    )
                ]
            ),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "roads", "remove": True})]),
            Turn(text="Done: buffered, renamed, labelled, selected, zoomed, edited and removed."),
        ]
    )
    panel.composer.choose_policy(POLICY_TRUST)
    type_and_send(panel, "do a few things")
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
    assert not items_of(panel, ApprovalCard) or all(not card.pending for card in items_of(panel, ApprovalCard))
    assert state(demo_project, canvas) != before
    assert schools.isEditable() and schools.selectedFeatureCount() == 16
    assert not demo_project.mapLayersByName("roads") and demo_project.mapLayersByName("green_spaces")
    offers = items_of(panel, UndoRunAction)
    assert len(offers) == 1
    offer = offers[0]
    assert offer.button.isEnabled() and offer.button.text() == "Undo run"
    assert "renamed layer 'parks' to 'green_spaces'" in offer.button.toolTip()
    assert "removed layer 'roads'" in offer.button.toolTip()

    click(offer.button)
    assert offer.report.isVisible() and offer.report.text().startswith("Run undone: ")
    assert not offer.button.isEnabled() and offer.button.text() == "Undone"
    assert set(demo_project.mapLayers()) == layer_ids
    assert state(demo_project, canvas) == before
    assert view.close_to(run_snapshot.view_state(demo_project, canvas))
    assert not schools.isEditable() and schools.featureCount() == 31


def test_undo_run_in_the_dock_is_disabled_while_the_user_changed_the_project_since(panel, model_server, demo_project):
    model_server.script(
        [Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "name": "green_spaces"})]), Turn(text="Renamed.")]
    )
    type_and_send(panel, "rename the parks")
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
    offer = items_of(panel, UndoRunAction)[0]
    assert offer.button.isEnabled()
    demo_project.mapLayersByName("roads")[0].setName("streets")  # the user, after the run
    wait_until(lambda: not offer.button.isEnabled(), 10)  # checked again on the project's change
    assert "since it ended, layer 'roads' was renamed to 'streets'" in offer.button.toolTip()
    offer.run_undo()
    assert demo_project.mapLayersByName("green_spaces")  # nothing was undone
    assert offer.report.text().startswith("Cannot undo this run: since it ended, layer 'roads'")
    demo_project.mapLayersByName("streets")[0].setName("roads")
    wait_until(lambda: offer.button.isEnabled(), 10)
    click(offer.button)
    assert demo_project.mapLayersByName("parks") and not demo_project.mapLayersByName("green_spaces")


def test_undo_run_is_not_offered_after_a_run_that_changed_nothing(panel, model_server):
    model_server.script([Turn(tool_calls=[ToolCall("describe_layer", {"layer": "parks"})]), Turn(text="Parks.")])
    type_and_send(panel, "describe the parks")
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
    assert items_of(panel, UndoRunAction) == []


def test_undo_run_note_on_the_dock_approval_card_of_a_file_write_and_undo_keeps_the_file(
    panel, model_server, demo_project, tmp_path
):
    target = tmp_path / "schools_buffer.gpkg"
    args = {"algorithm": "native:buffer", "parameters": {"INPUT": "schools", "DISTANCE": 10, "OUTPUT": str(target)}}
    model_server.script([Turn(tool_calls=[ToolCall("run_algorithm", args)]), Turn(text="Written.")])
    type_and_send(panel, "buffer the schools into a file")
    wait_until(lambda: panel.statuses[-1:] == ["paused"], 120)
    card = panel.runs.awaiting
    assert isinstance(card, ApprovalCard)
    assert NOT_UNDONE[Effect.WRITE_FILE] in card.affected.text()  # said before it runs
    click(card.approve_button)
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
    assert target.is_file()
    offer = items_of(panel, UndoRunAction)[0]
    click(offer.button)
    assert offer.button.text() == "Undone"
    assert target.is_file()  # the file written outside the project stays, as the card said


def test_undo_run_is_offered_when_the_step_waiting_for_approval_is_dropped(panel, model_server, demo_project):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "name": "green_spaces"})]),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "roads", "remove": True})]),
        ]
    )
    type_and_send(panel, "rename the parks, then remove the roads")
    wait_until(lambda: panel.statuses[-1:] == ["paused"], 120)
    assert items_of(panel, UndoRunAction) == []  # the question is not over while it waits
    panel.runs.drop_pending()
    offer = items_of(panel, UndoRunAction)[0]
    click(offer.button)
    assert demo_project.mapLayersByName("parks") and demo_project.mapLayersByName("roads")
