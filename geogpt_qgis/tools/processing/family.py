"""The processing tool family: find (search or describe) and run QGIS processing algorithms."""

from __future__ import annotations

import json
import os
from typing import Any

from qgis.core import QgsApplication, QgsMapLayer, QgsProcessingAlgorithm

from geogpt_qgis.core.approval import ApprovalRequest, gated
from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.core.targets import Target
from geogpt_qgis.tools.base import ToolError, ToolFamily, ToolFunction
from geogpt_qgis.tools.processing.catalog import current_index
from geogpt_qgis.tools.processing.describe import (
    describe_algorithm_text,
    find_algorithm,
    known_algorithm,
    renamed_note,
)
from geogpt_qgis.tools.processing.params import check_before_approval
from geogpt_qgis.tools.processing.runner import ProcessingRunner
from geogpt_qgis.tools.processing.search import format_matches
from geogpt_qgis.tools.safety.algorithms import classify_algorithm
from geogpt_qgis.tools.safety.targets import file_target, layer_target, url_target

SEARCH_RESULTS = 6  # enough to choose from, few enough to read


class ProcessingTools(ToolFamily):
    """Any algorithm of the QGIS Processing toolbox, found by intent."""

    name = "processing"
    title = "Processing"
    summary = "find, describe and run any QGIS processing algorithm; results become project layers"
    prompt_hint = "Analysis: find_algorithm (task, then id), run_algorithm; results are layers."

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._runner = ProcessingRunner(ctx)

    def tools(self) -> list[ToolFunction]:
        return [self.find_algorithm, self.run_algorithm]

    def unavailable_reason(self) -> str | None:
        if QgsApplication.processingRegistry().algorithmById("native:buffer") is None:
            return "QGIS Processing is not loaded (enable the Processing plugin)"
        return None

    # One tool for both steps (it was search_algorithms and describe_algorithm; agent/aliases.py still
    # routes those names here): a query that names an algorithm (an id, a renamed id, a title only one
    # algorithm has) is described; anything else is searched.  The docstring is the model's description.
    def find_algorithm(self, query: str) -> ToolResult:
        """Search algorithms for a task in plain words; an id (native:buffer) shows its parameters."""
        wanted = (query or "").strip()
        if not wanted:
            raise ToolError("give the task in plain words (e.g. count points in polygon) or an algorithm id")
        if _looks_like_id(wanted) or self.ctx.on_main(known_algorithm, wanted) is not None:
            return ToolResult(self.ctx.on_main(self._describe, wanted))
        index = self.ctx.on_main(current_index)
        matches = index.search(wanted, SEARCH_RESULTS)
        if not matches:
            raise ToolError(f"no algorithm matches {wanted!r}; try other words (e.g. the operation's name)")
        return ToolResult(format_matches(matches))

    @staticmethod
    def _describe(algorithm: str) -> str:
        """An algorithm's parameters: types, defaults, choices, units (main thread)."""
        found = known_algorithm(algorithm) or find_algorithm(algorithm)  # the latter names the closest ids
        note = renamed_note(algorithm, found)
        return (f"Note: {note}\n" if note else "") + describe_algorithm_text(found)

    def notice_user_text(self, text: str) -> None:
        """Files and folders the user types may be read by an algorithm without asking (``core.user_named``)."""
        self.ctx.user_named.notice(text)

    def preview_run_algorithm(
        self, algorithm: str, parameters: dict[str, Any], **_naming: Any
    ) -> ApprovalRequest | None:
        """Anything beyond reading and adding new temporary layers needs the user's approval (tools/safety)."""
        return self.ctx.on_main(self._request, algorithm, parameters or {})

    def _request(self, algorithm_id: str, parameters: dict[str, Any]) -> ApprovalRequest | None:
        algorithm = find_algorithm(algorithm_id)
        effects = classify_algorithm(algorithm, parameters, self.ctx.project, self.ctx.trusted_file)
        if not effects.needs_approval:
            return None
        check_before_approval(algorithm, parameters, self.ctx.project)  # no card for a call bound to fail
        lines = effects.lines()
        listed = json.dumps(parameters, indent=2, ensure_ascii=False, default=str)
        return ApprovalRequest(
            action=f"Run {algorithm.id()} ({algorithm.displayName()}), which {effects.summary()}",
            details="It will:\n" + "\n".join(f"- {line}" for line in lines) + f"\n\nParameters:\n{listed}",
            language="text",
            effects=effects.kinds,
            targets=self._targets(algorithm, parameters),
        )

    def _targets(self, algorithm: QgsProcessingAlgorithm, parameters: dict[str, Any]) -> list[Target]:
        """The project layers, files and URLs the parameters name, resolved (main thread): layer ids, real paths."""
        layers = {layer.id(): layer for layer in self.ctx.project.mapLayers().values()}
        by_name: dict[str, list[QgsMapLayer]] = {}
        for layer in layers.values():
            by_name.setdefault(layer.name(), []).append(layer)
        targets: list[Target] = []
        for name, value in parameters.items():
            definition = algorithm.parameterDefinition(name)
            writes = definition is not None and definition.isDestination()
            for text in value if isinstance(value, list) else [value]:
                if not isinstance(text, str) or not text.strip():
                    continue
                named = [layers[text]] if text in layers else by_name.get(text, [])
                if len(named) == 1:
                    targets.append(layer_target(named[0], ("write",) if writes else ("use",)))
                elif os.path.isabs(text.split("|")[0]) or text.startswith("~"):
                    targets.append(file_target(text.split("|")[0], ("write",) if writes else ("read",)))
                elif "://" in text:
                    targets.append(url_target(text, ("send",) if writes else ("request",)))
        return list(dict.fromkeys(targets))

    @gated(preview_run_algorithm)
    def run_algorithm(self, algorithm: str, parameters: dict[str, Any], output_name: str = "") -> ToolResult:
        """Run a processing algorithm; result layers are added to the project.

        Args:
            parameters: Values by parameter name; layers by name. Outputs: leave out (optional: "TEMPORARY_OUTPUT").
            output_name: Result layer name, e.g. schools_near_rivers.
        """
        return self._runner.run(algorithm, parameters or {}, output_name)


def _looks_like_id(query: str) -> bool:
    """``provider:name`` with no spaces: an algorithm id (a wrong one gets the closest ids, not a search)."""
    return ":" in query and not any(c.isspace() for c in query)
