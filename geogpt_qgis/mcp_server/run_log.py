"""Every MCP call in the run log, with the client's name: one conversation per client in the dock's store.

The calls are written to the same store and tables as the dock's runs
(``agent.store``), so the dock's run log and exports show them: each call is
a run labelled ``MCP call from <client>: <tool>``, with the tool step, the
approval asked for, the result and how it ended, in a conversation titled
``MCP: <client>``.  The server's loop keeps its own connection (SQLite in WAL
mode takes writers from both the agent and the server).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geogpt_qgis.agent.store import ConversationStore, RunLog


def client_thread_id(client: str) -> str:
    """The conversation id of a client's calls (stable, so a client's calls gather in one place)."""
    return "mcp-" + (re.sub(r"[^a-z0-9]+", "-", client.lower()).strip("-") or "client")[:60]


class McpRunLog:
    """Opens the store on first use, on the server's loop; ``start`` begins a call's run."""

    def __init__(self, store_path: Path, project_file: str = "") -> None:
        self.store_path, self.project_file = store_path, project_file
        self._store: ConversationStore | None = None
        self._connection: Any = None
        self._lock: asyncio.Lock | None = None

    async def _opened(self) -> ConversationStore:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._store is None:
                import aiosqlite

                from geogpt_qgis.agent.store import ConversationStore

                self.store_path.parent.mkdir(parents=True, exist_ok=True)
                self._connection = await aiosqlite.connect(str(self.store_path))
                await self._connection.execute("PRAGMA journal_mode=WAL")
                await self._connection.execute("PRAGMA busy_timeout=5000")
                store = ConversationStore(self._connection)
                await store.setup()
                self._store = store
        return self._store

    async def start(self, client: str, tool: str) -> RunLog:
        store = await self._opened()
        thread_id = client_thread_id(client)
        await store.touch(thread_id, f"MCP: {client}", self.project_file)
        return await store.start_run(thread_id, f"MCP call from {client}: {tool}")

    async def runs(self, client: str) -> list[Any]:
        return await (await self._opened()).runs(client_thread_id(client))

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection, self._store = None, None
