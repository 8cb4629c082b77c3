"""The dock agent's tools as MCP tools: the same toolkit, schemas, checks, approvals and error texts.

An MCP client is one more caller of ``agent.toolkit.Toolkit``: its calls are
checked by the same argument validation, a gated call is previewed by the same
``approval_request`` and only runs with a ``Decision`` (from an ``Approver``),
and the text returned is the text the dock's model would read.  Errors the
caller made (unknown tool, bad arguments, a mistake the tool found) come back
as tool results with ``isError`` set, so a client's model can correct itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from geogpt_qgis.core.approval import REJECT, ApprovalRequest, Decision, approval_preview, rejection_message
from geogpt_qgis.core.artifacts import EMPTY, ToolArtifact
from geogpt_qgis.core.cancel import CancelToken, RunCancelled, current_cancel_token
from geogpt_qgis.core.progress import current_progress
from geogpt_qgis.core.provenance import RunOrigin, current_origin

if TYPE_CHECKING:
    from geogpt_qgis.agent.store import RunLog
    from geogpt_qgis.agent.toolkit import Toolkit, ToolOutcome
    from geogpt_qgis.mcp_server.run_log import McpRunLog
    from geogpt_qgis.tools.base import ToolContext, ToolFamily

# ``Decision.automatic`` when nobody could be asked (the headless stdio server), or the dock is not there.
NO_ONE_TO_ASK = "no-one-to-ask"
NO_DOCK = "no-dock"

ProgressSink = Callable[[float, str], None]


class Approver(Protocol):
    """Decides a gated call for an MCP client: the person at QGIS, or a fixed policy."""

    def __call__(self, request: ApprovalRequest, client: str) -> Awaitable[Decision]: ...


@dataclass(frozen=True)
class CallAnswer:
    """What an MCP call returns: the tool's text, whether it is an error, and the artifact (as JSON)."""

    text: str
    is_error: bool
    artifact: dict[str, Any] | None = None


async def refuse_without_a_person(request: ApprovalRequest, client: str) -> Decision:
    """The headless server's approver: nobody is there to approve, so gated calls never run."""
    return Decision(REJECT, automatic=NO_ONE_TO_ASK)


def refusal_text(decision: Decision, request: ApprovalRequest) -> str:
    """What the client reads when a gated call did not run."""
    if decision.automatic == NO_ONE_TO_ASK:
        return (
            f"Not done: {request.action.lower()} needs the approval of the person using QGIS, and this MCP server "
            "(python -m geogpt_qgis mcp, headless) has no one to ask. Connect to the MCP server inside the QGIS "
            "plugin (Settings > Options > GeoGPT), whose dock asks the user, or restart this one with "
            "--approval trust to let such steps run."
        )
    if decision.automatic == NO_DOCK:
        return (
            f"Not done: {request.action.lower()} needs the approval of the person using QGIS, and the GeoGPT dock, "
            "where they approve, is not open. Ask them to open it (Plugins > GeoGPT), then try again."
        )
    return rejection_message(decision, request)


# Calls that run at once, and calls that may wait for one of them; past both, a call is told the server is busy.
MAX_RUNNING = 2
MAX_WAITING = 8


