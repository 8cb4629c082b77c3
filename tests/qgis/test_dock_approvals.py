"""Approval cards in the real dock: what they show, the buttons, the policy picker, and a restart in between."""

from __future__ import annotations

from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QLabel

from geogpt_qgis.core.approval import POLICY_ASK, POLICY_NEVER, POLICY_TRUST
from geogpt_qgis.gui.approval_card import ApprovalCard
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import close_dock, items_of, open_dock, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until

CODE = "layer = project.mapLayersByName('parks')[0]\n# give it a clearer name\nlayer.setName('green_spaces')"


def layer_names(project) -> list[str]:
    return sorted(layer.name() for layer in project.mapLayers().values())


def shown_card(panel) -> ApprovalCard:
    wait_until(
        lambda: panel.statuses[-1:] == ["paused"] or bool(panel.statuses and panel.statuses[-1] != "paused"), 120
    )
    assert panel.statuses[-1] == "paused", panel.statuses
    cards = items_of(panel, ApprovalCard)
    assert cards and cards[-1] is panel.runs.awaiting
    return cards[-1]


def click(button) -> None:
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)


def test_the_card_shows_the_code_highlighted_and_approving_an_edit_runs_the_edit(panel, model_server, demo_project):
    model_server.script([Turn(tool_calls=[ToolCall("run_pyqgis", {"code": CODE})]), Turn(text="Renamed.")])
    type_and_send(panel, "rename the parks layer")
    card = shown_card(panel)
    assert panel.status.text() == "Waiting for your approval."
    assert panel.send_button.text() == "Send" and not panel.runs.busy
    assert card.title.text() == "Approval needed: Run PyQGIS code"
    assert "layer 'parks'" in card.affected.text()
    assert card.editor.toPlainText() == CODE and not card.editor.isReadOnly()

    # Highlighted: the comment line and the string carry their own formats.
    def comment_formats() -> list:  # the highlighter formats blocks as the document lays them out
        return card.editor.document().findBlockByNumber(1).layout().formats()

    wait_until(lambda: bool(comment_formats()), 120)
    assert comment_formats()[0].format.fontItalic()
    assert "parks" in layer_names(demo_project)
    # A new message cannot be sent past the card.
    type_and_send(panel, "something else")
    assert panel.runs.awaiting is card and len(model_server.chat_requests()) == 1

    card.editor.setPlainText(CODE.replace("green_spaces", "parks_and_gardens"))
    click(card.approve_button)
    wait_until(lambda: panel.statuses[-1] == "finished", 120)
    assert "parks_and_gardens" in layer_names(demo_project) and "green_spaces" not in layer_names(demo_project)
    assert card.outcome.text() == "Approved (edited)"
    assert not card.approve_button.isEnabled() and card.editor.isReadOnly()
    assert panel.runs.awaiting is None and panel.status.text() == "Done."


def test_rejecting_with_a_reason_tells_the_model(panel, model_server, demo_project):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "remove": True})]),
            Turn(text="I kept the parks layer."),
        ]
    )
    type_and_send(panel, "remove the parks")
    card = shown_card(panel)
    assert card.editor.isReadOnly()  # nothing to edit in a removal
    QTest.keyClicks(card.reason, "the parks are needed for the report")
    click(card.reject_button)
    wait_until(lambda: panel.statuses[-1] == "finished", 120)
    assert "parks" in layer_names(demo_project)
    assert card.outcome.text() == "Rejected: the parks are needed for the report"
    told = model_server.chat_requests()[-1].tool_messages()[-1]["content"]
    assert "Their reason: the parks are needed for the report" in told


def test_approve_all_switches_the_policy_to_trust_until_a_new_conversation(panel, model_server, demo_project):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "remove": True})]),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "landuse", "remove": True})]),
            Turn(text="Removed both."),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "roads", "remove": True})]),
            Turn(text="Removed the roads."),
        ]
    )
    type_and_send(panel, "remove parks and land use")
    click(shown_card(panel).trust_button)
    wait_until(lambda: panel.statuses[-1] == "finished", 120)
    assert panel.policy.currentData() == POLICY_TRUST
    assert PlgOptionsManager.get_plg_settings().approval_policy == POLICY_TRUST
    assert "parks" not in layer_names(demo_project) and "landuse" not in layer_names(demo_project)
    type_and_send(panel, "and the roads")
    wait_until(lambda: len(panel.statuses) == 3, 120)
    assert panel.statuses[-1] == "finished" and "roads" not in layer_names(demo_project)
    assert len(items_of(panel, ApprovalCard)) == 1
    click(panel.new_button)
    assert panel.policy.currentData() == POLICY_ASK


