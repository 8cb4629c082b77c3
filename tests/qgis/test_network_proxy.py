"""QGIS's proxy settings carry every request the plugin sends: model servers and OGC API alike.

A real forwarding proxy on 127.0.0.1 (tests/support/http_proxy.py) records what
it carries; QGIS's settings are set under ``proxy/`` as Settings > Options >
Network writes them.  The servers are the scripted model server and pygeoapi.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.providers.chat import create_chat_model
from geogpt_qgis.agent.providers.discovery import ServerError, list_models, ollama_model_info
from geogpt_qgis.agent.providers.explain import explain_model_error
from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.toolbelt import network
from geogpt_qgis.toolbelt.installer import Installer, InstallError, make_plan
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.ogc.http import OgcHttp
from tests.support.http_proxy import RecordingProxy
from tests.support.model_server import Turn
from tests.support.net import free_port

REPO = Path(__file__).resolve().parents[2]
LOGIN = ("geo user", "p@ss:word/1")
_ENVIRONMENT = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def qgis_proxy(monkeypatch) -> Iterator:
    """``set(**values)`` writes QGIS's proxy settings; removed afterwards.  No proxy in the environment."""
    from qgis.core import QgsSettings

    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    settings = QgsSettings()

    def set_values(**values) -> None:
        settings.remove("proxy")
        for key, value in values.items():
            settings.setValue(f"proxy/{key}", value)

    yield set_values
    settings.remove("proxy")


@pytest.fixture
def proxy() -> Iterator[RecordingProxy]:
    with RecordingProxy(login=LOGIN) as running:
        yield running


def _through(port: int, **more) -> dict:
    return {
        "proxyEnabled": True,
        "proxyType": "HttpProxy",
        "proxyHost": "127.0.0.1",
        "proxyPort": str(port),
        "proxyUser": LOGIN[0],
        "proxyPassword": LOGIN[1],
        **more,
    }


def _ogc_collections(url: str) -> list[str]:
    with OgcHttp(10.0, CancelToken()) as http:
        body = http.get_json(f"{url}/collections", {}).body
    return [item["id"] for item in body["collections"]]


def _ask_every_way(model_server, ogc_server) -> None:
    """A model list, a sync and an async Ollama chat, an OpenAI chat, and an OGC API request."""
    assert list_models("ollama", model_server.url) == ["llama3.2:3b", "qwen3:8b"]
    assert ollama_model_info(model_server.url, "qwen3:8b").supports_tools is True
    model_server.script([Turn(text="one"), Turn(text="two"), Turn(text="three")])
    ollama = create_chat_model(ModelConfig(model="qwen3:8b", base_url=model_server.url))
    assert ollama.invoke("hello").content == "one"
    assert asyncio.run(ollama.ainvoke("hello")).content == "two"
    openai = create_chat_model(ModelConfig(provider="openai", model="qwen3:8b", base_url=model_server.url + "/v1"))
    assert openai.invoke("hello").content == "three"
    assert "schools" in _ogc_collections(ogc_server.url)


def test_model_and_ogc_requests_go_through_the_qgis_proxy_with_its_login(qgis_proxy, proxy, model_server, ogc_server):
    qgis_proxy(**_through(proxy.port))
    _ask_every_way(model_server, ogc_server)
    carried = proxy.urls()
    assert f"{model_server.url}/api/tags" in carried
    assert f"{model_server.url}/api/show" in carried
    assert carried.count(f"{model_server.url}/api/chat") == 2  # sync and async clients
    assert f"{model_server.url}/v1/chat/completions" in carried
    assert any(url.startswith(f"{ogc_server.url}/collections") for url in carried)
    login = "Basic " + base64.b64encode(":".join(LOGIN).encode()).decode()
    assert {item.proxy_authorization for item in proxy.carried} == {login}
    assert all(item.method in ("GET", "POST") for item in proxy.carried)
    agents = {request.headers["user-agent"].split()[0] for request in model_server.requests}
    assert agents == {network.USER_AGENT}  # the plugin's name first, on every client


def test_no_proxy_and_excluded_urls_bypass_it(qgis_proxy, proxy, model_server, ogc_server):
    # noProxyUrls go direct; proxyExcludedUrls take the system's proxy (none here): neither reaches QGIS's.
    qgis_proxy(**_through(proxy.port, noProxyUrls=[model_server.url], proxyExcludedUrls=["", ogc_server.url + "/"]))
    _ask_every_way(model_server, ogc_server)
    assert proxy.urls() == []
    # A URL on neither list still goes through it.
    other = model_server.url.replace("127.0.0.1", "localhost")
    assert list_models("ollama", other) == ["llama3.2:3b", "qwen3:8b"]
    assert proxy.urls() == [f"{other}/api/tags"]


