"""Issue 37: a stored API key the headless command cannot unlock is explained, with the ways out, which work.

A user of QGIS desktop without a system keychain keeps the key in the QGIS authentication database,
under a master password.  ``python -m geogpt_qgis ask`` has no window to ask for that password: the
warning must say that reading failed (not storing), where the key is, and the ways out
(``QGIS_AUTH_PASSWORD_FILE``, ``OPENAI_API_KEY``, the master password).  The ways out are then taken,
for real: the model server sees the key.  Everything runs in child processes on one fresh profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from geogpt_qgis.toolbelt.auth_db import config_name
from geogpt_qgis.toolbelt.secrets import account_for
from tests.support.demo import copy_demo
from tests.support.model_server import Turn
from tests.support.runs import ask

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-stored-under-master-5d2a9c41e7"
MASTER = "the-master-password-of-this-profile"
NO_KEYCHAIN = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}  # a headless Linux box


@pytest.fixture
def profile(tmp_path, monkeypatch, model_server) -> Path:
    """A user data folder whose default QGIS profile holds the model server's key, under a master password."""
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    data_home = tmp_path / "user-data"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(
        QT_QPA_PLATFORM="offscreen",
        XDG_DATA_HOME=str(data_home),
        GEOGPT_STORE_URL=model_server.url + "/v1",
        GEOGPT_STORE_KEY=KEY,
        GEOGPT_STORE_MASTER=MASTER,
        **NO_KEYCHAIN,
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.auth_db_store"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    stored = json.loads(done.stdout.strip().splitlines()[-1])
    assert stored["stored_in"] == "auth_db" and Path(stored["auth_db"]).is_relative_to(data_home)
    return data_home


def ask_openai(model_server, data_home: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    model_server.script([Turn(text="Seven layers.")])
    project = copy_demo(tmp_path / "demo")
    return ask(
        "How many layers?",
        *("--project", str(project), "--provider", "openai", "--base-url", model_server.url + "/v1"),
        *("--model", "qwen3:8b", "--quiet"),
        env={"XDG_DATA_HOME": str(data_home), **NO_KEYCHAIN, **env},
    )


def test_an_unreadable_stored_key_says_what_failed_where_it_is_and_the_ways_out(model_server, profile, tmp_path):
    url = model_server.url + "/v1"
    done = ask_openai(model_server, profile, tmp_path)
    warning = " ".join(done.stderr.split())
    assert f"The API key for {account_for(url)} is stored in the QGIS authentication database" in warning
    assert f"(configuration '{config_name(account_for(url))}'), but it could not be read" in warning
    assert "the QGIS master password that unlocks the database is not available" in warning
    assert "set QGIS_AUTH_PASSWORD_FILE to its path" in warning
    assert "set the OPENAI_API_KEY environment variable to the key for this run" in warning
    assert "enter the master password when QGIS asks" in warning
    assert "cannot be stored" not in warning and KEY not in done.stderr
    # A server on this machine may need no key: the run goes on, without the key it could not read.
    assert done.returncode == 0, done.stderr[-2000:]
    assert model_server.chat_requests()[-1].headers.get("authorization") != f"Bearer {KEY}"


def test_the_master_password_in_qgis_auth_password_file_unlocks_the_stored_key(model_server, profile, tmp_path):
    secret_file = tmp_path / "master.txt"
    secret_file.write_text(MASTER, encoding="utf-8")
    secret_file.chmod(0o600)
    model_server.api_key = KEY  # the server refuses anything else
    done = ask_openai(model_server, profile, tmp_path, QGIS_AUTH_PASSWORD_FILE=str(secret_file))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "Seven layers.\n"
    assert model_server.chat_requests()[-1].headers["authorization"] == f"Bearer {KEY}"
    assert "could not be read" not in done.stderr and KEY not in done.stderr


def test_the_environment_variable_named_in_the_warning_is_a_way_out(model_server, profile, tmp_path):
    model_server.api_key = "sk-from-the-environment-77"
    done = ask_openai(model_server, profile, tmp_path, OPENAI_API_KEY="sk-from-the-environment-77")
    assert done.returncode == 0, done.stderr[-2000:]
    assert model_server.chat_requests()[-1].headers["authorization"] == "Bearer sk-from-the-environment-77"
