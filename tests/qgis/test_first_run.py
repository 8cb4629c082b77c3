"""The first-run card: the server's state in words, the next step to copy, example questions; Send off until ready.

Real model servers on 127.0.0.1 (scripted: with tools, with no model, with a
model that cannot call tools) and a port nothing listens on; the real dock on
the demo project.
"""

from __future__ import annotations

from qgis.PyQt.QtCore import QPoint, Qt
from qgis.PyQt.QtGui import QGuiApplication
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QApplication

from geogpt_qgis.gui.first_run_card import POINT, POLYGON, RASTER, example_questions
from geogpt_qgis.gui.server_state import ServerStatus
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import close_dock, configure, open_dock, type_and_send
from tests.support.model_server import ScriptedModelServer, Turn
from tests.support.net import free_port
from tests.support.runs import wait_until


def _status(panel) -> ServerStatus:
    return panel.model_bar.state.status


def _point_at(panel, url: str) -> None:
    picker = panel.model_bar
    picker.url_edit.setText(url)
    picker.url_edit.editingFinished.emit()


def test_a_dead_server_says_not_reachable_gives_the_command_and_keeps_send_off(panel, model_server):
    card = panel.first_run
    wait_until(lambda: _status(panel) == ServerStatus.READY, 120)
    assert card.isVisible() and card.state_label.text().startswith("Ready: qwen3:8b")
    assert panel.send_button.isEnabled() and not card.command_box.isVisible()

    dead = f"http://127.0.0.1:{free_port()}"
    _point_at(panel, dead)
    wait_until(lambda: _status(panel) == ServerStatus.UNREACHABLE, 120)
    assert card.state_label.text() == f"Not reachable: no Ollama server answers at {dead}."
    assert card.command.text() == "ollama serve" and card.command_box.isVisible()
    assert card.check_button.isVisible()
    assert not panel.send_button.isEnabled()
    assert panel.send_button.toolTip() == card.state_label.text()
    type_and_send(panel, "Hello?")
    assert panel.chat.items() == [] and model_server.chat_requests() == []
    assert panel.status.text() == card.state_label.text()  # Enter says why instead of sending

    QTest.mouseClick(card.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "ollama serve" and card.copy_button.text() == "Copied"

    _point_at(panel, model_server.url)  # the server is up now
    wait_until(lambda: _status(panel) == ServerStatus.READY, 120)
    assert panel.send_button.isEnabled() and panel.send_button.toolTip() == ""
    assert not card.check_button.isVisible()


def test_the_server_problem_is_said_once_by_the_card_and_by_the_status_line_once_the_card_goes(panel):
    """The card explains a dead server in full; the line above the chat says it only when the card is gone."""
    line = panel.model_bar.status_label
    dead = f"http://127.0.0.1:{free_port()}"
    _point_at(panel, dead)
    wait_until(lambda: _status(panel) == ServerStatus.UNREACHABLE, 120)
    QApplication.processEvents()
    assert panel.first_run.isVisible() and panel.first_run.state_label.isVisible()
    assert "Cannot reach the Ollama server" in line.text() and not line.isVisible()

    QTest.mouseClick(panel.first_run.check_button, Qt.MouseButton.LeftButton)  # asked again, still dead
    wait_until(lambda: _status(panel) == ServerStatus.UNREACHABLE and panel.model_bar.refresh_button.isEnabled(), 120)
    QApplication.processEvents()
    assert not line.isVisible()

    panel.chat.add_notice("Something happened.", "info")  # the conversation has an item: the card goes
    QApplication.processEvents()
    assert not panel.first_run.isVisible() and line.isVisible() and "Cannot reach" in line.text()

    panel.view.new_conversation()  # the card is back, and the line steps aside again
    QApplication.processEvents()
    assert panel.first_run.isVisible() and not line.isVisible()


def test_no_model_and_a_model_without_tools_say_what_to_pull(qgis_iface, demo_project, tmp_path):
    with ScriptedModelServer(models=()) as empty, ScriptedModelServer(capabilities=("completion",)) as toolless:
        configure(empty)
        dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
        panel, card = dock.panel, dock.panel.first_run
        try:
            wait_until(lambda: _status(panel) == ServerStatus.NO_MODEL, 120)
            assert card.state_label.text() == "Reachable, but no model is installed."
            assert card.command.text() == "ollama pull qwen3:8b"
            assert not panel.send_button.isEnabled()

            _point_at(panel, toolless.url)
            wait_until(lambda: _status(panel) == ServerStatus.NO_TOOLS, 120)
            assert (
                card.state_label.text()
                == "Reachable, but qwen3:8b cannot call tools natively: GeoGPT asks it for guided tool calls."
            )
            assert card.command.text() == "ollama pull qwen3:8b"
            assert panel.send_button.toolTip() == card.state_label.text()
        finally:
            close_dock(dock)


def test_an_unreachable_openai_server_points_to_the_settings(qgis_iface, demo_project, tmp_path):
    PlgOptionsManager.set_value("provider", "openai")
    PlgOptionsManager.set_value("openai_base_url", f"http://127.0.0.1:{free_port()}/v1")
    PlgOptionsManager.set_value("openai_model", "gpt-x")
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    panel, card = dock.panel, dock.panel.first_run
    try:
        wait_until(lambda: _status(panel) == ServerStatus.UNREACHABLE, 120)
        assert not card.command_box.isVisible() and card.settings_button.isVisible()
        QTest.mouseClick(card.settings_button, Qt.MouseButton.LeftButton)
        assert panel.model_bar.panel.isVisible()  # the URL and key fields unfold
    finally:
        close_dock(dock)
        PlgOptionsManager.set_value("provider", "ollama")


def test_examples_name_the_projects_layers_fill_the_input_and_the_card_leaves_with_the_first_message(
    panel, model_server
):
    card = panel.first_run
    layers = {layer.name() for layer in panel.project.mapLayers().values()}
    texts = [label.text() for label in card.examples]
    assert 3 <= len(texts) <= 4
    assert sum(any(name in text for name in layers) for text in texts) >= 2
    example = card.examples[1]
    wait_until(lambda: example.isVisible(), 120)
    # A real click on the link: the question goes into the input box, nothing is sent.
    link = example.rect().center()
    QTest.mouseClick(example, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(30, link.y()))
    wait_until(lambda: panel.input.toPlainText() != "", 120)
    assert panel.input.toPlainText() in example.text() and panel.chat.items() == []

    wait_until(lambda: _status(panel) == ServerStatus.READY, 120)
    model_server.script([Turn(text="Hello.")])
    panel.input.clear()
    type_and_send(panel, "Hello")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    assert not card.isVisible()
    panel.view.new_conversation()
    QApplication.processEvents()
    assert card.isVisible()


def test_example_questions_follow_the_layers(qgis_app):
    mixed = example_questions([("schools", POINT), ("districts", POLYGON), ("roads", "line")])
    assert mixed[2] == "How many schools are in each of the districts?" and len(mixed) == 4
    assert any("roads" in q for q in mixed)
    assert "dem" in example_questions([("dem", RASTER)])[-1]
    assert len(example_questions([])) == 3
