"""What the server/model picker asks the model server and the keychain, and how it words the answers.

The query functions block (HTTP, keychain) and are meant for
``run_in_background``; the HTTP client (``toolbelt.network``, through
``agent.providers``) and the keychain are imported there, not at QGIS start-up.
The wording functions run on the main thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PROVIDER_OPENAI

if TYPE_CHECKING:
    from geogpt_qgis.agent.providers.discovery import ModelInfo


class KeyNeeded(Exception):
    """No API key anywhere for an OpenAI-compatible server that wants one: a step still to take, not a failure."""

    key_needed = True


def fetch_models(provider: str, url: str, api_key: str | None = None) -> list[str]:
    """The server's model names (background).  Without ``api_key``, an OpenAI-compatible server gets the stored one.

    With no key at all, a server off this machine is not asked (it would refuse), and a local one that refuses
    is answered the same: ``KeyNeeded``, which the picker shows as a hint rather than an error.
    """
    from geogpt_qgis.agent.providers.discovery import list_models

    if provider != PROVIDER_OPENAI or api_key:
        return list_models(provider, url, api_key)
    from geogpt_qgis.toolbelt.hosts import is_local_server
    from geogpt_qgis.toolbelt.secrets import get_api_key

    api_key = get_api_key(url)
    if not api_key and not is_local_server(url):
        raise KeyNeeded(url)
    try:
        return list_models(provider, url, api_key)
    except Exception as exc:
        if not api_key and getattr(exc, "status_code", None) in (401, 403):
            raise KeyNeeded(url) from exc
        raise


def key_needed_text(url: str) -> str:
    return tr("Enter the API key for {u}, or pick a local server.").format(u=url)


def model_info(url: str, model: str) -> ModelInfo:
    """Context length and tool support of an Ollama model (background)."""
    from geogpt_qgis.agent.providers.discovery import ollama_model_info

    return ollama_model_info(url, model)


def store_key(url: str, key: str) -> str:
    """Store the API key for ``url`` (background: the keychain may be slow or ask to be unlocked); say where."""
    from geogpt_qgis.toolbelt.secrets import set_api_key

    return set_api_key(url, key)


def has_key(url: str) -> bool:
    """Whether a key for ``url`` is stored (background: the keychain may be slow)."""
    from geogpt_qgis.toolbelt.secrets import has_stored_key

    return has_stored_key(url)


def key_saved_text(where: str) -> str:
    """Tell the user where the key went (``secrets.KEYCHAIN`` or ``secrets.AUTH_DB``)."""
    from geogpt_qgis.toolbelt.secrets import AUTH_DB

    if where == AUTH_DB:
        return tr("API key saved in the QGIS authentication database.")
    return tr("API key saved in the system keychain.")


def no_tools_warning() -> str:
    return tr(
        "This model cannot call tools natively; GeoGPT asks it for guided tool calls (Tool calls: Auto or Guided)."
    )


def connected_text(models: list[str] | None) -> str:
    count = len(models or [])
    if count == 1:
        return tr("Connected: 1 model available.")
    return tr("Connected: {n} models available.").format(n=count)


def explain_server_error(exc: BaseException, provider: str, url: str) -> str:
    """One actionable sentence for a failed model-list request (dead server, wrong URL, refused key...)."""
    from geogpt_qgis.agent.config import ModelConfig
    from geogpt_qgis.agent.providers.discovery import CONNECT_TIMEOUT
    from geogpt_qgis.agent.providers.explain import explain_model_error

    if getattr(exc, "key_needed", False):
        return key_needed_text(url)
    status = getattr(exc, "status_code", None)
    if status == 404:
        hint = (
            tr("OpenAI-compatible servers usually end in /v1")
            if provider == PROVIDER_OPENAI
            else tr("Ollama's is usually http://localhost:11434")
        )
        return tr("The server at {u} has no model list there (HTTP 404). Check the server URL ({h}).").format(
            u=url, h=hint
        )
    if status is not None or getattr(exc, "unreachable", False):
        config = ModelConfig(provider=provider, base_url=url, timeout=CONNECT_TIMEOUT)
        return explain_model_error(exc, config)
    return str(exc)  # already written for the user (not an http(s) URL, not JSON...)


def connection_test_text(models: list[str] | None, error: BaseException | None, provider: str, url: str) -> str:
    """What "Test connection" shows: the model count, or why it failed and what to do."""
    if error is None:
        return connected_text(models)
    return tr("Connection failed: ") + explain_server_error(error, provider, url)
