"""Dock and options polish (issue 22): a missing API key is a hint, not an error; the small dialogs say what they do.

Real model servers on 127.0.0.1 (harness/model_server.py), the real dock and options page.
"""

from __future__ import annotations

import datetime

import pytest
from qgis.PyQt.QtCore import QTimer
from qgis.PyQt.QtWidgets import QApplication, QDialogButtonBox, QFileDialog

from geogpt_qgis.gui.conversation_dialogs import MAX_TITLE_CHARS, RenameDialog, export_file_name
from geogpt_qgis.gui.server_state import ServerStatus
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.dock import close_dock, configure, open_dock, type_and_send
from tests.support.model_server import Turn
from tests.support.runs import wait_until

REMOTE = "https://models.example.invalid/v1"  # never asked: without a key there is no point


@pytest.fixture
def no_env_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_an_openai_server_without_a_key_gets_a_calm_hint_and_send_says_why(
    qgis_iface, demo_project, tmp_path, no_env_key
):
    PlgOptionsManager.set_value("provider", "openai")
    PlgOptionsManager.set_value("openai_base_url", REMOTE)
    PlgOptionsManager.set_value("openai_model", "gpt-x")
    dock = open_dock(qgis_iface, demo_project, tmp_path / "store.sqlite")
    panel, card = dock.panel, dock.panel.first_run
    try:
        wait_until(lambda: panel.model_bar.state.status == ServerStatus.NEEDS_KEY, 120)
        hint = f"Enter the API key for {REMOTE}, or pick a local server."
        assert card.state_label.text() == hint
        assert card.state_label.property("status") == "checking"  # grey, not the red bold of a fault
        assert card.settings_button.isVisible()
        status = panel.model_bar.status_label
        assert status.text() == hint and status.styleSheet() == ""  # the dock's status line: no error colour
        assert not panel.send_button.isEnabled() and panel.send_button.toolTip() == hint
    finally:
        close_dock(dock)
        PlgOptionsManager.set_value("provider", "ollama")


def test_a_local_server_that_refuses_without_a_key_asks_for_one_and_is_ready_once_typed(
    make_page, model_server, no_env_key
):
    model_server.api_key = "sk-polish"
    configure(model_server, provider="openai")
    page = make_page()
    picker = page.picker
    wait_until(lambda: picker.state.status == ServerStatus.NEEDS_KEY, 120)
    url = model_server.url + "/v1"
    assert picker.model_status.text() == f"Enter the API key for {url}, or pick a local server."
    assert picker.model_status.styleSheet() == ""  # not red
    picker.key_edit.setText("sk-polish")
    picker.key_edit.editingFinished.emit()  # the key typed in the page's draft: the server is asked again with it
    wait_until(lambda: picker.state.status == ServerStatus.READY, 120)
    assert picker.model_status.text() == "" and picker.model_combo.count() == 2


def test_empty_lists_in_the_options_page_say_what_goes_there(make_page, tmp_path, monkeypatch):
    from geogpt_qgis.core.recipes import Recipe
    from geogpt_qgis.tools.examples import recipe_store

    library = tmp_path / "profile" / "my_recipes.json"
    library.parent.mkdir()
    monkeypatch.setattr(recipe_store, "store_path", lambda: library)
    page = make_page()
    box = page.my_recipes
    assert box.list.count() == 0 and box.list.isHidden()  # no empty white box...
    assert box.empty_hint.isVisible() and "press 👍 under it" in box.empty_hint.text()  # ...but what goes there
    assert box.delete_button.isHidden()
    recipe_store.add_recipe(Recipe(id="mine", family="mine", question="buffer <layer>", calls=(("list_layers", {}),)))
    box.reload()
    assert box.list.isVisible() and box.list.count() == 1 and box.empty_hint.isHidden()
    assert box.delete_button.isVisible() and box.delete_button.isEnabled()
    chooser = page.connections  # no PostgreSQL connection saved in this test's QGIS settings
    assert chooser.connections_list.count() == 0 and chooser.connections_list.isHidden()
    assert "No PostgreSQL connection is saved" in chooser.connections_hint.text()
    assert chooser.connections_hint.isVisible()


