"""The secrets registry: what counts as a secret, and every form of it that ``scrub`` removes."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from geogpt_qgis.core import secrets_scrub
from geogpt_qgis.core.secrets_scrub import REDACTED, register, register_password, scrub, scrub_value


@pytest.fixture(autouse=True)
def clean_registry():
    secrets_scrub.forget_all()
    yield
    secrets_scrub.forget_all()


def test_every_simple_encoding_of_a_registered_key_is_removed():
    key = "sk-proj-Ab/c+d=e&f g\"h"
    register(key)
    raw = key.encode()
    forms = [
        key,
        quote(key, safe=""),
        quote_plus(key),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        json.dumps(key)[1:-1],
    ]
    for form in forms:
        text = f"server said: token {form} was refused"
        assert scrub(text) == f"server said: token {REDACTED} was refused", form
    assert scrub(json.dumps({"error": f"bad key {key}"})) == json.dumps({"error": f"bad key {REDACTED}"})


def test_short_values_and_names_shown_openly_are_not_secrets():
    register("1234", "", None)
    assert scrub("pin 1234") == "pin 1234"
    assert register_password("geogpt", "geogpt", "geogpt_demo") is False  # the user name: no secret to keep
    assert scrub("schema geogpt_approvals") == "schema geogpt_approvals"
    assert register_password("s3cret-pw", "geogpt", "geogpt_demo") is True
    assert scrub("password=s3cret-pw") == f"password={REDACTED}"


def test_environment_keys_are_secrets_without_registering(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123456")
    assert scrub("env says sk-from-env-123456") == f"env says {REDACTED}"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert scrub("env says sk-from-env-123456") == "env says sk-from-env-123456"


def test_nested_values_are_scrubbed_and_scrubbing_twice_changes_nothing():
    register("hunter2-long-password")
    data = {"args": ["x", {"sql": "SELECT 'hunter2-long-password'"}], "n": 3}
    assert scrub_value(data) == {"args": ["x", {"sql": f"SELECT '{REDACTED}'"}], "n": 3}
    once = scrub("a hunter2-long-password b")
    assert scrub(once) == once == f"a {REDACTED} b"
