"""Conversations in the real dock: restored after a restart, listed, renamed, deleted, exported;
the context meter, the run log, and notes on what the user changed between turns."""

from __future__ import annotations

from pathlib import Path

from qgis.core import QgsCoordinateReferenceSystem, QgsFeature, QgsGeometry, QgsPointXY, QgsVectorLayer
from qgis.PyQt.QtWidgets import QLabel

from geogpt_qgis.gui.chat_view import ChatView
from geogpt_qgis.gui.markdown_view import MarkdownView
from geogpt_qgis.gui.tool_step import ToolStepWidget
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import close_dock, configure, items_of, open_dock, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until

THREE_TURNS = [
    Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
    Turn(text="There are **31 schools**."),
    Turn(text="Nordby has the most."),
    Turn(tool_calls=[ToolCall("select_features", {"layer": "schools", "expression": "\"type\" = 'primary'"})]),
    Turn(text="Selected the 16 primary schools."),
]
QUESTIONS = ["How many schools are there?", "Which district has most?", "Select the primary ones"]


def said(content: str) -> str:
    """What the user typed: a message without the project's state the plugin put ahead of it for the model."""
    if content.startswith("[Open project: "):
        return content.split("]\n\n", 1)[1]
    return content


def ask_all(panel, questions: list[str]) -> None:
    for question in questions:
        done = len(panel.statuses)
        type_and_send(panel, question)
        wait_until(lambda n=done: len(panel.statuses) > n, 120)
        assert panel.statuses[-1] == "finished"


def user_messages(view: ChatView) -> list[str]:
    return [w.text() for w in view.items() if w.objectName() == "geogptUserMessage"]


def test_the_last_conversation_comes_back_after_a_restart_and_the_model_remembers(
    qgis_iface, demo_project, tmp_path, model_server
):
    configure(model_server)
    store = tmp_path / "conversations.sqlite"
    model_server.script(list(THREE_TURNS))
    first = open_dock(qgis_iface, demo_project, store)
    ask_all(first.panel, QUESTIONS)
    shown_before = first.panel.chat.answer_text()
    close_dock(first)

    second = open_dock(qgis_iface, demo_project, store)
    try:
        panel = second.panel
        wait_until(lambda: len(user_messages(panel.chat)) == 3, 120)
        assert user_messages(panel.chat) == QUESTIONS
        assert panel.chat.answer_text() == shown_before
        steps = items_of(panel, ToolStepWidget)
        assert [(s.name, s.ok) for s in steps] == [("describe_layer", True), ("select_features", True)]
        assert "31 features" in steps[0].result
        assert panel.conversation_bar.title.text() == QUESTIONS[0]
        assert panel.status.text() == "Conversation restored."
        # The model receives the earlier turns with the new message.
        model_server.script([Turn(text="Yes, 16 are selected.")])
        type_and_send(panel, "Are they still selected?")
        wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
        sent = model_server.chat_requests()[-1].body["messages"]
        # The first question of each session carries the project's state ahead of it (a note for the model).
        assert [said(m["content"]) for m in sent if m["role"] == "user"] == [*QUESTIONS, "Are they still selected?"]
        assert sent[1]["content"].startswith("[Open project: ") and sent[-1]["content"].startswith("[Open project: ")
        turn_with_tool, plain_turn = ["user", "assistant", "tool", "assistant"], ["user", "assistant"]
        assert [m["role"] for m in sent[1:]] == [*turn_with_tool, *plain_turn, *turn_with_tool, "user"]
    finally:
        close_dock(second)


def test_the_list_resumes_renames_exports_and_deletes(panel, model_server, demo_project, tmp_path):
    model_server.script(list(THREE_TURNS[:2]))
    ask_all(panel, QUESTIONS[:1])
    first = panel.runs.thread_id()
    panel.view.new_conversation()
    model_server.script([Turn(text="Hello! Ask me about your map.")])
    ask_all(panel, ["hello"])

    panel.conversation_bar.list_button.click()
    wait_until(lambda: panel.conversations.list.count() == 2, 120)
    assert panel.pages.currentWidget() is panel.conversations
    titles = [panel.conversations.list.item(i).text().splitlines()[0] for i in range(2)]
    assert titles == ["hello (current)", QUESTIONS[0]]
    assert "elvbury.qgz · 1 turn" in panel.conversations.list.item(1).text()

    # Only this project: a conversation from another project disappears from the filtered list.
    demo_project.setFileName(str(tmp_path / "another.qgz"))
    listed = []
    panel.conversations_listed.connect(lambda: listed.append(panel.conversations.thread_ids()))
    panel.conversations.only_project.setChecked(True)
    wait_until(lambda: bool(listed), 120)
    assert listed[-1] == []
    panel.conversations.only_project.setChecked(False)
    wait_until(lambda: len(listed) == 2, 120)

    panel.conversations.select(first)
    panel.conversations.open_button.click()
    wait_until(lambda: user_messages(panel.chat) == QUESTIONS[:1], 120)
    assert panel.pages.currentWidget() is panel.chat
    assert panel.runs.thread_id() == first

    panel.view.rename_conversation(first, "School count")
    wait_until(lambda: panel.conversation_bar.title.text() == "School count", 120)

    out = tmp_path / "school_count.md"
    panel.view.export_conversation(first, str(out))
    wait_until(out.exists, 120)
    exported = out.read_text(encoding="utf-8")
    assert exported.startswith("# School count\n")
    assert "**Tool `describe_layer`** ✓" in exported and "There are **31 schools**." in exported

    panel.view.delete_conversation(first)
    wait_until(lambda: panel.status.text() == "Conversation deleted.", 120)
    assert panel.chat.items() == [] and panel.conversation_bar.title.text() == "Untitled conversation"
    panel.view.show_conversations()
    wait_until(lambda: panel.conversations.list.count() == 1, 120)