# -- the conversation bar: one "New conversation", a proper rename dialog, a named export -------------------
def _answer_modal(act) -> list:
    """Run ``act(dialog)`` on the next modal dialog shown (the dock's dialogs are modal); returns what it saw."""
    seen: list = []

    def poll() -> None:
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            QTimer.singleShot(20, poll)
            return
        seen.append(dialog)
        act(dialog)

    QTimer.singleShot(0, poll)
    return seen


def test_an_untitled_conversation_does_not_repeat_the_new_conversation_button(panel):
    bar = panel.conversation_bar
    labels = [bar.title.text(), *(a.text() for a in bar.menu.actions())]
    assert bar.new_button.toolTip() == "New conversation" and "New conversation" not in labels  # "+" when narrow
    assert bar.title.text() == "Untitled conversation"
    bar.new_button.click()
    assert panel.status.text() == "Started a new conversation."


def test_the_rename_dialog_has_a_title_a_label_the_current_title_selected_and_refuses_an_empty_one(qgis_app):
    dialog = RenameDialog("  Schools   near\nrivers ")
    assert dialog.windowTitle() == "Rename conversation"
    assert dialog.label.text() == "New title for this conversation:" and dialog.label.buddy() is dialog.edit
    assert dialog.edit.text() == "Schools near rivers" and dialog.edit.selectedText() == "Schools near rivers"
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert ok.isEnabled() and dialog.hint.isHidden()
    dialog.edit.setText("   ")
    assert not ok.isEnabled() and dialog.hint.text() == "A title cannot be empty."
    dialog.edit.setText("x" * 500)
    assert ok.isEnabled() and len(dialog.title()) == MAX_TITLE_CHARS
    dialog.edit.setText("  Rivers \t and   schools  ")
    assert dialog.title() == "Rivers and schools"
    dialog.deleteLater()


def test_renaming_and_exporting_from_the_bar_use_the_conversations_title(panel, model_server, tmp_path, monkeypatch):
    model_server.script([Turn(text="Hello!")])
    done = len(panel.statuses)
    type_and_send(panel, "Schools near rivers?")
    wait_until(lambda: len(panel.statuses) > done, 120)
    thread = panel.runs.thread_id()
    assert panel.conversation_bar.current_title == "Schools near rivers?"

    def rename(dialog) -> None:
        assert dialog.edit.text() == "Schools near rivers?" and dialog.edit.selectedText() == dialog.edit.text()
        dialog.edit.setText("  Schools / rivers: near?  ")
        dialog.accept()

    seen = _answer_modal(rename)
    panel.conversation_bar.rename_action.trigger()
    assert len(seen) == 1 and isinstance(seen[0], RenameDialog)
    wait_until(lambda: panel.conversation_bar.title.text() == "Schools / rivers: near?", 120)

    folder = tmp_path / "exports"
    folder.mkdir()
    PlgOptionsManager.set_value("last_export_folder", str(folder))
    proposed: list[str] = []

    def save_as(_parent, _caption, directory, _filter):
        proposed.append(directory)
        return str(tmp_path / "elsewhere" / "mine.md"), ""

    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_as)
    panel.view.ask_export(thread)
    today = datetime.date.today().isoformat()
    assert proposed == [str(folder / f"{today} Schools rivers near.md")]  # /, : and ? are not for file names
    wait_until((tmp_path / "elsewhere" / "mine.md").exists, 120)
    assert PlgOptionsManager.get_plg_settings().last_export_folder == str(tmp_path / "elsewhere")  # remembered


def test_export_file_names_are_safe_on_every_system(qgis_app):
    day = datetime.date(2026, 11, 25)
    assert export_file_name("Schools near rivers", day) == "2026-11-25 Schools near rivers.md"
    assert export_file_name('a<b>c:"d"/e\\f|g?h*i\x01', day) == "2026-11-25 a b c d e f g h i.md"
    assert export_file_name("Østervang … skoler.", day) == "2026-11-25 Østervang … skoler.md"  # letters kept
    assert export_file_name(" ... ", day) == "2026-11-25 conversation.md"
    assert len(export_file_name("x" * 300, day)) == len("2026-11-25 .md") + 80
