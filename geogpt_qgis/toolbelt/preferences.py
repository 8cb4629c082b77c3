"""Typed plugin settings over ``QgsSettings``.

One dataclass lists every setting with its type and default; one manager
reads and writes the ``geogpt_qgis`` group.  No other module calls
``QgsSettings`` for plugin settings.  Secrets never live here: API keys go
through ``toolbelt.secrets``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from geogpt_qgis.__about__ import PLUGIN_ID

PROVIDER_OLLAMA = "ollama"
PROVIDER_OPENAI = "openai"
PROVIDERS = (PROVIDER_OLLAMA, PROVIDER_OPENAI)


@dataclass
class PlgSettings:
    """Every plugin setting, with its default."""

    provider: str = PROVIDER_OLLAMA
    ollama_url: str = "http://localhost:11434"
    ollama_model: str = ""
    openai_base_url: str = "https://api.openai.com/v1"
    openai_model: str = ""
    temperature: float = 0.1
    context_limit: int = 8192
    max_steps: int = 15
    request_timeout: float = 120.0
    # The most tokens of one model reply (num_predict / max_tokens): a model stuck in a loop stops there.
    max_answer_tokens: int = 1024
    # How tool calls are asked for: "auto", "native" (the server's tool calling) or "guided" (a JSON-schema reply).
    tool_calls: str = "auto"
    # Which tools a new conversation is offered: "auto" (from the model's size), "full" or "compact" (8 tools).
    tool_profile: str = "auto"
    debug_mode: bool = False
    dock_visible: bool = True
    # Saved PostgreSQL connections the agent may use: "*" for all, else names separated by commas.
    postgis_connections: str = "*"
    sql_timeout: float = 30.0
    # OGC API Features servers: one per line, "Name = URL" or a bare URL.
    ogc_servers: str = ""
    ogc_timeout: float = 30.0
    sql_row_cap: int = 1_000_000
    # Before code, SQL writes, deletions and file writes: "ask", "trust" (this conversation) or "never".
    approval_policy: str = "ask"
    code_timeout: float = 30.0
    # The MCP server inside the plugin (mcp_server/): off unless switched on; loopback unless an address is typed.
    mcp_enabled: bool = False
    mcp_host: str = "127.0.0.1"
    mcp_port: int = 8765
    last_thread_id: str = ""
    last_export_folder: str = ""  # where the last conversation export went: the next one is proposed there

    @property
    def base_url(self) -> str:
        """The server URL of the selected provider."""
        return self.ollama_url if self.provider == PROVIDER_OLLAMA else self.openai_base_url

    @property
    def model(self) -> str:
        """The model name of the selected provider."""
        return self.ollama_model if self.provider == PROVIDER_OLLAMA else self.openai_model


def _field_types() -> dict[str, type]:
    defaults = PlgSettings()
    return {f.name: type(getattr(defaults, f.name)) for f in fields(PlgSettings)}


def _coerce(value: Any, kind: type, default: Any) -> Any:
    """Turn what QSettings returns (often strings) into the declared type."""
    if value is None:
        return default
    try:
        if kind is bool:
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        return kind(value)
    except (TypeError, ValueError):
        return default


class PlgOptionsManager:
    """Read and write the plugin's settings group."""

    GROUP = PLUGIN_ID

    @classmethod
    def get_plg_settings(cls) -> PlgSettings:
        """Load all settings, falling back to defaults for missing or malformed values."""
        from qgis.core import QgsSettings

        settings = QgsSettings()
        settings.beginGroup(cls.GROUP)
        defaults = PlgSettings()
        values: dict[str, Any] = {}
        for name, kind in _field_types().items():
            default = getattr(defaults, name)
            values[name] = _coerce(settings.value(name, default), kind, default)
        settings.endGroup()
        return PlgSettings(**values)

    @classmethod
    def set_value(cls, key: str, value: Any) -> None:
        """Store one setting; unknown keys are a programming error."""
        from qgis.core import QgsSettings

        kinds = _field_types()
        if key not in kinds:
            raise KeyError(f"unknown GeoGPT setting {key!r}")
        settings = QgsSettings()
        settings.setValue(f"{cls.GROUP}/{key}", _coerce(value, kinds[key], value))

    @classmethod
    def save(cls, plg_settings: PlgSettings) -> None:
        """Store every setting of ``plg_settings``."""
        for key, value in asdict(plg_settings).items():
            cls.set_value(key, value)
