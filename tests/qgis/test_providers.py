"""Model providers against the scripted server with the real HTTP clients."""

from __future__ import annotations

import pytest

from geogpt_qgis.agent.config import ModelConfig, ModelSetupError
from geogpt_qgis.agent.providers.chat import create_chat_model
from geogpt_qgis.agent.providers.discovery import ServerError, effective_context, list_models, ollama_model_info
from geogpt_qgis.agent.providers.explain import explain_model_error
from tests.support.model_server import Turn
from tests.support.net import free_port, hanging_up_server, silent_server


def _failure(config: ModelConfig) -> str:
    model = create_chat_model(config)
    with pytest.raises(Exception) as info:
        model.invoke("hello")
    return explain_model_error(info.value, config)


def test_lists_models_from_both_protocols(model_server):
    assert list_models("ollama", model_server.url) == ["llama3.2:3b", "qwen3:8b"]
    assert list_models("openai", model_server.url + "/v1") == ["llama3.2:3b", "qwen3:8b"]


def test_ollama_model_info_reads_context_length_and_tool_support(model_server):
    model_server.context_length = 40960
    info = ollama_model_info(model_server.url, "qwen3:8b")
    assert info.context_length == 40960
    assert info.supports_tools is True
    model_server.capabilities = ("completion",)
    assert ollama_model_info(model_server.url, "qwen3:8b").supports_tools is False


def test_num_ctx_is_the_real_context_capped_by_the_setting(model_server):
    config = ModelConfig(model="qwen3:8b", base_url=model_server.url, context_limit=8192)
    model_server.context_length = 4096
    assert effective_context(config, ollama_model_info(model_server.url, "qwen3:8b")) == 4096
    model_server.context_length = 131072
    assert effective_context(config, ollama_model_info(model_server.url, "qwen3:8b")) == 8192
    assert effective_context(config, None) == 8192


def test_num_ctx_is_always_sent_to_ollama(model_server):
    model_server.script([Turn(text="hi")])
    config = ModelConfig(model="qwen3:8b", base_url=model_server.url, context_limit=6000)
    create_chat_model(config, num_ctx=5000).invoke("hello")
    assert model_server.chat_requests()[-1].body["options"]["num_ctx"] == 5000


def test_server_down_is_explained_for_ollama_and_openai():
    url = f"http://127.0.0.1:{free_port()}"
    message = _failure(ModelConfig(model="qwen3:8b", base_url=url, timeout=5))
    assert message.startswith(f"Cannot reach the Ollama server at {url}")
    assert "ollama serve" in message
    message = _failure(ModelConfig(provider="openai", model="gpt-x", base_url=url + "/v1", timeout=5))
    assert message.startswith(f"Cannot reach the model server at {url}/v1")
    with pytest.raises(ServerError, match="Cannot reach"):
        list_models("ollama", url)


def test_missing_model_is_explained_with_the_pull_command(model_server):
    message = _failure(ModelConfig(model="mistral:7b", base_url=model_server.url))
    assert "not installed" in message and "ollama pull mistral:7b" in message
    message = _failure(ModelConfig(provider="openai", model="gpt-none", base_url=model_server.url + "/v1"))
    assert "has no model 'gpt-none'" in message


def test_http_errors_and_bad_keys_are_explained(model_server):
    model_server.script([Turn(status=500, error="CUDA out of memory")])
    message = _failure(ModelConfig(model="qwen3:8b", base_url=model_server.url))
    assert "HTTP 500" in message and "CUDA out of memory" in message
    model_server.api_key = "sk-right"
    message = _failure(
        ModelConfig(provider="openai", model="qwen3:8b", base_url=model_server.url + "/v1", api_key="sk-wrong")
    )
    assert "refused the API key (HTTP 401)" in message


def test_timeouts_are_explained(model_server):
    # ChatOpenAI retries once, so its request is scripted twice.
    model_server.script([Turn(text="late", delay_first=3.0)] * 3)
    message = _failure(ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=0.5))
    assert "did not answer within 0.5 s" in message
    message = _failure(ModelConfig(provider="openai", model="qwen3:8b", base_url=model_server.url + "/v1", timeout=0.5))
    assert "did not answer within 0.5 s" in message


def test_settings_that_cannot_work_are_refused_before_any_call():
    with pytest.raises(ModelSetupError, match="No model is selected"):
        create_chat_model(ModelConfig(model=""))
    with pytest.raises(ModelSetupError, match="must start with http"):
        create_chat_model(ModelConfig(model="m", base_url="localhost:11434"))
    assert "key" not in repr(ModelConfig(api_key="sk-secret")).replace("api_key", "")
    assert "sk-secret" not in repr(ModelConfig(api_key="sk-secret"))


def _transport_failure(library: str, url: str) -> BaseException:
    import importlib

    http = importlib.import_module(library)
    with pytest.raises(http.TransportError) as raised:
        http.get(url, timeout=http.Timeout(0.3, connect=5.0))
    return raised.value


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_httpx_and_httpx2_failures_read_the_same_to_the_user(provider):
    # langchain-ollama runs on httpx, openai 3 on httpx2: classes of the same names, sorted by one type mapping.
    config = ModelConfig(provider=provider, base_url=f"http://127.0.0.1:{free_port()}", model="m", timeout=0.3)
    expected = {
        "refused": "Cannot reach the",
        "silent": "did not answer within 0.3 s",
        "dropped": "closed the connection in the middle of its answer",
    }
    for case, start in expected.items():
        words = set()
        for library in ("httpx", "httpx2"):
            if case == "refused":
                exc = _transport_failure(library, f"http://127.0.0.1:{free_port()}")
            else:
                with silent_server() if case == "silent" else hanging_up_server() as url:
                    exc = _transport_failure(library, url)
            words.add(explain_model_error(exc, config))
        assert len(words) == 1 and start in words.pop(), (case, provider)
