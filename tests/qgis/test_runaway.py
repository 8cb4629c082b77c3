"""Runaway answers end: a bound on every reply, a model that repeats itself is stopped, --timeout holds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.events import AnswerCut
from tests.support.demo import copy_demo
from tests.support.model_server import Turn
from tests.support.runs import ask

LOOP = "How many schools are there?\n" * 400


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_model_that_repeats_itself_is_stopped_and_what_it_said_is_kept(provider, model_server, worker, recorder):
    model_server.script([Turn(text=LOOP, chunk_delay=0.002), Turn(text="Fine.")])
    base = model_server.url if provider == "ollama" else model_server.url + "/v1"
    config = ModelConfig(provider=provider, base_url=base, model="qwen3:8b", timeout=20, max_tokens=900)
    run = worker.submit("How many schools are there?", config)
    finished = recorder.wait(run, 30)
    assert finished.status == "finished", finished.error
    (cut,) = recorder.of(run, AnswerCut)
    assert cut.reason == "loop" and "repeating itself" in cut.text
    shown = recorder.text(run)
    assert shown.startswith("How many schools are there?\n") and len(shown) < len(LOOP) // 10  # stopped early
    body = model_server.chat_requests()[0].body
    if provider == "ollama":
        assert body["options"]["num_predict"] == 900
    else:
        assert body["max_tokens"] == 900 and "max_completion_tokens" not in body
    # The conversation goes on, with the answer as the user saw it.
    assert recorder.wait(worker.submit("Thanks", config), 30).status == "finished"
    sent = model_server.chat_requests()[-1].body["messages"]
    assert sent[-2] == {"role": "assistant", "content": shown} or sent[-2]["content"] == shown


@pytest.fixture
def user_data(tmp_path, monkeypatch) -> Path:
    """The command reads a QGIS profile of its own, never the user's real one."""
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return data


def test_the_command_ends_within_its_timeout_whatever_the_model_does(model_server, tmp_path, user_data):
    endless = " ".join(f"word{i}" for i in range(100_000))  # never repeats, never ends (50 tokens a second)
    model_server.script([Turn(text=endless, chunk_delay=0.02)])
    project = copy_demo(tmp_path / "demo")
    started = time.monotonic()
    done = ask(
        "Tell me everything.", "--project", str(project), "--base-url", model_server.url, "--model", "qwen3:8b",
        "--timeout", "30", "--max-tokens", "100000",
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert "no answer within 30 s (--timeout); stopped." in done.stderr
    # What streamed was shown.  (The first run imports the agent stack before the model is asked: 3-4 s on a
    # loaded machine, over 10 s with three test suites and more on 2 cores, when a 10 s timeout saw no word.)
    assert done.stdout.startswith("word0 word1")
    assert took < 30 + 30, took  # the deadline counts from the question; QGIS starts in a few seconds
    assert model_server.chat_requests()[0].body["options"]["num_predict"] == 100000
