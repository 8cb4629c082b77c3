"""One Markdown path: a streamed answer looks exactly as the same answer reopened; no raw marks while streaming."""

from __future__ import annotations

from geogpt_qgis.gui.markdown_view import CODE_BACKGROUND, MarkdownView, plain_preview

ANSWER = (
    "**Ten schools** have more than 500 pupils:\n\n"
    "| type | schools |\n|---|---|\n| secondary | 10 |\n\n"
    "> Most are in *Nordby*.\n\n"
    "- first\n- second\n\n"
    "```sql\nSELECT type, count(*)\nFROM schools;\n```\n\n"
    "Ask me for the `districts` next."
)


def test_streamed_and_reopened_answers_render_the_same(qgis_app):
    streamed = MarkdownView()
    for index in range(0, len(ANSWER), 2):
        streamed.append_stream(ANSWER[index : index + 2])
    streamed.finish_stream()
    reopened = MarkdownView()
    reopened.set_markdown(ANSWER)
    assert streamed.toHtml() == reopened.toHtml()
    assert streamed.source_text == reopened.source_text == ANSWER


def test_no_raw_markdown_marks_show_while_streaming(qgis_app):
    view = MarkdownView()
    seen = []
    for index in range(0, len(ANSWER), 3):
        view.append_stream(ANSWER[index : index + 3])
        seen.append(view.toPlainText())
    for shown in seen:
        assert "**" not in shown and "```" not in shown and "|---" not in shown and "`" not in shown, shown
    assert plain_preview("## A *title* with `code`\n- item") == "A title with code\n• item"


def test_code_blocks_sit_on_a_tinted_ground(qgis_app):
    view = MarkdownView()
    view.set_markdown(ANSWER)
    grounds = {}
    block = view.document().begin()
    while block.isValid():
        grounds[block.text()] = block.blockFormat().background().color()
        block = block.next()
    assert grounds["FROM schools;"] == CODE_BACKGROUND
    assert grounds["Ask me for the districts next."] != CODE_BACKGROUND


def test_a_finished_answer_offers_copy_and_retry(panel, model_server):
    from qgis.PyQt.QtCore import Qt
    from qgis.PyQt.QtGui import QGuiApplication
    from qgis.PyQt.QtTest import QTest

    from geogpt_qgis.gui.answer_actions import AnswerActions
    from tests.support.dock import items_of, type_and_send
    from tests.support.model_server import Turn
    from tests.support.runs import wait_until

    model_server.script([Turn(text=ANSWER), Turn(text="Again: **ten**.")])
    type_and_send(panel, "How many big schools?")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    actions = items_of(panel, AnswerActions)
    assert len(actions) == 1 and actions[0].answer == ANSWER
    QTest.mouseClick(actions[0].copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == ANSWER
    QTest.mouseClick(actions[0].retry_button, Qt.MouseButton.LeftButton)
    wait_until(lambda: panel.statuses == ["finished", "finished"], 120)
    asked = [r.body["messages"][-1]["content"] for r in model_server.chat_requests()]
    assert asked[-1].endswith("How many big schools?") and len(asked) == 2
    assert [a.answer for a in items_of(panel, AnswerActions)] == [ANSWER, "Again: **ten**."]
