"""``python -m geogpt_qgis mcp PROJECT``: the plugin's tools over MCP's stdio transport, without QGIS's window.

For MCP clients that start their server themselves (desktop chat apps, code
editors).  QGIS runs headless on the main thread, whose Qt event loop serves
the tools' main-thread bridge; the MCP server runs its asyncio loop on a
thread of its own and reads requests from stdin until the client closes it.
Result layers go to a scratch GeoPackage: serving a project never writes
beside it.  Nobody is there to approve a step that changes data, writes a
file or runs code: ``--approval never`` (the default) refuses them with a
message saying so, ``--approval trust`` lets them run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from geogpt_qgis.core.approval import APPROVE, POLICY_TRUST, ApprovalRequest, Decision

if TYPE_CHECKING:
    from qgis.core import QgsProject

    from geogpt_qgis.mcp_server.tools import McpTools

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


async def approve_everything(request: ApprovalRequest, client: str) -> Decision:
    """``--approval trust``: the person who started the server trusts its clients with every step."""
    return Decision(APPROVE, automatic=POLICY_TRUST)


def serve_project(project_file: str, approval: str, err: TextIO) -> int:
    """Open ``project_file`` in headless QGIS and serve its tools over stdio until the client hangs up."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    path = Path(project_file)
    if not path.is_file():
        err.write(f"error: no project file at {path}\n")
        return EXIT_USAGE

    from qgis.core import QgsApplication, QgsProject

    from geogpt_qgis.toolbelt.qgis_profile import user_profile_folder

    # Platform "desktop", as the command: 3.40+ ignores the profile folder for any other platform name.
    app = QgsApplication([], False, user_profile_folder(), "desktop")
    app.initQgis()
    from geogpt_qgis.tools.processing.catalog import ensure_processing

    ensure_processing()
    from geogpt_qgis.tools.result_store import ResultStore, set_result_store

    scratch = Path(tempfile.mkdtemp(prefix="geogpt-mcp-results-"))
    try:
        project = QgsProject.instance()
        if not project.read(str(path)):
            err.write(f"error: QGIS could not read the project {path}: {project.error()}\n")
            return EXIT_USAGE
        set_result_store(project, ResultStore(scratch, follow_project=False))
        return _serve(project, approval, err)
    finally:
        QgsProject.instance().clear()
        set_result_store(QgsProject.instance(), None)
        app.exitQgis()
        shutil.rmtree(scratch, ignore_errors=True)


def _serve(project: QgsProject, approval: str, err: TextIO) -> int:
    """Run the server on its thread while the main thread runs Qt's event loop for the bridge."""
    from qgis.PyQt.QtCore import QEventLoop, QTimer

    from geogpt_qgis.mcp_server.tools import McpTools, refuse_without_a_person
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools.base import ToolContext

    bridge = MainThreadBridge()
    approver = approve_everything if approval == POLICY_TRUST else refuse_without_a_person
    tools = McpTools(ToolContext(project=project, bridge=bridge, iface=None), approver)
    failure: list[BaseException] = []
    server = threading.Thread(target=_run_server, args=(tools, failure), name="geogpt-mcp-stdio", daemon=True)
    loop = QEventLoop()
    watch = QTimer()
    watch.timeout.connect(lambda: None if server.is_alive() else loop.quit())
    watch.start(50)
    previous = signal.signal(signal.SIGINT, lambda *_: loop.quit())
    err.write("GeoGPT MCP server: serving the project over stdio.\n")
    err.flush()
    server.start()
    try:
        loop.exec()
    finally:
        watch.stop()
        signal.signal(signal.SIGINT, previous)
        bridge.close()
    if failure:
        err.write(f"error: the MCP server stopped: {type(failure[0]).__name__}: {failure[0]}\n")
        return EXIT_FAILED
    return EXIT_OK


def _run_server(tools: McpTools, failure: list[BaseException]) -> None:
    try:
        asyncio.run(_stdio(tools))
    except BaseException as exc:  # noqa: BLE001 - reported by the main thread, which owns stderr's wording
        failure.append(exc)


async def _stdio(tools: McpTools) -> None:
    from mcp.server.stdio import stdio_server

    from geogpt_qgis.mcp_server.server import build_server

    server = build_server(tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
