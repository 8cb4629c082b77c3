"""The approval card's shape: one-line title, the facts from the call, primary Approve, shortcuts, folding.

Cards built from real requests (the ones the tools make) and one through the
real dock, where Ctrl+Enter approves and the decided card folds to one line.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QApplication, QLabel

from geogpt_qgis.core.approval import ApprovalRequest
from geogpt_qgis.gui.approval_card import ApprovalCard
from tests.support.dock import items_of, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until

SQL = "UPDATE schools SET pupils = pupils + 1 WHERE district = 'Nordby' AND type = 'secondary' AND pupils > 500"


def _request(**changes) -> dict:
    request = ApprovalRequest(
        "Run SQL on 'town' that changes data",
        SQL,
        "sql",
        ["table schools"],
        "sql",
        "run_sql",
        "c1",
        {"sql": SQL, "connection": "town", "output": "/tmp/results/schools_updated.gpkg"},
    )
    return {**request.to_dict(), **changes}


def test_the_card_lists_the_facts_but_not_the_code_twice_and_keeps_code_lines(qgis_app):
    card = ApprovalCard(_request())
    facts = card.affected.text()
    assert "table schools" in facts and "connection: <b>town</b>" in facts
    assert "schools_updated.gpkg" in facts and "UPDATE" not in facts  # the SQL is in its own box
    assert card.editor.toPlainText() == SQL and card.editor.lineWrapMode() == card.editor.LineWrapMode.NoWrap
    assert card.title.text() == "Approval needed: Run SQL on 'town' that changes data"
    assert card.title.toolTip() == card.title.text()
    card.resize(260, 400)
    card.show()
    QApplication.processEvents()
    assert card.title.height() < 2 * card.title.fontMetrics().lineSpacing()  # one line, elided
    assert card.approve_button.isDefault() and card.approve_button.objectName() == "geogptApprove"
    card.close()


def test_an_algorithms_parameters_become_facts_and_long_values_are_left_out(qgis_app):
    args = {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100, "NOTE": "x" * 500}}
    card = ApprovalCard(_request(args=args, details="", editable=None, language=""))
    facts = card.affected.text()
    assert "INPUT: <b>rivers</b>" in facts and "DISTANCE: <b>100</b>" in facts and "x" * 200 not in facts
    assert not card.editor.isVisibleTo(card)


def test_ctrl_enter_approves_and_the_decided_card_folds_to_one_line(panel, model_server, demo_project):
    code = "layer = project.mapLayersByName('parks')[0]\nlayer.setName('green_spaces')"
    model_server.script([Turn(tool_calls=[ToolCall("run_pyqgis", {"code": code})]), Turn(text="Renamed.")])
    before = len(panel.statuses)
    type_and_send(panel, "rename the parks layer")
    wait_until(lambda: len(panel.statuses) > before, 120)  # however the run stops, the failure says how
    assert panel.statuses[-1:] == ["paused"], (panel.statuses, [w.text() for w in items_of(panel, QLabel)])
    card = panel.runs.awaiting
    open_height = card.height()

    def editor_focused() -> bool:  # shortcuts go to the active window's focus (offscreen has none by itself)
        QApplication.setActiveWindow(card.window())
        card.editor.setFocus()
        return QApplication.focusWidget() is card.editor

    wait_until(editor_focused, 30)
    QTest.keyClick(card.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    wait_until(lambda: panel.statuses[-1] == "finished", 120)
    assert card.outcome.text() == "Approved" and card.title.text() == "Run PyQGIS code"
    assert not card.body.isVisible() and card.outcome.isVisible()
    wait_until(lambda: card.height() < open_height / 2, 120)
    assert card.height() < 3 * card.fontMetrics().lineSpacing() + 30
    assert "green_spaces" in [layer.name() for layer in demo_project.mapLayers().values()]
    QTest.mouseClick(card.reject_button, Qt.MouseButton.LeftButton)  # decided: nothing more happens
    assert panel.statuses[-1] == "finished" and len(model_server.chat_requests()) == 2


def test_a_tool_step_is_a_readable_chip_whose_table_result_is_a_real_table(qgis_app):
    from geogpt_qgis.gui.tool_step import ToolStepWidget

    step = ToolStepWidget("c1", "select_features", {"layer": "schools", "expression": '"pupils" > 500'})
    assert step.header.text() == 'Select features: schools, "pupils" > 500 · running…'
    step.finish(True, "Selected 10 of 31 features in 'schools'.\n| type | n |\n|---|---|\n| primary | 4 |", 0.012)
    assert step.header.text() == "Selected 10 of 31 features in 'schools'. · ✓ 0.01 s"
    tables = [f for f in step.text.document().rootFrame().childFrames() if f.__class__.__name__ == "QTextTable"]
    assert len(tables) == 1 and tables[0].rows() == 2 and tables[0].columns() == 2
    assert "pupils" in step.text.toPlainText() and "|---|" not in step.text.toPlainText()
    failed = ToolStepWidget("c2", "run_sql", {"sql": "SELEC 1"})
    failed.finish(False, "syntax error at or near SELEC", 0.5)
    assert failed.header.text() == "Run sql: SELEC 1 · ✗ 0.50 s"  # a failure is not summarised as done
    assert "syntax error" in failed.text.toPlainText()
