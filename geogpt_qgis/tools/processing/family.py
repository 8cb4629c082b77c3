"""The processing tool family: search, describe and run QGIS processing algorithms."""

from __future__ import annotations

import json
from typing import Any

from qgis.core import QgsApplication

from geogpt_qgis.core.approval import ApprovalRequest, gated
from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.tools.base import ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.processing.catalog import current_index
from geogpt_qgis.tools.processing.describe import describe_algorithm_text, find_algorithm, renamed_note
from geogpt_qgis.tools.processing.runner import ProcessingRunner
from geogpt_qgis.tools.processing.search import format_matches
from geogpt_qgis.tools.safety.algorithms import classify_algorithm

SEARCH_RESULTS = 6  # enough to choose from, few enough to read


class ProcessingTools(ToolFamily):
    """Any algorithm of the QGIS Processing toolbox, found by intent."""

    name = "processing"
    title = "Processing"
    summary = "find, describe and run any QGIS processing algorithm; results become project layers"
    prompt_hint = "Analysis: search_algorithms for the task, describe_algorithm, run_algorithm; results are layers."

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._runner = ProcessingRunner(ctx)

    def tools(self) -> list[ToolFunction]:
        return [self.search_algorithms, self.describe_algorithm, self.run_algorithm]

    def unavailable_reason(self) -> str | None:
        if QgsApplication.processingRegistry().algorithmById("native:buffer") is None:
            return "QGIS Processing is not loaded (enable the Processing plugin)"
        return None

    def search_algorithms(self, query: str) -> str:
        """Find processing algorithms for a task.

        Args:
            query: The task in plain words, e.g. count points in polygon.
        """
        limit = SEARCH_RESULTS
        index = self.ctx.on_main(current_index)
        matches = index.search(query, limit)
        if not matches:
            raise ToolError(f"no algorithm matches {query!r}; try other words (e.g. the operation's name)")
        return format_matches(matches)

    def describe_algorithm(self, algorithm: str) -> str:
        """Show an algorithm's parameters: types, defaults, choices, units.

        Args:
            algorithm: Algorithm id, e.g. native:buffer.
        """

        def describe() -> str:
            found = find_algorithm(algorithm)
            note = renamed_note(algorithm, found)
            return (f"Note: {note}\n" if note else "") + describe_algorithm_text(found)

        return self.ctx.on_main(describe)

    def preview_run_algorithm(
        self, algorithm: str, parameters: dict[str, Any], **_naming: Any
    ) -> ApprovalRequest | None:
        """Anything beyond reading and adding new temporary layers needs the user's approval (tools/safety)."""
        return self.ctx.on_main(self._request, algorithm, parameters or {})

    def _request(self, algorithm_id: str, parameters: dict[str, Any]) -> ApprovalRequest | None:
        algorithm = find_algorithm(algorithm_id)
        effects = classify_algorithm(algorithm, parameters, self.ctx.project)
        if not effects.needs_approval:
            return None
        lines = effects.lines()
        listed = json.dumps(parameters, indent=2, ensure_ascii=False, default=str)
        return ApprovalRequest(
            action=f"Run {algorithm.id()} ({algorithm.displayName()}), which {effects.summary()}",
            details="It will:\n" + "\n".join(f"- {line}" for line in lines) + f"\n\nParameters:\n{listed}",
            language="text",
            affected=lines,
            effects=[kind.value for kind in effects.kinds],
        )

    @gated("preview_run_algorithm")
    def run_algorithm(self, algorithm: str, parameters: dict[str, Any], output_name: str = "") -> ToolResult:
        """Run a processing algorithm; result layers are added to the project.

        Args:
            algorithm: Algorithm id.
            parameters: Values by parameter name; layers by name. Leave outputs out.
            output_name: Result layer name, e.g. schools_near_rivers.
        """
        return self._runner.run(algorithm, parameters or {}, output_name)
