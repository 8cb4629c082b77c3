"""The headless command, run as a real subprocess against the scripted model server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from qgis.core import QgsProject

from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import ask

REPO = Path(__file__).resolve().parents[2]


def ask_ollama(question: str, project: Path, server, *extra: str) -> subprocess.CompletedProcess:
    """``ask`` against the scripted server speaking Ollama's protocol."""
    return ask(question, "--project", str(project), "--base-url", server.url, "--model", "qwen3:8b", *extra)


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch) -> Path:
    """Each command reads the QGIS profile under its own data folder, never the user's real one.

    pytest-qgis points $QGIS_CUSTOM_CONFIG_PATH at its own folder; a user's shell has none.
    """
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return data


@pytest.fixture
def project_file(tmp_path) -> Path:
    return copy_demo(tmp_path / "demo")


def test_the_command_reads_the_settings_qgis_desktop_saved_in_the_users_profile(model_server, project_file, user_data):
    # Where QGIS desktop keeps its settings on Linux, written as the plugin's QgsSettings writes them.
    from qgis.PyQt.QtCore import QSettings

    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager

    ini = user_data / "QGIS" / "QGIS3" / "profiles" / "default" / "QGIS" / "QGIS3.ini"
    saved = QSettings(str(ini), QSettings.Format.IniFormat)
    saved.setValue(f"{PlgOptionsManager.GROUP}/provider", "ollama")
    saved.setValue(f"{PlgOptionsManager.GROUP}/ollama_url", model_server.url)
    saved.setValue(f"{PlgOptionsManager.GROUP}/ollama_model", "qwen3:8b")
    saved.sync()
    model_server.script([Turn(text="Seven layers.")])
    done = ask("How many layers?", "--project", str(project_file))  # no server or model given: the saved ones
    assert len(model_server.chat_requests()) == 1  # the saved server (the default would be localhost:11434)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Seven layers.\n"
    assert model_server.chat_requests()[0].body["model"] == "qwen3:8b"
    assert not (user_data / "profiles").exists()  # nothing filed under "Unknown Organization"


