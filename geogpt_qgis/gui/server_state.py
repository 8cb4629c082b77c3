"""The model server's state in the user's words, and the one next step that gets them to a ready model.

The server picker works the state out from what the server answered (model
list, the chosen model's capabilities); the first-run card shows it and the
input row disables Send with its ``headline`` as the reason.  Qt-free apart
from ``tr``: the wording is tested without a window.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA

# The model the next step suggests: small enough for a laptop, and it calls tools well.
SUGGESTED_MODEL = "qwen3:8b"


class ServerStatus(Enum):
    """How far the server is from answering a question with tools."""

    CHECKING = "checking"  # asked, no answer yet: Send stays usable
    UNREACHABLE = "unreachable"  # no answer at all (not running, wrong host or port)
    FAILED = "failed"  # it answered, but not with a model list (wrong path, refused key...)
    NEEDS_KEY = "needs_key"  # an OpenAI-compatible server and no API key for it yet
    NO_MODEL = "no_model"  # it answers but has no model (or not the one chosen)
    NO_TOOLS = "no_tools"  # the chosen model cannot call tools
    READY = "ready"


@dataclass(frozen=True)
class ServerState:
    """What the first-run card shows: ``headline`` (also Send's tooltip while it is off), what to do next.

    ``command`` is the exact line to run (copied with one click), empty when
    the next step is in the settings (``settings``: the card offers to open them).
    """

    status: ServerStatus
    headline: str
    next_step: str = ""
    command: str = ""
    settings: bool = False

    @property
    def ready(self) -> bool:
        return self.status == ServerStatus.READY

    @property
    def blocks_sending(self) -> bool:
        """Sending is refused only when the server is known not to be usable (never while asking it)."""
        return self.status not in (ServerStatus.READY, ServerStatus.CHECKING)


def checking(url: str) -> ServerState:
    return ServerState(ServerStatus.CHECKING, tr("Checking the model server at {u}…").format(u=url))


def unreachable(provider: str, url: str) -> ServerState:
    if provider == PROVIDER_OLLAMA:
        return ServerState(
            ServerStatus.UNREACHABLE,
            tr("Not reachable: no Ollama server answers at {u}.").format(u=url),
            tr("Start Ollama (install it from ollama.com first if needed), then press Check again:"),
            "ollama serve",
        )
    return ServerState(
        ServerStatus.UNREACHABLE,
        tr("Not reachable: no server answers at {u}.").format(u=url),
        tr("Start your OpenAI-compatible server, or correct its URL (usually ending in /v1) and key in the settings."),
        settings=True,
    )


def failed(detail: str) -> ServerState:
    """The server answered, but not with a model list; ``detail`` says why in the user's words."""
    return ServerState(
        ServerStatus.FAILED,
        detail,
        tr("Correct the server URL or API key in the settings, then press Check again."),
        settings=True,
    )


def needs_key(url: str) -> ServerState:
    """No key for the OpenAI-compatible server chosen: a calm hint (the user may simply not have typed it yet)."""
    from geogpt_qgis.gui.server_queries import key_needed_text

    return ServerState(
        ServerStatus.NEEDS_KEY,
        key_needed_text(url),
        tr("Type the key in the server settings (it is kept in the system keychain), or choose Ollama."),
        settings=True,
    )


def no_model(provider: str, model: str = "") -> ServerState:
    """The server answers but has no model, or not ``model``."""
    if provider != PROVIDER_OLLAMA:
        return ServerState(
            ServerStatus.NO_MODEL,
            tr("Reachable, but the server lists no model."),
            tr("Load a model that can call tools in your server, then press Check again."),
        )
    pull = model or SUGGESTED_MODEL
    headline = (
        tr("Reachable, but the server has no model named {m}.").format(m=model)
        if model
        else tr("Reachable, but no model is installed.")
    )
    return ServerState(
        ServerStatus.NO_MODEL,
        headline,
        tr("Download a model that can call tools, then press Check again:"),
        f"ollama pull {pull}",
    )


def no_tools(model: str) -> ServerState:
    return ServerState(
        ServerStatus.NO_TOOLS,
        tr("Reachable, but {m} cannot call tools natively: GeoGPT asks it for guided tool calls.").format(m=model),
        tr("Models that call tools natively work better; download one, choose it above, and press Check again:"),
        f"ollama pull {SUGGESTED_MODEL}",
    )


def ready(model: str, url: str) -> ServerState:
    return ServerState(ServerStatus.READY, tr("Ready: {m} at {u}.").format(m=model, u=url))


def model_state(provider: str, url: str, model: str, info: object, error: BaseException | None) -> ServerState:
    """The state after asking an Ollama server about ``model``: ``info`` (a ``ModelInfo``) or the ``error``."""
    from geogpt_qgis.gui.server_queries import explain_server_error

    if error is None:
        cannot = info is not None and getattr(info, "supports_tools", None) is False
        return no_tools(model) if cannot else ready(model, url)
    if getattr(error, "unreachable", False):
        return unreachable(provider, url)
    if getattr(error, "status_code", None) == 404:
        return no_model(provider, model)
    return failed(explain_server_error(error, provider, url))
