"""API keys: kept by the keychain (or QGIS's authentication database), sent to the server, written nowhere else."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

import keyring
from qgis.core import QgsApplication, QgsSettings

from geogpt_qgis.gui.options_factory import GeoGptOptionsFactory
from geogpt_qgis.toolbelt.log import logger
from geogpt_qgis.toolbelt.secrets import SERVICE, account_for, get_api_key, set_api_key
from tests.support.dock import configure, type_and_send
from tests.support.leaks import files_containing, files_under
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until

REPO = Path(__file__).resolve().parents[2]


def test_the_leak_search_finds_a_planted_key(tmp_path):
    """The search below is only worth something if it finds the key where it is, zipped or not."""
    key = f"sk-planted-{uuid.uuid4().hex}"
    (tmp_path / "plain.txt").write_text(f"token={key}\n", encoding="utf-8")
    with zipfile.ZipFile(tmp_path / "project.qgz", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("project.qgs", f"<qgis><key>{key}</key></qgis>" + "x" * 1000)
    (tmp_path / "clean.txt").write_text("nothing here", encoding="utf-8")
    found = files_containing(key, files_under([tmp_path]))
    assert sorted(p.name for p in found) == ["plain.txt", "project.qgz"]


def test_a_planted_key_is_used_everywhere_and_written_nowhere(
    panel, model_server, demo_project, qgis_iface, tmp_path, monkeypatch
):
    key = f"sk-planted-{uuid.uuid4().hex}"
    started = time.time() - 1
    profile = tmp_path / "profile"
    monkeypatch.setattr(QgsApplication, "qgisSettingsDirPath", staticmethod(lambda: str(profile) + "/"))
    model_server.api_key = key  # the scripted server refuses requests without it
    url = model_server.url + "/v1"
    logs = tmp_path / "logs"
    logs.mkdir()
    log_file = logs / "geogpt.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    level = logger.level
    message_log = logs / "qgis-messages.log"

    def keep_message(message: str, tag: str, _level: object) -> None:
        with message_log.open("a", encoding="utf-8") as out:
            out.write(f"{tag}: {message}\n")

    QgsApplication.messageLog().messageReceived.connect(keep_message)
    try:
        # Settings > Options > GeoGPT: the OpenAI-compatible server, the key, debug logging.
        page = GeoGptOptionsFactory(qgis_iface).createWidget(None)
        page.picker.provider_combo.setCurrentIndex(page.picker.provider_combo.findData("openai"))
        page.picker.url_edit.setText(url)
        page.picker.url_edit.editingFinished.emit()
        page.picker.key_edit.setText(key)
        page.picker.test_connection()
        wait_until(lambda: page.picker.test_label.text() == "Connected: 2 models available.", 120)
        page.picker.model_combo.setEditText("qwen3:8b")
        page.debug_check.setChecked(True)
        page.apply()
        assert page.picker.key_edit.text() == ""
        wait_until(lambda: page.picker.key_status.text() == "API key saved in the system keychain.", 120)
        assert keyring.get_password(SERVICE, account_for(url)) == key
        page.deleteLater()  # as when the options dialog closes
        assert logger.level == logging.DEBUG

        # The dock's model picker follows the page, and saves (the same) key too.
        bar = panel.model_bar
        assert bar.provider_combo.currentData() == "openai" and bar.url_edit.text() == url
        keyring.delete_password(SERVICE, account_for(url))
        bar.key_edit.setText(key)
        bar.key_edit.editingFinished.emit()
        assert bar.key_edit.text() == ""
        wait_until(lambda: keyring.get_password(SERVICE, account_for(url)) == key, 120)
        # The status line says where the key went before it reports the connection test.
        wait_until(lambda: bar.status_label.text() == "API key saved in the system keychain.", 120)
        bar.test_connection()
        wait_until(lambda: bar.status_label.text() == "Connected: 2 models available.", 120)

        # A conversation with a tool call, over the OpenAI protocol, with the key in every request.
        model_server.script(
            [
                Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]),
                Turn(text="There are **31 schools**."),
            ]
        )
        type_and_send(panel, "How many schools are there?")
        wait_until(lambda: panel.statuses == ["finished"], 120)
        chats = model_server.chat_requests()
        assert [r.path for r in chats] == ["/v1/chat/completions"] * 2
        assert all(r.headers["authorization"] == f"Bearer {key}" for r in chats)
        assert chats[1].tool_messages() and "31 features" in chats[1].tool_messages()[0]["content"]
        # Model lists: asked before the key was typed (refused), then with the key, never with anything else.
        sent = {r.headers.get("authorization") for r in model_server.requests if r.path == "/v1/models"}
        assert f"Bearer {key}" in sent and sent <= {None, f"Bearer {key}"}

        # Export the chat, view the run log, save the project (both formats).
        exported = tmp_path / "exports" / "chat.md"
        exported.parent.mkdir()
        panel.view.export_conversation(panel.runs.thread_id(), str(exported))
        wait_until(exported.exists, 120)
        assert "31 schools" in exported.read_text(encoding="utf-8")
        panel.view.show_run_log()
        wait_until(lambda: bool(panel.view.dialogs), 120)
        run_log = panel.view.dialogs[-1]
        assert "describe_layer" in run_log.markdown
        assert key not in run_log.markdown and key not in run_log.browser.toPlainText()
        saved = tmp_path / "saved"
        saved.mkdir()
        assert demo_project.write(str(saved / "project.qgs"))
        assert demo_project.write(str(saved / "project.qgz"))
        QgsSettings().sync()
    finally:
        QgsApplication.messageLog().messageReceived.disconnect(keep_message)
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)

    # Debug logging really wrote something, so the logs were worth searching.
    assert "API key for " + account_for(url) + " found in the keychain store" in log_file.read_text("utf-8")
    settings_root = Path(os.environ["QGIS_CUSTOM_CONFIG_PATH"])
    assert Path(QgsSettings().fileName()).is_relative_to(settings_root)
    # The test's folder (store + -wal, exports, logs, project, plugin profile), QGIS's settings folder
    # (QGIS3.ini, qgis-auth.db...), and whatever else appeared in the temporary folder during the test.
    written = files_under([tmp_path, settings_root]) + files_under([Path(tempfile.gettempdir())], since=started)
    names = {p.name for p in written}
    assert {"store.sqlite", "chat.md", "project.qgs", "project.qgz", "geogpt.log", "QGIS3.ini"} <= names
    assert any(n.endswith("-wal") for n in names)
    assert files_containing(key, written) == []
    assert keyring.get_password(SERVICE, account_for(url)) == key  # the keychain has it, and only it


def test_the_environment_variable_is_used_when_no_key_is_stored(panel, model_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    configure(model_server, "openai")
    url = model_server.url + "/v1"
    model_server.api_key = "sk-from-the-environment"
    assert get_api_key(url) == "sk-from-the-environment"
    model_server.script([Turn(text="authorised")])
    type_and_send(panel, "hi")
    wait_until(lambda: panel.statuses == ["finished"], 120)
    assert model_server.chat_requests()[-1].headers["authorization"] == "Bearer sk-from-the-environment"
    # A stored key wins over the environment; deleting it brings the environment back.
    assert set_api_key(url, "sk-stored") == "keychain"
    assert get_api_key(url) == "sk-stored"
    set_api_key(url, "")
    assert get_api_key(url) == "sk-from-the-environment"


def test_without_a_keychain_keys_go_to_the_qgis_authentication_database(tmp_path):
    """In a fresh QGIS profile (own process): keyring's fail backend, then a broken one, then an empty chain."""
    profile = tmp_path / "qgis-profile"
    env = {**os.environ, "QGIS_CUSTOM_CONFIG_PATH": str(profile), "QGIS_OPTIONS_PATH": str(profile)}
    env.pop("OPENAI_API_KEY", None)
    env["QT_QPA_PLATFORM"] = "offscreen"
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.auth_db_probe"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    from tests.support.auth_db_probe import KEY, URL

    assert Path(report["auth_db_path"]).is_relative_to(profile)
    assert report["usable_with_fail_backend"] is False
    # No master password, nobody to ask: an error that says what to do.
    assert "master password is not set" in report["without_master_password"]
    assert "Settings > Options > Authentication" in report["without_master_password"]
    assert "OPENAI_API_KEY" in report["without_master_password"]
    assert report["master_password_set"] is True
    assert report["stored_in"] == "auth_db"
    assert report["read_on_main_thread"] == KEY
    assert report["read_off_main_thread"] == {"result": KEY}  # the look-up hops to the main thread and back
    assert report["has_stored_key"] == {"result": True}
    assert report["config_names"] == [f"GeoGPT API key: {URL}"]
    assert report["read_with_env_set"] == KEY  # the database comes before the environment
    assert report["replaced_in"] == {"result": "auth_db"}
    assert report["read_after_replace"] == KEY + "-v2" and report["configs_after_replace"] == 1
    assert report["broken_usable"] is True and report["broken_stored_in"] == "auth_db"
    assert report["broken_read"] == KEY + "-broken"
    assert report["empty_chain_usable"] is False and report["empty_chain_stored_in"] == "auth_db"
    assert report["empty_chain_read"] == KEY + "-empty_chain"
    assert report["read_other_after_delete"] is None
    assert report["third_stored_in"] == "keychain" and report["third_in_auth_db"] is False
    # Never in QSettings; the database holds it encrypted only.
    assert Path(report["settings_file"]).is_file() and report["settings_has_key"] is False
    assert report["auth_db_has_plain_key"] is False
    assert files_containing(KEY, files_under([profile])) == []