def test_answer_streams_to_stdout_steps_to_stderr_and_the_project_is_saved(model_server, project_file, tmp_path):
    answer = "The parks layer is now called **green_spaces**."
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_layer", {"layer": "parks"})]),
            Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "name": "green_spaces"})]),
            Turn(text=answer),
        ]
    )
    out = tmp_path / "out.qgz"
    done = ask_ollama("Rename the parks layer to green_spaces", project_file, model_server, "--save", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == answer + "\n"
    assert '→ describe_layer(layer="parks")' in done.stderr
    assert '→ set_layer(layer="parks", name="green_spaces")' in done.stderr
    assert "✓" in done.stderr and "Renamed 'parks' to 'green_spaces'." in done.stderr
    saved = QgsProject()
    assert saved.read(str(out))
    names = sorted(layer.name() for layer in saved.mapLayers().values())
    expected = ["districts", "elevation", "green_spaces", "hospitals", "landcover", "landuse", "rivers", "roads"]
    assert names == [*expected, "schools"]
    saved.clear()
    request = model_server.chat_requests()[0]
    assert request.body["options"]["num_ctx"] == 8192  # set explicitly, from the settings' default


def test_openai_compatible_server_with_a_key_from_the_environment(model_server, project_file):
    model_server.api_key = "sk-env-key"
    model_server.script([Turn(text="Seven layers.")])
    done = ask(
        "How many layers?",
        "--project",
        str(project_file),
        "--provider",
        "openai",
        "--base-url",
        model_server.url + "/v1",
        "--model",
        "qwen3:8b",
        env={"OPENAI_API_KEY": "sk-env-key"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Seven layers.\n"
    assert model_server.chat_requests()[0].headers["authorization"] == "Bearer sk-env-key"


def test_a_dead_server_exits_non_zero_with_the_reason(project_file):
    done = ask("hello", "--project", str(project_file), "--base-url", "http://127.0.0.1:9", "--model", "qwen3:8b")
    assert done.returncode == 1
    assert "error: Cannot reach the Ollama server at http://127.0.0.1:9" in done.stderr


def test_a_missing_project_is_a_usage_error(tmp_path):
    done = ask("hello", "--project", str(tmp_path / "nope.qgz"), "--model", "m")
    assert done.returncode == 2
    assert "no project file at" in done.stderr


def test_the_step_cap_is_reported(model_server, project_file):
    model_server.script([Turn(tool_calls=[ToolCall("list_layers")]) for _ in range(5)])
    done = ask_ollama("loop", project_file, model_server, "--max-steps", "2")
    assert done.returncode == 0, done.stderr
    assert "[warning] I stopped after 2 steps without reaching an answer." in done.stderr
    assert len(model_server.chat_requests()) == 2


def test_ctrl_c_stops_the_run(model_server, project_file):
    model_server.script([Turn(text="slow " * 1000, chunk_delay=0.02)])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "geogpt_qgis",
            "ask",
            "write",
            "--project",
            str(project_file),
            "--base-url",
            model_server.url,
            "--model",
            "qwen3:8b",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert process.stdout is not None
    assert process.stdout.read(5) == "slow "
    pressed = time.monotonic()
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=10)
    said = process.stderr.read()
    assert code == 130, said
    assert time.monotonic() - pressed < 3.0
    assert "Stopped." in said


@pytest.mark.parametrize(("policy", "removed"), [(None, False), ("never", False), ("trust", True)])
def test_risky_steps_follow_the_approval_option(policy, removed, model_server, project_file, tmp_path):
    """No one can click Approve headless: by default risky steps are refused; --approval trust allows them."""
    model_server.script(
        [Turn(tool_calls=[ToolCall("remove_layer", {"layer": "parks"})]), Turn(text="Handled the parks layer.")]
    )
    out = tmp_path / "out.qgz"
    extra = ["--approval", policy] if policy else []
    done = ask_ollama("Remove the parks layer", project_file, model_server, "--save", str(out), *extra)
    assert done.returncode == 0, done.stderr
    told = model_server.chat_requests()[-1].tool_messages()[-1]["content"]
    saved = QgsProject()
    assert saved.read(str(out))
    names = [layer.name() for layer in saved.mapLayers().values()]
    saved.clear()
    if removed:
        assert "parks" not in names and len(names) == 8
        assert told == "Removed layer 'parks' from the project."
        assert "Approved automatically (you trust this conversation)" in done.stderr
    else:
        assert "parks" in names and len(names) == 9
        assert "not allowed by the user's approval policy (never allow)" in told
        assert "Not allowed by your approval policy: Remove layer 'parks'" in done.stderr


def test_an_unknown_approval_option_is_a_usage_error(project_file):
    done = ask("anything", "--project", str(project_file), "--approval", "sometimes")
    assert done.returncode == 2
    assert "invalid choice: 'sometimes'" in done.stderr


def test_a_remote_openai_compatible_server_without_a_key_is_refused_before_anything_is_sent(project_file, tmp_path):
    """No key in the keychain, QGIS's authentication database or the environment: say so, exit 2, send nothing."""
    url = "https://models.example.invalid/v1"  # not local (and it would not resolve: nothing can be sent)
    started = time.monotonic()
    done = ask(
        "hello",
        "--project",
        str(project_file),
        "--provider",
        "openai",
        "--base-url",
        url,
        "--model",
        "gpt-4o-mini",
        env={"QGIS_CUSTOM_CONFIG_PATH": str(tmp_path / "profile")},
    )
    assert done.returncode == 2, done.stderr
    assert "Cannot reach" not in done.stderr and time.monotonic() - started < 60
    assert f"error: no API key for {url}: the key could not be read" in done.stderr
    assert "Settings > Options > GeoGPT" in done.stderr and "OPENAI_API_KEY" in done.stderr
    assert "not-needed" not in done.stderr


def test_a_local_openai_compatible_server_works_without_a_key(model_server, project_file, tmp_path):
    model_server.script([Turn(text="Local and keyless.")])
    done = ask(
        "hi",
        "--project",
        str(project_file),
        "--provider",
        "openai",
        "--base-url",
        model_server.url + "/v1",
        "--model",
        "qwen3:8b",
        env={"QGIS_CUSTOM_CONFIG_PATH": str(tmp_path / "profile")},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Local and keyless.\n"
    assert model_server.chat_requests()[0].headers["authorization"] == "Bearer not-needed"


def test_local_servers_are_told_apart_from_remote_ones():
    from geogpt_qgis.cli import is_local_server

    local = ["http://localhost:1234/v1", "http://127.0.0.1:8000/v1", "http://[::1]:8000", "http://192.168.1.20:1234/v1"]
    local += ["http://10.0.0.5/v1", "http://lmstudio.local:1234/v1", "http://box.localhost/v1"]
    remote = [
        "https://api.openai.com/v1",
        "https://openrouter.ai/api/v1",
        "http://8.8.8.8/v1",
        "https://localhost.evil.com",
    ]
    assert [is_local_server(u) for u in local] == [True] * len(local)
    assert [is_local_server(u) for u in remote] == [False] * len(remote)
