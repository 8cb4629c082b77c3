"""Approvals stay in QGIS: a gated call from an MCP client raises the dock's approval card and waits for the person.

``DockApprovals`` is the in-plugin server's ``Approver`` (``mcp_server.tools``):
the plugin hands it to ``McpService``, so the MCP server never imports the dock.  The approval policy
of the settings applies as in the dock: "never" refuses, "trust" lets the
step run, "ask" shows the same ``ApprovalCard`` in the dock's chat, titled
with the client's name (without "approve all", which belongs to a dock
conversation).  The server's call waits on its own loop (never the main
thread's) and reports "waiting for approval" as MCP progress meanwhile; the
card's answer is handed back thread-safely; a client that hangs up closes
its card.  Only the main thread touches the chat (queued signals).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qgis.PyQt.QtCore import QObject, Qt, pyqtSignal

from geogpt_qgis.core.approval import APPROVE, POLICY_NEVER, POLICY_TRUST, REJECT, ApprovalRequest, Decision
from geogpt_qgis.core.progress import current_progress
from geogpt_qgis.mcp_server.tools import NO_DOCK
from geogpt_qgis.toolbelt.i18n import tr

if TYPE_CHECKING:
    from geogpt_qgis.gui.approval_card import ApprovalCard
    from geogpt_qgis.gui.chat_view import ChatView

# How often a waiting call tells its client it still waits (MCP progress notification).
PROGRESS_EVERY_SECONDS = 5.0


@dataclass(eq=False)
class _Pending:
    request: ApprovalRequest
    client: str
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    card: ApprovalCard | None = field(default=None, repr=False)

    def resolve(self, decision: Decision) -> None:
        """Hand ``decision`` to the waiting call (from the main thread)."""

        def settle() -> None:
            if not self.future.done():
                self.future.set_result(decision)

        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(settle)


class DockApprovals(QObject):
    """Create on the main thread; the server's loop awaits it for every gated call."""

    _asked = pyqtSignal(object)  # _Pending
    _withdrawn = pyqtSignal(object)  # _Pending whose client went away

    def __init__(
        self,
        chat: Callable[[], ChatView | None],
        policy: str,
        progress_every: float = PROGRESS_EVERY_SECONDS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._chat, self.policy, self.progress_every = chat, policy, progress_every
        self._asked.connect(self._show, Qt.ConnectionType.QueuedConnection)
        self._withdrawn.connect(self._withdraw, Qt.ConnectionType.QueuedConnection)

    async def __call__(self, request: ApprovalRequest, client: str) -> Decision:
        if self.policy == POLICY_NEVER:
            return Decision(REJECT, automatic=POLICY_NEVER)
        if self.policy == POLICY_TRUST:
            return Decision(APPROVE, automatic=POLICY_TRUST)
        loop = asyncio.get_running_loop()
        pending = _Pending(request, client, loop, loop.create_future())
        self._asked.emit(pending)
        progress = current_progress.get()
        waited = 0.0
        try:
            while True:
                try:
                    return await asyncio.wait_for(asyncio.shield(pending.future), self.progress_every)
                except TimeoutError:
                    waited += self.progress_every
                    if progress is not None:
                        progress(0.0, f"Waiting for approval in QGIS ({waited:.0f} s): {request.action}")
        except asyncio.CancelledError:
            self._withdrawn.emit(pending)
            raise

    def _show(self, pending: _Pending) -> None:
        """Main thread: the card in the dock's chat, or a refusal when there is no dock to show it in."""
        if pending.future.done():
            return
        chat = self._chat()
        if chat is None:
            pending.resolve(Decision(REJECT, automatic=NO_DOCK))
            return
        from qgis.core import QgsProject  # here: the module stays Qt-only (tests/qgis/test_qt6_smoke.py)

        card = chat.add_approval_card(pending.request.to_dict())
        card.watch_project(QgsProject.instance())  # the MCP tools act on QGIS's own project
        card.title.setText(
            tr("Approval needed for {client} (MCP): {action}").format(
                client=pending.client, action=pending.request.action
            )
        )
        for button in (card.trust_button, card.drop_button):  # a dock conversation's choices, not a client's
            button.setVisible(False)
        card.decided.connect(lambda answer: pending.resolve(Decision.from_value(answer)))
        pending.card = card

    def _withdraw(self, pending: _Pending) -> None:
        if pending.card is not None and pending.card.pending:
            pending.card.close_with(tr("Withdrawn: the MCP client hung up"))