def test_nothing_goes_through_it_when_the_proxy_is_off(qgis_proxy, proxy, model_server, ogc_server):
    qgis_proxy(**_through(proxy.port, proxyEnabled=False))
    _ask_every_way(model_server, ogc_server)
    assert proxy.urls() == []
    assert len(model_server.chat_requests()) == 3  # the requests went straight to the server


def test_qgis_system_proxy_means_the_environments(qgis_proxy, monkeypatch, model_server):
    with RecordingProxy() as system:
        qgis_proxy(proxyEnabled=True, proxyType="DefaultProxy")
        monkeypatch.setenv("http_proxy", system.url)
        assert list_models("ollama", model_server.url) == ["llama3.2:3b", "qwen3:8b"]
        assert system.urls() == [f"{model_server.url}/api/tags"]


def test_a_proxy_that_is_down_or_refuses_the_login_is_reported(qgis_proxy, proxy, model_server, ogc_server):
    qgis_proxy(**_through(proxy.port, proxyPassword="wrong"))
    with pytest.raises(ServerError, match="HTTP 407"):
        list_models("ollama", model_server.url)
    dead = f"http://127.0.0.1:{free_port()}"
    qgis_proxy(**_through(int(dead.rsplit(":", 1)[1])))
    expected = f"Cannot reach {model_server.url}/api/tags through the proxy {dead}:"
    with pytest.raises(ServerError, match=expected) as failure:
        list_models("ollama", model_server.url)
    assert failure.value.unreachable
    config = ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=5)
    with pytest.raises(Exception) as chat_failure:
        create_chat_model(config).invoke("hello")
    said = explain_model_error(chat_failure.value, config)
    assert said.startswith(f"Cannot reach the model server at {model_server.url} through the proxy {dead} (QGIS's")
    with pytest.raises(ToolError, match=f"through the proxy {dead} set in QGIS's network settings") as ogc_failure:
        _ogc_collections(ogc_server.url)
    for message in (str(failure.value), said, str(ogc_failure.value)):
        assert "p%40ss" not in message and LOGIN[1] not in message  # the password stays out
    assert model_server.chat_requests() == []


def test_the_settings_are_read_as_qgis_writes_them(qgis_proxy):
    qgis_proxy(**_through(3128, noProxyUrls="http://intranet"))
    config = network.proxy_config()
    assert config.url == "http://geo%20user:p%40ss%3Aword%2F1@127.0.0.1:3128"
    assert config.no_proxy == ("http://intranet",)
    assert config.describe() == "http://127.0.0.1:3128"


def test_a_login_stored_in_the_authentication_database_reaches_the_proxy(tmp_path):
    """``proxy/authcfg``: read on the main thread while the request waits on another (fresh QGIS profile)."""
    from tests.support.proxy_login_probe import LOGIN as STORED

    profile = tmp_path / "qgis-profile"
    env = {**os.environ, "QGIS_CUSTOM_CONFIG_PATH": str(profile), "QGIS_OPTIONS_PATH": str(profile)}
    env["QT_QPA_PLATFORM"] = "offscreen"
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.proxy_login_probe"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["master_password_set"] is True and report["stored"] is True
    assert report["models"] == {"result": ["llama3.2:3b", "qwen3:8b"]}
    login = "Basic " + base64.b64encode(":".join(STORED).encode()).decode()
    assert report["carried"] == [[f"{report['server_url']}/api/tags", login]]


def test_the_installers_pip_takes_the_qgis_proxy(qgis_proxy, proxy, tmp_path, monkeypatch):
    for name in [key for key in os.environ if key.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    index = f"http://127.0.0.1:{free_port()}/simple"  # nothing listens there: only the proxy gets the request
    monkeypatch.setenv("PIP_INDEX_URL", index)
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setattr(sys, "path", list(sys.path))
    qgis_proxy(**_through(proxy.port))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("geogpt-tiny>=1\n")
    plan = make_plan(tmp_path / "data", requirements)
    with pytest.raises(InstallError):
        Installer(plan).run()
    assert f"{index}/geogpt-tiny/" in proxy.urls()
    login = "Basic " + base64.b64encode(":".join(LOGIN).encode()).decode()
    assert {item.proxy_authorization for item in proxy.carried} == {login}
    log = plan.log_path.read_text()
    assert f"proxy (QGIS's network settings): http://127.0.0.1:{proxy.port}" in log
    assert "p%40ss" not in log and LOGIN[1] not in log  # the password stays out of the log
