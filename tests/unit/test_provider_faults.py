"""Failures sorted by exception type (agent/providers/faults.py): httpx and httpx2 give the same kinds.

langchain-ollama runs on httpx, openai 3 on its fork httpx2; both raise classes
of the same names that are not the same classes.  Each fault is made for real
(a refused port, a server that never answers, one that hangs up), once per
library, and must read the same (tests/qgis/test_providers.py: and be worded the same for the user).
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from geogpt_qgis.agent.providers.faults import Fault, faults
from tests.support.net import free_port, hanging_up_server, silent_server

LIBRARIES = ("httpx", "httpx2")


def failure(library: str, url: str) -> BaseException:
    http = importlib.import_module(library)
    with pytest.raises(http.TransportError) as raised:
        http.get(url, timeout=http.Timeout(0.3, connect=5.0))
    return raised.value


def each_library(url: str) -> dict[str, BaseException]:
    return {library: failure(library, url) for library in LIBRARIES}


def test_a_refused_connection_is_a_connect_failure_in_both_libraries():
    errors = each_library(f"http://127.0.0.1:{free_port()}")
    assert {library: faults(exc) for library, exc in errors.items()} == dict.fromkeys(
        LIBRARIES, Fault.CONNECT | Fault.CONNECTION
    )


def test_a_server_that_never_answers_is_a_timeout_in_both_libraries():
    with silent_server() as url:
        errors = each_library(url)
    assert {library: faults(exc) for library, exc in errors.items()} == dict.fromkeys(LIBRARIES, Fault.TIMEOUT)


def test_a_server_that_hangs_up_is_dropped_in_both_libraries():
    errors = {}
    for library in LIBRARIES:
        with hanging_up_server() as url:
            errors[library] = failure(library, url)
    assert {library: faults(exc) for library, exc in errors.items()} == dict.fromkeys(LIBRARIES, Fault.DROPPED)


def test_openai_errors_wrap_the_same_kinds():
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.APIConnectionError) as refused:
        client.models.list()
    assert faults(refused.value) == Fault.CONNECT | Fault.CONNECTION
    with silent_server() as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=0.3)
        with pytest.raises(openai.APITimeoutError) as slow:
            client.models.list()
    assert faults(slow.value) == Fault.TIMEOUT | Fault.CONNECTION  # APITimeoutError is an APIConnectionError


def test_reading_a_failure_imports_no_client_library():
    code = (
        "import sys\n"
        "from geogpt_qgis.agent.providers.faults import Fault, faults\n"
        "assert faults(ConnectionRefusedError(111, 'refused')) == Fault.CONNECTION\n"
        "print(sorted(m for m in ('httpx', 'httpx2', 'openai', 'ollama', 'pydantic') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_ollamas_error_in_the_middle_of_an_answer_is_said_as_the_servers():
    import ollama

    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.providers.explain import explain_model_error

    stopped = ollama.ResponseError("llama runner process has terminated")  # as the client raises a streamed error
    assert faults(stopped) == Fault.STOPPED
    config = ModelConfig(provider="ollama", base_url="http://127.0.0.1:11434", model="qwen3:8b")
    assert explain_model_error(stopped, config) == (
        "The Ollama server at http://127.0.0.1:11434 stopped with an error: llama runner process has terminated. "
        "Try again."
    )


def test_a_reply_the_clients_schema_refuses_is_a_schema_fault():
    import pydantic

    class Reply(pydantic.BaseModel):
        name: str

    with pytest.raises(pydantic.ValidationError) as refused:
        Reply.model_validate({"name": None})
    wrapped = RuntimeError("the client gave up")
    wrapped.__cause__ = refused.value  # as ``raise ... from``
    assert faults(wrapped) == Fault.SCHEMA  # found among the causes