class McpTools:
    """The active tool families of a project, served to MCP clients.

    At most ``max_running`` calls run at once (QGIS's main thread serves them
    all through the bridge); ``max_waiting`` more wait in line, and a call past
    that is answered at once with a "busy" error rather than queued without end.
    """

    def __init__(
        self,
        ctx: ToolContext,
        approver: Approver = refuse_without_a_person,
        max_running: int = MAX_RUNNING,
        max_waiting: int = MAX_WAITING,
        run_log: McpRunLog | None = None,
    ) -> None:
        from geogpt_qgis.tools.registry import build_families

        self.ctx = ctx
        self.approver = approver
        self.families: list[ToolFamily] = build_families(ctx)
        self._toolkits: dict[tuple, Toolkit] = {}
        self.max_running, self.max_waiting = max_running, max_waiting
        self.run_log = run_log
        self._admitted = 0
        self._slots: asyncio.Semaphore | None = None  # made on the server's loop, at the first call

    async def toolkit(self) -> Toolkit:
        """The toolkit of the families available now (a saved PostGIS connection, say), as the agent builds it."""
        from geogpt_qgis.agent.toolkit import Toolkit
        from geogpt_qgis.tools.provenance import ProvenanceRecorder
        from geogpt_qgis.tools.registry import active_families

        families = await asyncio.to_thread(active_families, self.families)
        tools = [tool for family in families for tool in family.tools()]
        key = tuple((id(tool.__self__), tool.__name__) for tool in tools)  # type: ignore[attr-defined]
        toolkit = self._toolkits.get(key)
        if toolkit is None:
            toolkit = self._toolkits[key] = await asyncio.to_thread(Toolkit, tools, None, ProvenanceRecorder(self.ctx))
        return toolkit

    async def catalogue(self) -> list[dict[str, Any]]:
        """Name, description, input schema and whether it may need approval, for every tool offered."""
        toolkit = await self.toolkit()
        entries = []
        for schema, tool in zip(toolkit.bounded_schemas, toolkit.tools, strict=True):
            function = schema["function"]
            parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
            parameters.setdefault("properties", {})
            entries.append(
                {
                    "name": function["name"],
                    "description": function.get("description", ""),
                    "inputSchema": parameters,
                    "gated": _is_gated(tool),
                }
            )
        return entries

    async def call(self, name: str, arguments: Any, client: str, progress: ProgressSink | None = None) -> CallAnswer:
        """Run one call for ``client`` when a slot is free; "busy" at once when too many are running and waiting."""
        limit = self.max_running + self.max_waiting
        if self._admitted >= limit:
            return CallAnswer(
                f"Error: the GeoGPT MCP server is busy: {limit} calls are running or waiting, the most it takes. "
                "Try again when one has finished.",
                True,
            )
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_running)
        self._admitted += 1
        try:
            async with self._slots:
                if self.run_log is None:
                    return await self._call(name, arguments, client, progress)
                return await self._logged(self.run_log, name, arguments, client, progress)
        finally:
            self._admitted -= 1

    async def _logged(
        self, run_log: McpRunLog, name: str, arguments: Any, client: str, progress: ProgressSink | None
    ) -> CallAnswer:
        """``_call``, recorded in ``run_log`` as a run of its own (the client's name in its label)."""
        from geogpt_qgis.core.events import ToolFinished, ToolStarted

        log = await run_log.start(client, name)
        call_id = f"mcp-{id(log)}"
        started = time.perf_counter()
        await log.record(ToolStarted(call_id, name, arguments if isinstance(arguments, dict) else {}))
        try:
            answer = await self._call(name, arguments, client, progress, log)
        except BaseException:
            await asyncio.shield(log.finish("cancelled", "the MCP client went away"))
            raise
        seconds = time.perf_counter() - started
        artifact = ToolArtifact.from_dict(answer.artifact) if answer.artifact else EMPTY
        await log.record(ToolFinished(call_id, name, not answer.is_error, answer.text, seconds, artifact))
        await log.finish("finished" if not answer.is_error else "failed", None)
        return answer

    async def _call(
        self, name: str, arguments: Any, client: str, progress: ProgressSink | None, log: RunLog | None = None
    ) -> CallAnswer:
        """Run one call; a gated call runs only when the approver approves it.

        The call gets its own cancel token: when the client goes away (the
        request is cancelled), main-thread steps not started yet are skipped.
        """
        toolkit = await self.toolkit()
        arguments = {} if arguments is None else arguments
        cancel = CancelToken()
        cancel_token = current_cancel_token.set(cancel)
        progress_token = current_progress.set(progress)
        origin_token = current_origin.set(RunOrigin.mcp(client))  # the provenance of the layers it adds
        try:
            request = await toolkit.approval_request(f"mcp-{id(cancel)}", name, arguments)
            if isinstance(request, ApprovalRequest):
                if log is not None:
                    from geogpt_qgis.core.events import ApprovalRequested

                    await log.record(ApprovalRequested(request.to_dict()))
                decision = await self.approver(request, client)
                if not decision.approved:
                    return CallAnswer(refusal_text(decision, request), True)
                if decision.edited is not None and request.editable and isinstance(arguments, dict):
                    arguments = {**arguments, request.editable: decision.edited}
                    note = (
                        f"Note: the user edited the {request.editable} before approving; "
                        f"this version ran:\n{decision.edited}\n\n"
                    )
                    answer = _answer(await toolkit.run(name, arguments, decision, request))
                    return CallAnswer(note + answer.text, answer.is_error, answer.artifact)
                # It runs only if it still resolves to the layers, tables and files the person approved.
                return _answer(await toolkit.run(name, arguments, decision, request))
            if request is not None:  # the preview broke: answered with its error, never run
                return _answer(request)
            return _answer(await toolkit.run(name, arguments, None))
        except (asyncio.CancelledError, RunCancelled):
            cancel.cancel()
            raise
        finally:
            current_origin.reset(origin_token)
            current_progress.reset(progress_token)
            current_cancel_token.reset(cancel_token)


def _answer(outcome: ToolOutcome) -> CallAnswer:
    artifact = None if outcome.artifact.empty else outcome.artifact.to_dict()
    return CallAnswer(outcome.text, not outcome.ok, artifact)


def _is_gated(tool: Any) -> bool:
    return tool.func is not None and approval_preview(tool.func) is not None
