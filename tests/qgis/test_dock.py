"""The chat dock in real QGIS widgets: type, watch it stream, open tool steps, stop, start over."""

from __future__ import annotations

import time

from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtGui import QFont, QTextCursor
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QLabel

from geogpt_qgis.gui.chat_panel import ChatPanel
from geogpt_qgis.gui.dock import ChatDock
from geogpt_qgis.gui.markdown_view import MarkdownView
from geogpt_qgis.gui.server_state import ServerStatus
from geogpt_qgis.gui.tool_step import ToolStepWidget
from geogpt_qgis.toolbelt import dependencies
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import configure, items_of, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.net import free_port
from tests.support.runs import wait_until

ANSWER = (
    "There are **16 primary schools** in *Elvbury*.\n\n"
    "| district | schools |\n|---|---|\n| Centre | 3 |\n| Nordby | 2 |\n\n"
    "- selected in the map\n- zoomed to them\n"
)


def test_a_typed_question_streams_an_answer_with_tool_steps(panel, model_server, demo_project):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
            Turn(tool_calls=[ToolCall("select_features", {"layer": "schools", "expression": "\"type\" = 'primary'"})]),
            Turn(text=ANSWER, chunk_delay=0.002),
        ]
    )
    type_and_send(panel, "Which schools are primary?")
    assert panel.input.toPlainText() == ""
    assert panel.send_button.text() == "Stop"
    wait_until(lambda: panel.statuses == ["finished"], 120)
    assert panel.send_button.text() == "Send"
    assert panel.status.text() == "Done."

    user = [w for w in items_of(panel, QLabel) if w.objectName() == "geogptUserMessage"]
    assert [w.text() for w in user] == ["Which schools are primary?"]
    steps = items_of(panel, ToolStepWidget)
    assert [s.name for s in steps] == ["describe_layer", "select_features"]
    assert all(s.ok for s in steps)
    # A chip that reads as a sentence (the result's first line); the raw call in its tooltip.
    assert steps[1].header.text().startswith("Selected 16 of 31 features in 'schools' where \"type\" = 'primary'. · ✓ ")
    assert steps[1].header.toolTip().startswith('select_features(layer="schools"')
    # Steps start collapsed; a click shows the arguments and the result.
    assert not steps[1].body.isVisible()
    QTest.mouseClick(steps[1].header, Qt.MouseButton.LeftButton)
    assert steps[1].body.isVisible()
    assert "Selected 16 of 31 features in 'schools'" in steps[1].text.toPlainText()
    assert demo_project.mapLayersByName("schools")[0].selectedFeatureCount() == 16

    views = items_of(panel, MarkdownView)
    assert len(views) == 1
    view = views[0]
    assert view.source_text == ANSWER
    plain = view.toPlainText()
    assert "**" not in plain and "|---|" not in plain  # rendered, not raw Markdown
    assert "There are 16 primary schools in Elvbury." in plain
    assert _is_bold(view, "16 primary schools")
    tables = [frame for frame in view.document().rootFrame().childFrames() if frame.__class__.__name__ == "QTextTable"]
    assert len(tables) == 1 and tables[0].rows() == 3 and tables[0].columns() == 2


def _is_bold(view: MarkdownView, text: str) -> bool:
    cursor = view.document().find(text)
    assert not cursor.isNull(), text
    probe = QTextCursor(view.document())
    probe.setPosition(cursor.selectionStart() + 1)
    return probe.charFormat().fontWeight() >= QFont.Weight.Bold


def test_the_panel_is_built_only_when_the_dock_is_first_shown(qgis_iface, demo_project, tmp_path):
    dock = ChatDock(qgis_iface, demo_project, store_path=tmp_path / "store.sqlite")
    assert dock._panel is None
    assert dock.widget() is None
    dock.show()
    assert isinstance(dock.widget(), ChatPanel)
    dock.shutdown()
    dock.deleteLater()


def test_incremental_rendering_matches_rendering_the_whole_answer(qgis_app):
    streamed = MarkdownView()
    for index in range(0, len(ANSWER), 3):
        streamed.append_stream(ANSWER[index : index + 3])
    streamed.finish_stream()
    whole = MarkdownView()
    whole.set_markdown(ANSWER)
    assert streamed.toPlainText().split() == whole.toPlainText().split()
    assert streamed.source_text == ANSWER


def test_stop_button_ends_a_streaming_answer_and_the_next_message_works(panel, model_server):
    model_server.script([Turn(text="token " * 500, chunk_delay=0.02)])
    type_and_send(panel, "Write a long essay")
    wait_until(
        lambda: bool(items_of(panel, MarkdownView)) and "token" in items_of(panel, MarkdownView)[0].toPlainText(),
        120,
    )
    pressed = time.monotonic()
    QTest.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
    wait_until(lambda: panel.statuses == ["cancelled"], 5)
    assert time.monotonic() - pressed < 1.0
    assert panel.send_button.text() == "Send"
    notices = [w.text() for w in items_of(panel, QLabel) if w.property("level") == "warning"]
    assert notices == ["Stopped."]
    partial = items_of(panel, MarkdownView)[0].source_text
    wait_until(lambda: time.monotonic() - pressed > 0.5)
    assert items_of(panel, MarkdownView)[0].source_text == partial  # nothing more arrives
    model_server.script([Turn(text="Short.")])
    type_and_send(panel, "Short answer please")
    wait_until(lambda: panel.statuses == ["cancelled", "finished"], 120)
    assert items_of(panel, MarkdownView)[-1].source_text == "Short."


