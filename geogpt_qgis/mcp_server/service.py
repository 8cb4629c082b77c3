"""The in-plugin MCP server's life in QGIS: started from the settings, stopped on unload, status for the options page.

The Qt shell around ``http.HttpServer``.  It lives on the main thread, where
it makes the tools' ``MainThreadBridge``; everything slow (the token from the
keychain, importing the SDK and the tools, binding the socket) happens on a
background thread, and the result comes back through the ``run_in_background``
the plugin hands in.  The server knows neither front end: the plugin also hands
in how gated calls are decided (the dock's approval cards, ``gui.mcp_approvals``).
The plugin registers its one service (``current_service``) so the options
page can restart it when the settings change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from qgis.PyQt.QtCore import QObject, pyqtSignal

from geogpt_qgis.core.approval import POLICY_NEVER, REJECT, ApprovalRequest, Decision

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from qgis.gui import QgisInterface

    from geogpt_qgis.mcp_server.http import HttpServer
    from geogpt_qgis.mcp_server.tools import Approver
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.toolbelt.preferences import PlgSettings

log = logging.getLogger(__name__)

_current: McpService | None = None


def current_service() -> McpService | None:
    """The plugin's MCP service, while the plugin is loaded."""
    return _current


@dataclass(frozen=True)
class ServerState:
    """What the options page shows: off, serving (URL, token, any warning) or why it could not start."""

    running: bool
    url: str = ""
    token: str = ""
    warning: str = ""
    error: str = ""


class RunInBackground(Protocol):
    """Calls ``work()`` off the main thread and ``on_done(result, error)`` back on it (``gui.background``)."""

    def __call__(self, work: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]) -> None: ...


def policy_approver(policy: str) -> Approver:
    """Without the dock (no chat to show a card in): the policy's "never", else a clear refusal."""
    from geogpt_qgis.mcp_server.tools import NO_ONE_TO_ASK

    async def approver(request: ApprovalRequest, client: str) -> Decision:
        if policy == POLICY_NEVER:
            return Decision(REJECT, automatic=POLICY_NEVER)
        return Decision(REJECT, automatic=NO_ONE_TO_ASK)

    return approver


class McpService(QObject):
    """Starts and stops the Streamable HTTP server as the settings say; ``state_changed`` tells the options page."""

    state_changed = pyqtSignal(object)  # ServerState

    def __init__(
        self,
        iface: QgisInterface | None,
        *,
        run_in_background: RunInBackground,
        approvals: Callable[[str], Approver] | None = None,
        store_path: Path | None = None,
        parent: QObject | None = None,
    ) -> None:
        """``run_in_background`` brings the start's outcome back to the main thread;
        ``approvals`` makes, for the policy, the approver that asks the person (``None``: gated calls are refused);
        ``store_path`` the conversation store whose run log records every call (``None``: not recorded)."""
        super().__init__(parent)
        self.iface = iface
        self.store_path = store_path
        self._run_in_background = run_in_background
        self._make_approvals = approvals
        self._approvals: Approver | None = None
        self.state = ServerState(False)
        self._server: HttpServer | None = None
        self._bridge: MainThreadBridge | None = None
        self._generation = 0  # a start that finishes after a newer apply/stop is discarded
        self._applied: tuple | None = None  # the settings the server runs (or is starting) with

    def register(self) -> None:
        global _current
        _current = self

    def apply(self, settings: PlgSettings) -> None:
        """Restart the server if its settings changed; start it if they switch it on (main thread; returns at once)."""
        wanted = (settings.mcp_enabled, settings.mcp_host, settings.mcp_port, settings.approval_policy)
        if wanted == self._applied and not self.state.error:
            return  # running (or starting) as asked: calls under way are not cut off by an unrelated OK
        self.stop()
        if not settings.mcp_enabled:
            return
        self._applied = wanted
        from qgis.core import QgsProject

        from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
        from geogpt_qgis.tools.base import ToolContext

        self._bridge = MainThreadBridge()
        ctx = ToolContext(project=QgsProject.instance(), bridge=self._bridge, iface=self.iface)
        host, port, policy = settings.mcp_host, settings.mcp_port, settings.approval_policy
        generation = self._generation
        store_path, project_file = self.store_path, QgsProject.instance().fileName()
        approver = policy_approver(policy)
        if self._make_approvals is not None:
            approver = self._approvals = self._make_approvals(policy)

        def start() -> HttpServer:
            import asyncio  # here, not at module level: it costs QGIS start-up ~35 ms, and the server is off by default

            from geogpt_qgis.mcp_server.http import HttpServer
            from geogpt_qgis.mcp_server.run_log import McpRunLog
            from geogpt_qgis.mcp_server.tools import McpTools
            from geogpt_qgis.toolbelt.secrets import mcp_server_token

            run_log = McpRunLog(store_path, project_file) if store_path is not None else None
            tools = McpTools(ctx, approver, run_log=run_log)
            # Building the tool schemas holds the GIL for a moment (QGIS stutters): at start, not while a client waits.
            asyncio.run(tools.toolkit())
            server = HttpServer(tools, mcp_server_token(), host, port)
            server.start()
            server.wait_started()
            return server

        self._run_in_background(start, lambda server, error: self._started(generation, server, error))

    def _started(self, generation: int, server: HttpServer | None, error: BaseException | None) -> None:
        if generation != self._generation:  # stopped (or restarted) meanwhile
            if server is not None:
                _stop_later(server)
            return
        if error is not None or server is None:
            why = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
            log.warning("The MCP server could not start: %s", why)
            self._set(ServerState(False, error=why))
            return
        self._server = server
        if server.warning:
            log.warning("%s", server.warning)
        self._set(ServerState(True, server.url, server.token, server.warning or ""))

    def stop(self) -> None:
        """Stop the server (if any): calls under way are cancelled; main-thread steps not started are skipped."""
        self._generation += 1
        self._applied = None
        if self._bridge is not None:
            self._bridge.close()
            self._bridge = None
        if self._server is not None:
            _stop_later(self._server)
            self._server = None
        if self.state.running or self.state.error:
            self._set(ServerState(False))

    def shutdown(self) -> None:
        """Unload: stop, and forget the registration."""
        global _current
        self.stop()
        if _current is self:
            _current = None

    def _set(self, state: ServerState) -> None:
        self.state = state
        self.state_changed.emit(state)


def _stop_later(server: HttpServer) -> None:
    """End ``server`` without making the main thread wait for its thread."""
    import threading

    server.stop(timeout=0)
    threading.Thread(target=server.stop, name="geogpt-mcp-stop", daemon=True).start()
