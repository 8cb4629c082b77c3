"""Fixtures for every test, none of which needs QGIS: a clean environment and keychain, the model servers.

The QGIS ones (Processing, settings, the demo project, the bridge) are in ``tests/support/qgis_fixtures.py``,
used by ``tests/qgis`` and ``tests/desktop``: ``tests/unit`` runs without QGIS.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Layers, providers and the project on QGIS's main thread only: checked in every test and in child processes.
os.environ["GEOGPT_THREAD_GUARD"] = "1"

from collections.abc import Iterator

import keyring
import pytest

from tests.support.keyring_backend import MemoryKeyring
from tests.support.model_server import ScriptedModelServer

keyring.set_keyring(MemoryKeyring())


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """With pytest-qgis off (``-p no:qgis``, tests/unit), its settings in pyproject.toml are known, and unused."""
    if pluginmanager.is_blocked("qgis"):
        for name in ("qgis_gui_enabled", "qgis_canvas_width", "qgis_canvas_height"):
            parser.addini(name, "a pytest-qgis setting (pytest-qgis is off in this run)")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no API key in the environment and an empty keychain (plugin settings: qgis_fixtures)."""
    from geogpt_qgis.core import secrets_scrub

    secrets_scrub.forget_all()  # and no secret registered by an earlier test
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = keyring.get_keyring()
    if isinstance(backend, MemoryKeyring):
        backend.store.clear()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """The real llama.cpp server (llama-cpp-python) with Gemma 3 270M on 127.0.0.1; ``make llama`` builds it."""
    from tests.support.llama_server import running_llama_server

    with running_llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server


@pytest.fixture(scope="session")
def smollm2_server(tmp_path_factory):
    """The real llama.cpp server with SmolLM2-135M-Instruct (its GGUF's ChatML template), beside ``llama_server``.

    Its window is the plugin's default context limit (8,192 tokens, also the model's trained length), so the
    agent's default settings fit; llama.cpp logs 180 MiB of cache for it, 440 MiB in all with model and buffers.
    """
    from tests.support.llama_server import SMOLLM2, running_llama_server

    with running_llama_server(tmp_path_factory.mktemp("smollm2"), SMOLLM2, n_ctx=8192) as server:
        yield server


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """A scripted Ollama/OpenAI server on 127.0.0.1; script it with ``.script([...])``."""
    with ScriptedModelServer() as server:
        yield server

