"""Which model to talk to, and how: a plain value object built from settings.

Importing this module is cheap; it is used on the main thread to snapshot the
settings for a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from geogpt_qgis.toolbelt.preferences import PROVIDER_OLLAMA, PROVIDER_OPENAI, PROVIDERS, PlgSettings

DEFAULT_OLLAMA_URL = "http://localhost:11434"

# How the model is asked for tool calls: the server's own tool calling (native), a reply constrained by a JSON
# schema that admits exactly one offered call or an answer (guided), or chosen per server and model (auto).
TOOL_CALLS_AUTO, TOOL_CALLS_NATIVE, TOOL_CALLS_GUIDED = "auto", "native", "guided"
TOOL_CALL_MODES = (TOOL_CALLS_AUTO, TOOL_CALLS_NATIVE, TOOL_CALLS_GUIDED)
# Which tools a conversation is offered: all of them (full), at most 8 for small models (compact), or chosen
# from what the server says of the model (auto); fixed for a conversation once chosen.
PROFILE_AUTO, PROFILE_FULL, PROFILE_COMPACT = "auto", "full", "compact"
TOOL_PROFILES = (PROFILE_AUTO, PROFILE_FULL, PROFILE_COMPACT)


class ModelSetupError(ValueError):
    """The model settings cannot work; the message tells the user what to change."""


@dataclass(frozen=True)
class ModelConfig:
    """Everything needed to build a chat model; ``api_key`` never appears in ``repr``."""

    provider: str = PROVIDER_OLLAMA
    base_url: str = DEFAULT_OLLAMA_URL
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.1
    context_limit: int = 8192
    timeout: float = 120.0
    max_steps: int = 15
    # The most tokens one model reply may have (sent as num_predict / max_tokens): a looping model stops there.
    max_tokens: int = 1024
    tool_calls: str = TOOL_CALLS_AUTO
    tool_profile: str = PROFILE_AUTO

    def validate(self) -> None:
        """Raise ``ModelSetupError`` for settings that cannot work."""
        if self.provider not in PROVIDERS:
            raise ModelSetupError(f"Unknown provider {self.provider!r}; use one of: {', '.join(PROVIDERS)}.")
        if not self.base_url.startswith(("http://", "https://")):
            raise ModelSetupError(f"The server URL {self.base_url!r} must start with http:// or https://.")
        if not self.model:
            where = "Ollama (`ollama pull qwen3:8b`)" if self.provider == PROVIDER_OLLAMA else "the server"
            raise ModelSetupError(f"No model is selected. Pick one in the model list; install one with {where}.")
        if self.context_limit < 1024:
            raise ModelSetupError("The context limit must be at least 1024 tokens.")
        if self.max_steps < 1:
            raise ModelSetupError("The step limit must be at least 1.")
        if self.max_tokens < 64:
            raise ModelSetupError("The answer length limit must be at least 64 tokens.")
        if self.tool_calls not in TOOL_CALL_MODES:
            modes = ", ".join(TOOL_CALL_MODES)
            raise ModelSetupError(f"Unknown tool-call mode {self.tool_calls!r}; use one of: {modes}.")
        if self.tool_profile not in TOOL_PROFILES:
            profiles = ", ".join(TOOL_PROFILES)
            raise ModelSetupError(f"Unknown tool profile {self.tool_profile!r}; use one of: {profiles}.")

    def with_key(self, api_key: str | None) -> ModelConfig:
        return replace(self, api_key=api_key)

    @property
    def label(self) -> str:
        """``qwen3:8b on Ollama (http://localhost:11434)``."""
        kind = "Ollama" if self.provider == PROVIDER_OLLAMA else "OpenAI-compatible server"
        return f"{self.model or '(no model)'} on {kind} ({self.base_url})"


def model_config_from_settings(settings: PlgSettings) -> ModelConfig:
    """Snapshot the user's settings for one run (the key is looked up later, off the main thread)."""
    return ModelConfig(
        provider=settings.provider,
        base_url=settings.base_url.rstrip("/"),
        model=settings.model,
        temperature=settings.temperature,
        context_limit=settings.context_limit,
        timeout=settings.request_timeout,
        max_steps=settings.max_steps,
        max_tokens=settings.max_answer_tokens,
        tool_calls=settings.tool_calls,
        tool_profile=settings.tool_profile,
    )


__all__ = ["PROVIDER_OLLAMA", "PROVIDER_OPENAI", "ModelConfig", "ModelSetupError", "model_config_from_settings"]
