"""How servers word a prompt longer than their window, and what the user reads (agent/providers/explain.py)."""

from __future__ import annotations

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.providers.explain import explain_model_error

CONFIG = ModelConfig(provider="openai", base_url="http://127.0.0.1:8080/v1", model="m")


class HTTPFailure(Exception):
    """Shaped as the openai client's APIStatusError: a status code and the decoded error body."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = {"error": {"message": message}}


@pytest.mark.parametrize(
    "message",
    [
        # llama-cpp-python (non-streamed) and vLLM
        "This model's maximum context length is 2048 tokens. However, you requested 3100 tokens "
        "(3100 in the messages, None in the completion). Please reduce the length of the messages or completion.",
        # llama.cpp's llama-server
        "the request exceeds the available context size, try increasing it",
    ],
)
def test_a_context_overflow_names_the_window_and_both_ways_out(message):
    text = explain_model_error(HTTPFailure(400, message), CONFIG)
    assert text.startswith("The conversation does not fit in the model's context window.")
    assert message[:40] in text  # the server's own numbers
    assert "--context-limit" in text and "larger context" in text


def test_an_empty_stream_is_explained_with_its_likely_cause():
    # What LangChain raises when a server answers 200 and streams nothing (llama-cpp-python on overflow).
    text = explain_model_error(ValueError("No generation chunks were returned"), CONFIG)
    assert "sent no answer at all" in text and "--n_ctx" in text and "--context-limit" in text


def test_other_bad_requests_are_not_called_overflows():
    text = explain_model_error(HTTPFailure(400, "Unknown parameter: 'foo'"), CONFIG)
    assert "context window" not in text and "Unknown parameter" in text