def test_the_context_meter_and_the_run_log(panel, model_server):
    model_server.script(list(THREE_TURNS[:2]))
    assert panel.meter.value() == 0
    ask_all(panel, QUESTIONS[:1])
    assert 0 < panel.meter.value() < 100
    assert panel.meter.limit == 8192  # the scripted model's window is larger than the setting
    assert f"{panel.meter.used:,} of 8,192 tokens" in panel.meter.toolTip()
    panel.view.show_run_log()
    wait_until(lambda: bool(panel.view.dialogs), 120)
    dialog = panel.view.dialogs[-1]
    assert dialog.isVisible()
    assert "### Run 1: How many schools are there?" in dialog.markdown
    assert "✓ describe_layer" in dialog.markdown and "2 model calls" in dialog.markdown
    assert "Run 1: How many schools are there?" in dialog.browser.toPlainText()
    dialog.close()


def wells_layer() -> QgsVectorLayer:
    layer = QgsVectorLayer("Point?crs=EPSG:25832&field=name:string", "wells", "memory")
    features = []
    for i in range(3):
        feature = QgsFeature(layer.fields())
        feature.setAttributes([f"well {i}"])
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(500_000 + i, 6_000_000)))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def test_changes_between_turns_reach_the_model_as_a_note(panel, model_server, demo_project):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("select_features", {"layer": "schools", "expression": '"pupils" > 500'})]),
            Turn(text="Selected them."),
            Turn(text="I see the wells layer."),
        ]
    )
    ask_all(panel, ["Select the big schools"])  # the agent's own selection is not news to it
    demo_project.addMapLayer(wells_layer())
    demo_project.mapLayersByName("parks")[0].setName("green_spaces")
    demo_project.removeMapLayer(demo_project.mapLayersByName("roads")[0])
    demo_project.mapLayersByName("hospitals")[0].selectByExpression("TRUE")
    demo_project.setCrs(QgsCoordinateReferenceSystem("EPSG:3857"))
    ask_all(panel, ["What changed?"])

    note = (
        "Since your last answer, the user added layer 'wells' (Point, 3 features); removed layer 'roads'; "
        "renamed layer 'parks' to 'green_spaces'; selected 4 of 4 features in 'hospitals'; "
        "changed the project CRS from EPSG:25832 to EPSG:3857."
    )
    sent = model_server.chat_requests()[-1].body["messages"]
    assert sent[-1] == {"role": "user", "content": f"[{note}]\n\nWhat changed?"}
    first_turn = next(m for m in sent if m["role"] == "user")
    assert first_turn["content"].startswith("[Open project: ")
    assert said(first_turn["content"]) == "Select the big schools"
    notices = [w.text() for w in panel.chat.items() if isinstance(w, QLabel) and w.property("level") == "info"]
    assert note in notices
    # Nothing changed since: no note the next time.
    model_server.script([Turn(text="Nothing new.")])
    ask_all(panel, ["And now?"])
    assert model_server.chat_requests()[-1].body["messages"][-1]["content"] == "And now?"


def test_a_new_conversation_is_not_told_about_earlier_changes(panel, model_server, demo_project):
    demo_project.addMapLayer(wells_layer())
    model_server.script([Turn(text="Eight layers.")])
    ask_all(panel, ["How many layers?"])
    # It is told the project as it is now (wells included), not what changed before it began.
    content = model_server.chat_requests()[-1].body["messages"][-1]["content"]
    assert said(content) == "How many layers?"
    assert "'wells' (Point, 3 features)" in content and "Since your last answer" not in content


def test_restored_answers_are_rendered_once(panel, model_server, qgis_iface, demo_project, tmp_path):
    """A restored conversation shows each answer in one finished view (no streaming leftovers)."""
    model_server.script([Turn(text="| a | b |\n|---|---|\n| 1 | 2 |\n\nDone.")])
    ask_all(panel, ["table please"])
    panel.view.open_conversation(panel.runs.thread_id())
    wait_until(lambda: len(panel.chat.items()) == 2 and isinstance(panel.chat.items()[1], MarkdownView), 120)
    view = panel.chat.items()[1]
    assert view.source_text == "| a | b |\n|---|---|\n| 1 | 2 |\n\nDone."
    rendered = view.document().toPlainText()
    assert "a\nb\n1\n2" in rendered and "|" not in rendered  # a table, not its Markdown source
    assert PlgOptionsManager.get_plg_settings().last_thread_id == panel.runs.thread_id()
    assert Path(tmp_path / "store.sqlite").exists()
