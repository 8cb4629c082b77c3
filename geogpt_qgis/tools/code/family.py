"""The PyQGIS code tool: arbitrary Python for what no fixed tool covers, run only once the user approved it.

The snippet runs on the main thread with the live ``iface`` and ``project``,
in a namespace that persists across calls within one conversation (no sandbox:
the code has the user's rights).  Each call is approved on its card, or by
"Trust this conversation".  Output is captured and trimmed; exceptions come back
as text the model can act on; a time limit and Stop bound every run that stays
in Python (see ``tools/code/runner.py``).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, gated
from geogpt_qgis.core.artifacts import AddedLayer, ToolArtifact, ToolResult
from geogpt_qgis.core.bounds import Code
from geogpt_qgis.core.cancel import current_conversation
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.targets import Target
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolContext, ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.code.runner import base_namespace, compile_snippet, run_snippet
from geogpt_qgis.tools.layers import ordered_layers
from geogpt_qgis.tools.safety.targets import layer_target

_PATH = re.compile(
    r"^(?:[A-Za-z]:[\\/]|/|\.{1,2}[\\/]|~[\\/]).+|.+\.(?:gpkg|shp|tif|tiff|csv|geojson|json|qgz|qgs|txt|sqlite)$"
)


class CodeTools(ToolFamily):
    """Run PyQGIS code (approved by the user)."""

    name = "code"
    title = "PyQGIS code"
    summary = "run PyQGIS code in the live QGIS, after the user approves it"
    prompt_hint = "run_pyqgis only for what no other tool does."

    def __init__(self, ctx: ToolContext) -> None:
        super().__init__(ctx)
        self._namespaces: dict[str, dict[str, Any]] = {}

    def tools(self) -> list[ToolFunction]:
        return [self.run_pyqgis]

    def preview_run_pyqgis(self, code: Code) -> ApprovalRequest:
        compile_snippet(code)  # a snippet that does not parse needs no approval: it is refused
        files, layers = self.ctx.on_main(self._mentioned, code)
        return ApprovalRequest(
            action="Run PyQGIS code",
            details=code,
            language="python",
            notes=files or ([] if layers else ["anything in QGIS the code touches: the project, its layers, files"]),
            editable="code",
            effects=[Effect.RUN_CODE],
            targets=layers,
        )

    def _mentioned(self, source: str) -> tuple[list[str], list[Target]]:
        """Files the code names in string literals, and the layers it names as targets (main thread)."""
        strings = {
            node.value
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        layers = [
            layer_target(layer, ("named in the code",))
            for layer in ordered_layers(self.ctx.project)
            if layer.name() in strings or layer.id() in strings
        ]
        return [f"file {s}" for s in sorted(strings) if _PATH.match(s)], layers

    @gated(preview_run_pyqgis)
    def run_pyqgis(self, code: Code) -> ToolResult:
        """Run PyQGIS code (after the user approves); `iface`, `project` and qgis.core are defined.

        Args:
            code: Python; the last expression's value is shown.
        """
        compiled = compile_snippet(code)
        if not approval_granted():
            raise ToolError("running code needs the user's approval")
        timeout = PlgOptionsManager.get_plg_settings().code_timeout
        conversation = current_conversation.get()
        cancel = self.ctx.cancel
        before = self.ctx.on_main(lambda: set(self.ctx.project.mapLayers()))
        output, error, value = self.ctx.on_main(self._run, compiled, conversation, cancel, timeout)
        cancel.raise_if_cancelled()  # Stop interrupted the code: the run ends as stopped
        parts = [f"Output:\n{output}" if output else "", f"Value: {value}" if value else ""]
        if error:
            raise ToolError("\n".join(p for p in [*parts, f"The code failed:\n{error}"] if p))
        text = "\n".join(p for p in parts if p) or "The code ran; it printed nothing."
        return ToolResult(text, ToolArtifact(added=tuple(self.ctx.on_main(self._added_since, before))))

    def _added_since(self, before: set[str]) -> list[AddedLayer]:
        """The layers the code added to the project (main thread): the model is told by the project's notes."""
        layers = self.ctx.project.mapLayers()
        return [AddedLayer(layer.name(), layer_id) for layer_id, layer in layers.items() if layer_id not in before]

    def _run(self, compiled: Any, conversation: str, cancel: Any, timeout: float) -> tuple[str, str, str]:
        from qgis.PyQt.QtCore import QCoreApplication

        namespace = self._namespaces.get(conversation)
        if namespace is None:
            namespace = self._namespaces[conversation] = base_namespace(self.ctx.iface, self.ctx.project)
        return run_snippet(compiled, namespace, cancel, timeout, QCoreApplication.processEvents)