def test_a_dead_server_is_reported_and_the_dock_stays_usable(panel, model_server):
    PlgOptionsManager.set_value("ollama_url", f"http://127.0.0.1:{free_port()}")
    type_and_send(panel, "Hello?")
    wait_until(lambda: panel.statuses == ["failed"], 120)
    errors = [w.text() for w in items_of(panel, QLabel) if w.property("level") == "error"]
    assert len(errors) == 1 and errors[0].startswith("Cannot reach the Ollama server at http://127.0.0.1:")
    assert panel.send_button.text() == "Send" and panel.input.isEnabled()
    PlgOptionsManager.set_value("ollama_url", model_server.url)
    model_server.script([Turn(text="I am here.")])
    type_and_send(panel, "Hello again")
    wait_until(lambda: panel.statuses == ["failed", "finished"], 120)
    assert items_of(panel, MarkdownView)[-1].source_text == "I am here."


def test_tool_progress_shows_in_the_step_and_the_status(panel):
    from geogpt_qgis.core.events import ToolFinished, ToolProgress, ToolStarted

    panel.runs.run_id = 7
    panel.runs._on_event(7, ToolStarted("c1", "run_algorithm", {"algorithm": "native:buffer"}))
    panel.runs._on_event(7, ToolProgress("c1", "run_algorithm", 42.0, "native:buffer"))
    step = items_of(panel, ToolStepWidget)[-1]
    assert step.header.text().endswith("running… 42%")
    assert panel.status.text() == "Running run_algorithm… 42%"
    panel.runs._on_event(7, ToolFinished("c1", "run_algorithm", True, "done", 1.5))
    assert step.header.text().endswith("✓ 1.50 s")
    panel.runs.run_id = None


def test_shift_enter_adds_a_line_instead_of_sending(panel, model_server):
    QTest.keyClicks(panel.input, "first line")
    QTest.keyClick(panel.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(panel.input, "second line")
    assert panel.input.toPlainText() == "first line\nsecond line"
    assert panel.runs.run_id is None


def test_new_conversation_clears_the_view_and_the_memory(panel, model_server):
    model_server.script([Turn(text="Hello, Ann."), Turn(text="Hi.")])
    type_and_send(panel, "My name is Ann")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    QTest.mouseClick(panel.new_button, Qt.MouseButton.LeftButton)
    wait_until(lambda: not panel.chat.items(), 120)
    type_and_send(panel, "Who am I?")
    wait_until(lambda: panel.statuses == ["finished", "finished"], 120)
    sent = [m["content"] for m in model_server.chat_requests()[-1].body["messages"][1:]]
    # Only the new question, which carries the project's state ahead of it (the first of a conversation does).
    assert len(sent) == 1 and "Ann" not in sent[0]
    assert sent[0].startswith("[Open project: 'Elvbury demo town'") and sent[0].endswith("]\n\nWho am I?")


def test_missing_packages_are_named_and_nothing_runs(panel, model_server, monkeypatch):
    monkeypatch.setitem(dependencies.REQUIRED_MODULES, "geogpt_no_such_module", "geogpt-no-such-package")
    assert panel.runs.send("hello") is None
    errors = [w.text() for w in items_of(panel, QLabel) if w.property("level") == "error"]
    assert errors and "geogpt-no-such-package" in errors[-1]
    assert model_server.chat_requests() == []


def test_model_bar_lists_models_tests_the_connection_and_saves_choices(panel, model_server):
    bar = panel.model_bar
    bar.refresh_models()
    wait_until(lambda: bar.model_combo.count() == 2, 120)
    assert [bar.model_combo.itemText(i) for i in range(2)] == ["llama3.2:3b", "qwen3:8b"]
    bar.model_combo.setCurrentText("llama3.2:3b")
    assert PlgOptionsManager.get_plg_settings().ollama_model == "llama3.2:3b"
    bar.test_connection()
    wait_until(lambda: bar.status_label.text().startswith("Connected"), 120)
    assert bar.status_label.text() == "Connected: 2 models available."
    # A model list that arrives after the test's outcome (storing a key asks for one) leaves the outcome shown.
    bar.refresh_models()
    assert bar.state.status == ServerStatus.CHECKING
    wait_until(lambda: bar.refresh_button.isEnabled() and bar.state.status == ServerStatus.READY, 120)
    assert bar.status_label.text() == "Connected: 2 models available."
    model_server.capabilities = ("completion",)
    bar.model_combo.setCurrentText("qwen3:8b")
    wait_until(lambda: "cannot call tools" in bar.status_label.text(), 120)


def test_api_keys_go_to_the_keychain_never_to_settings(panel, model_server):
    import keyring
    from qgis.core import QgsSettings

    from geogpt_qgis.toolbelt.secrets import SERVICE, account_for

    configure(model_server, "openai")
    bar = panel.model_bar
    bar.provider_combo.setCurrentIndex(bar.provider_combo.findData("openai"))
    assert not bar.key_edit.isHidden()  # shown for OpenAI-compatible servers (inside the fold-out)
    bar.key_edit.setText("sk-planted-secret-123")
    bar.key_edit.editingFinished.emit()
    assert bar.key_edit.text() == ""
    # Stored in the background: the keychain may be slow or ask to be unlocked.
    account = account_for(model_server.url + "/v1")
    wait_until(lambda: keyring.get_password(SERVICE, account) == "sk-planted-secret-123", 120)
    settings = QgsSettings()
    settings.sync()
    with open(settings.fileName(), encoding="utf-8", errors="replace") as handle:
        assert "sk-planted-secret-123" not in handle.read()
    model_server.api_key = "sk-planted-secret-123"
    model_server.script([Turn(text="authorised")])
    type_and_send(panel, "hi")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    assert model_server.chat_requests()[-1].headers["authorization"] == "Bearer sk-planted-secret-123"