def test_the_never_policy_from_the_picker_refuses_without_a_card(panel, model_server, demo_project):
    panel.policy.setCurrentIndex(panel.policy.findData(POLICY_NEVER))
    assert PlgOptionsManager.get_plg_settings().approval_policy == POLICY_NEVER
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "remove": True})]),
            Turn(text="I am not allowed to."),
        ]
    )
    type_and_send(panel, "remove the parks")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    assert items_of(panel, ApprovalCard) == [] and "parks" in layer_names(demo_project)


def test_drop_gives_up_the_step_and_the_conversation_goes_on(panel, model_server, demo_project):
    model_server.script(
        [Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "remove": True})]), Turn(text="There are 7 layers.")]
    )
    type_and_send(panel, "remove the parks")
    card = shown_card(panel)
    click(card.drop_button)
    assert card.outcome.text() == "Dropped" and panel.runs.awaiting is None
    assert panel.status.text() == "Dropped the step."
    type_and_send(panel, "how many layers?")
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
    assert "parks" in layer_names(demo_project)
    sent = model_server.chat_requests()[-1].body["messages"]
    assert sent[-2]["content"] == "Not done: the user dropped this step."


def test_a_pending_approval_is_shown_again_after_a_restart(qgis_iface, demo_project, tmp_path, model_server):
    """Close the dock (as QGIS does on exit) with a card waiting; a new dock on the same store shows it again."""
    from tests.support.dock import configure

    configure(model_server)
    store = tmp_path / "conversations.sqlite"
    model_server.script(
        [Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "remove": True})]), Turn(text="Removed the parks.")]
    )
    first = open_dock(qgis_iface, demo_project, store)
    type_and_send(first.panel, "remove the parks")
    shown_card(first.panel)
    close_dock(first)

    second = open_dock(qgis_iface, demo_project, store)
    try:
        panel = second.panel
        wait_until(lambda: panel.runs.awaiting is not None, 120)
        card = panel.runs.awaiting
        assert card.title.text() == "Approval needed: Remove layer 'parks' from the project"
        assert panel.status.text() == "Waiting for your approval."
        assert any("waiting for your approval" in label.text() for label in items_of(panel, QLabel))
        assert "parks" in layer_names(demo_project)
        click(card.approve_button)
        wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
        assert "parks" not in layer_names(demo_project)
        assert panel.chat.answer_text() == "Removed the parks."
    finally:
        close_dock(second)


def test_a_restored_approval_whose_layer_is_gone_says_so_and_offers_to_discard(
    qgis_iface, demo_project, tmp_path, model_server
):
    from tests.support.dock import configure

    configure(model_server)
    store = tmp_path / "conversations.sqlite"
    model_server.script([Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "remove": True})])])
    first = open_dock(qgis_iface, demo_project, store)
    type_and_send(first.panel, "remove the parks")
    shown_card(first.panel)
    close_dock(first)
    demo_project.removeMapLayers([layer.id() for layer in demo_project.mapLayersByName("parks")])

    second = open_dock(qgis_iface, demo_project, store)
    try:
        panel = second.panel
        wait_until(lambda: panel.runs.awaiting is not None, 120)
        card = panel.runs.awaiting
        assert card.layer_names() == ["parks"]
        assert card.warning.text() == "'parks' is no longer in the project: this step can no longer run as asked."
        assert card.drop_button.text() == "Discard this step" and card.drop_button.isDefault()
        click(card.drop_button)
        assert panel.runs.awaiting is None and card.outcome.text() == "Dropped"
        assert len(model_server.chat_requests()) == 1  # nothing was run or asked
    finally:
        close_dock(second)
