"""The dock at 300, 450 and 800 px: nothing sticks out, the chat never scrolls sideways, the dock keeps its width.

The real dock against a scripted server on 127.0.0.1, through first run, an
answer with a wide table and code, tool steps, an approval card and a stopped
run; after each, every visible widget is checked against the width it is shown in.
"""

from __future__ import annotations

import pytest
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QApplication

from geogpt_qgis.gui.markdown_view import MarkdownView
from geogpt_qgis.gui.server_state import ServerStatus
from tests.support.dock import items_of, type_and_send
from tests.support.layout_check import chat_overflow, sticking_out
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until

WIDTHS = (300, 450, 800)
TABLE = (
    "| district | schools | pupils | nearest_hospital_distance_m | share_of_children_within_walking_distance |\n"
    "|---|---|---|---|---|\n"
    + "".join(f"| District_{i}_Elvbury_Nordre | {i} | {i * 420} | {i * 1234.5:.1f} | {i * 7}% |\n" for i in range(1, 6))
)
ANSWER = (
    "**Schools per district**, with a long unbroken identifier "
    "`schools_within_district_boundaries_2024_final_version` and a table:\n\n"
    f"{TABLE}\n"
    "The query:\n\n```sql\nSELECT d.name, count(s.*) AS schools, sum(s.pupils) AS pupils_total_for_district "
    "FROM districts d JOIN schools s ON ST_Contains(d.geom, s.geom) "
    "GROUP BY d.name ORDER BY pupils_total_for_district DESC;\n```\n"
)
CODE = "layer = project.mapLayersByName('parks')[0]\nlayer.setName('green_spaces_of_the_whole_town_of_elvbury_nordre')"


def settle() -> None:
    for _ in range(5):
        QApplication.processEvents()


def check(dock, width: int, stage: str) -> None:
    dock.resize(width, 700)
    settle()
    panel = dock.panel
    assert dock.width() == width, f"{stage}: the dock is {dock.width()} px wide, set to {width}"
    assert sticking_out(panel) == [], stage
    assert chat_overflow(panel.chat) == 0, stage
    for view in items_of(panel, MarkdownView):  # what cannot wrap scrolls inside its own box, never clipped
        wider = view.document().size().width() > view.viewport().width() + 1
        assert not wider or view.horizontalScrollBar().isVisible(), stage


@pytest.mark.parametrize("width", WIDTHS)
def test_the_dock_fits_its_width_through_a_whole_session(panel, model_server, width):
    dock = panel.parentWidget()
    assert panel.minimumSizeHint().width() <= 300
    wait_until(lambda: panel.model_bar.state.status == ServerStatus.READY, 120)
    check(dock, width, "first run")
    assert panel.first_run.isVisible()
    # Short labels only when the full ones do not fit; the full one stays in the tooltip.
    if width != 450:  # at 450 px it depends on the font
        assert panel.new_button.text() == ("+" if width == 300 else "New conversation")
    assert panel.new_button.toolTip() == "New conversation"

    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
            Turn(text=ANSWER, chunk_delay=0.001),
        ]
    )
    type_and_send(panel, "Schools per district, as a table, with the SQL")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    check(dock, width, "answer with a table and code")
    table_view = next(v for v in items_of(panel, MarkdownView) if "District_1" in v.toPlainText())
    assert table_view.width() <= panel.chat.viewport().width()
    if width == 300:  # the table cannot wrap to 300 px: it scrolls in its box
        assert table_view.horizontalScrollBar().isVisible()
        assert table_view.height() > table_view.viewport().height()

    model_server.script([Turn(tool_calls=[ToolCall("run_pyqgis", {"code": CODE})])])
    type_and_send(panel, "rename the parks layer")
    wait_until(lambda: panel.statuses[-1:] == ["paused"], 120)
    check(dock, width, "approval card")
    QTest.mouseClick(panel.runs.awaiting.reject_button, Qt.MouseButton.LeftButton)
    model_server.script([Turn(text="Fine. " * 5), Turn(text="token " * 400, chunk_delay=0.02)])
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)

    type_and_send(panel, "Write a long essay")
    wait_until(lambda: "token" in items_of(panel, MarkdownView)[-1].toPlainText(), 120)
    QTest.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
    wait_until(lambda: panel.statuses[-1] == "cancelled", 120)
    check(dock, width, "stopped run")
    # Narrower again, then wider: the content re-wraps both ways.
    for other in (300, 800, width):
        check(dock, other, f"resized to {other}")


def test_a_long_conversation_title_is_elided_in_the_bar_and_whole_in_its_tooltip(panel):
    title = "Which schools in the northern districts have more than five hundred pupils and a sports hall?"
    panel.conversation_bar.set_title(title)
    check(panel.parentWidget(), 300, "long title")
    label = panel.conversation_bar.title
    assert label.text() == title and label.toolTip() == title
    shown = label.fontMetrics().elidedText(title, Qt.TextElideMode.ElideRight, label.contentsRect().width())
    assert shown.endswith("…") and len(shown) < len(title)


def test_one_model_is_one_model(qgis_app):
    from geogpt_qgis.gui.server_queries import connected_text

    assert connected_text(["qwen3:8b"]) == "Connected: 1 model available."
    assert connected_text(["a", "b"]) == "Connected: 2 models available."
