"""The toolkit's ``after_call`` (where provenance is written), without QGIS: called once for each call that added
layers, with the tool's name, its checked arguments, its artifact and the run's origin; never for one that added
nothing or failed; and a failure in it is logged while the call's result stands."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact, ToolResult
from geogpt_qgis.core.provenance import RunOrigin, current_origin
from geogpt_qgis.tools.base import ToolError


def make_layer(name: str) -> ToolResult:
    """Add a layer.

    Args:
        name: its name.
    """
    return ToolResult(f"added {name}", ToolArtifact(layers=(LayerRef("rivers", "r1"),), added=(LayerRef(name, "n1"),)))


def read_only(name: str) -> ToolResult:
    """Read a layer.

    Args:
        name: its name.
    """
    return ToolResult(f"read {name}", ToolArtifact(layers=(LayerRef(name, "n1"),)))


def broken(name: str) -> ToolResult:
    """Fail.

    Args:
        name: its name.
    """
    raise ToolError(f"no layer {name}")


def run(toolkit: Toolkit, tool: str, args: dict[str, Any], origin: RunOrigin | None) -> Any:
    async def call() -> Any:
        current_origin.set(origin)  # as the session sets it for a run
        return await toolkit.run(tool, args)

    return contextvars.copy_context().run(asyncio.run, call())


def test_provenance_hook_sees_each_call_that_added_layers_with_the_runs_origin():
    seen: list[tuple[str, dict[str, Any], ToolArtifact, RunOrigin | None]] = []
    toolkit = Toolkit(
        [make_layer, read_only, broken],
        after_call=lambda tool, args, artifact: seen.append((tool, dict(args), artifact, current_origin.get())),
    )
    origin = RunOrigin.of("Buffer the rivers", "qwen3:8b", "http://localhost:11434", "ollama")
    outcome = run(toolkit, "make_layer", {"name": "rivers_100m"}, origin)
    assert outcome.ok and outcome.text == "added rivers_100m"
    assert run(toolkit, "read_only", {"name": "rivers"}, origin).ok
    assert not run(toolkit, "broken", {"name": "x"}, origin).ok
    ((tool, args, artifact, seen_origin),) = seen
    assert (tool, args, seen_origin) == ("make_layer", {"name": "rivers_100m"}, origin)
    assert artifact.added == (LayerRef("rivers_100m", "n1"),) and artifact.layers == (LayerRef("rivers", "r1"),)


def test_provenance_hook_failure_is_logged_and_the_call_stands(caplog):
    def boom(tool: str, args: Any, artifact: ToolArtifact) -> None:
        raise OSError("disk full")

    outcome = run(Toolkit([make_layer], after_call=boom), "make_layer", {"name": "a"}, None)
    assert outcome.ok and outcome.text == "added a" and outcome.artifact.added_names == ["a"]
    assert "could not record the provenance of the layers make_layer added" in caplog.text
    assert "disk full" in caplog.text
