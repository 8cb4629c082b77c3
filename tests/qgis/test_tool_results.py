"""Every tool answers with a ``ToolResult`` (text for the model, typed artifact): by its signature, and when run.

(Here, not in tests/unit: the type check runs mypy, seconds once its cache is warm but too slow for a fresh clone's
unit tests.)

A tool that returned plain text (or a text rebuilt from a result with ``+``)
would hand the dock, the Sources list and the run log nothing; the signature is
what mypy holds every return statement to.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import typing
from pathlib import Path

from geogpt_qgis.core.artifacts import LayerRef, ToolResult
from geogpt_qgis.tools.project.family import ProjectTools
from geogpt_qgis.tools.registry import build_families
from tests.support.runs import call_in_thread

ROOT = Path(__file__).resolve().parents[2]


def test_every_tool_of_every_family_says_it_returns_a_tool_result(tool_ctx):
    tools = [tool for family in build_families(tool_ctx) for tool in family.tools()]
    assert len(tools) >= 15  # every family, whether or not it is available here
    wrong = {tool.__name__: typing.get_type_hints(tool).get("return") for tool in tools}
    assert {name: hint for name, hint in wrong.items() if hint is not ToolResult} == {}


def test_a_layer_read_is_named_with_its_id_and_text_alone_is_what_the_model_reads(tool_ctx, demo_project):
    listed = call_in_thread(ProjectTools(tool_ctx).describe_layer)  # the list: nothing read in particular
    assert isinstance(listed, ToolResult) and listed.artifact.empty and listed.text.startswith("9 layers")
    schools = demo_project.mapLayersByName("schools")[0]
    described = call_in_thread(ProjectTools(tool_ctx).describe_layer, "schools")
    assert described.artifact.layers == (LayerRef("schools", schools.id()),)
    assert f"Layer 'schools' (id {schools.id()})" in described.text


MISUSE = """
from geogpt_qgis.core.artifacts import ToolResult


def noted(result: ToolResult) -> ToolResult:
    return result + "\\nNote: more"


def stripped(result: ToolResult) -> ToolResult:
    return result.strip()


def formatted(result: ToolResult) -> ToolResult:
    return f"{result}\\nNote: more"


def kept(result: ToolResult) -> ToolResult:
    return result.with_text(result.text + "\\nNote: more")
"""


def test_dropping_a_tool_results_artifact_is_a_type_error(tmp_path):
    # A str subclass let `+`, `.strip()` and f-strings return plain text without the artifact; mypy saw nothing.
    snippet = tmp_path / "misuse.py"
    snippet.write_text(textwrap.dedent(MISUSE), "utf-8")
    found = subprocess.run(
        # The repository's .mypy_cache, which make lint warms: seconds, as long as the options are the config's
        # (a flag such as --follow-imports changes every module's options, and mypy then checks them all anew).
        [sys.executable, "-m", "mypy", str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    errors = [line for line in found.stdout.splitlines() if line.startswith(str(snippet)) and ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})  # a line may also return Any (warn_return_any)
    source = snippet.read_text("utf-8").splitlines()
    assert [source[n - 1].strip() for n in lines] == [
        'return result + "\\nNote: more"',
        "return result.strip()",
        'return f"{result}\\nNote: more"',
    ], found.stdout
