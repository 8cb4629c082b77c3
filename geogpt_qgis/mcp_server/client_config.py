"""The configuration an MCP client needs to reach the in-plugin server, ready to paste (Qt-free)."""

from __future__ import annotations

import json

SERVER_NAME = "geogpt-qgis"


def client_config(url: str, token: str) -> str:
    """The ``mcpServers`` entry desktop clients read (Streamable HTTP, with the bearer token as a header)."""
    entry = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    return json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)
