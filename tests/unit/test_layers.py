"""Imports go one way: core → toolbelt → tools → agent → mcp_server → {cli, gui} → plugin (issue 32).

The two front ends know nothing of each other and the MCP server knows neither (the plugin hands it the
dock's approvals and its way back to the main thread).  ``evals/`` and ``bench/`` never import ``tests/``:
what they share with the tests is ``harness/``, which imports none of the three.  ``core`` is Qt-free.

Every ``import`` and ``from … import`` of every module is read from its syntax tree, wherever it stands:
at the top, under ``if TYPE_CHECKING:``, or inside a function (the package imports most heavy modules
lazily, so a scan of the top level alone would miss most of the edges).  Relative imports are resolved.
A module run as a child process (a string such as ``"tests.support.x"`` given to ``python -m``) counts as an
import of it.  A failure
names each offending file:line and the rule it breaks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "geogpt_qgis"

# Rank of each part of the package: a module may import its own part and any part of a lower rank.
RANKS = {
    "__about__": 0,  # name and version from metadata.txt: anyone may read them
    "core": 0,
    "toolbelt": 1,
    "tools": 2,
    "agent": 3,
    "mcp_server": 4,
    "cli": 5,
    "gui": 5,
    "plugin": 6,
}
# Top-level modules of the package that belong to a part of another name.
PART_OF = {"cli_approval": "cli", "cli_export": "cli", "cli_undo": "cli", "__main__": "cli", "__init__": "plugin"}
# Same rank, and still not allowed to know each other.
STRANGERS = {frozenset({"cli", "gui"})}
QT_FREE = {"core"}
QT_ROOTS = {"qgis", "PyQt5", "PyQt6", "sip"}
# Outside the package: who may import whom among the repository's top-level folders.
NEVER = {
    "harness": {"tests", "evals", "bench"},
    "evals": {"tests"},
    "bench": {"tests", "evals"},
    PACKAGE: {"tests", "evals", "bench", "harness"},
}
SCANNED = [PACKAGE, "harness", "evals", "bench"]
# A string naming a module of the repository's own folders, as ``python -m`` is given it.
MODULE_STRING = re.compile(r"(tests|evals|bench|harness)(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _module_name(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports_of(relative: Path, text: str) -> Iterator[tuple[int, str]]:
    """(line, module) for every import in the module at ``relative``, lazy ones and ``-m module`` strings included."""
    tree = ast.parse(text, filename=str(relative))
    name = _module_name(relative)
    package = name if relative.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:  # `from geogpt_qgis import gui` imports geogpt_qgis.gui
                yield node.lineno, f"{module}.{alias.name}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.fullmatch(node.value):
            yield node.lineno, node.value  # run as a child: [sys.executable, "-m", "tests.support.x"], run_child(...)


def _part(module: str) -> str | None:
    """The package part of ``module`` (``None`` outside the package, or for the package itself)."""
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) == 1:
        return None
    return PART_OF.get(parts[1], parts[1])


def _why(importer: str, imported: str) -> str:
    """Why ``importer`` may not import ``imported`` ("" when it may)."""
    top, root = importer.split(".")[0], imported.split(".")[0]
    if root in NEVER.get(top, set()):
        return f"{top} never imports {root}"
    mine, theirs = _part(importer), _part(imported)
    if mine is None:
        return ""
    if mine in QT_FREE and root in QT_ROOTS:
        return f"{mine} is Qt-free"
    if theirs is None or theirs == mine:
        return ""
    if mine not in RANKS or theirs not in RANKS:
        return f"{mine if mine not in RANKS else theirs} is missing from this test's table of layers"
    if RANKS[theirs] > RANKS[mine]:
        return f"{mine} is below {theirs}"
    if frozenset({mine, theirs}) in STRANGERS:
        return f"{mine} and {theirs} know nothing of each other"
    return ""


def broken_rules(relative: Path, text: str) -> list[str]:
    """Each import of the module at ``relative`` that goes against the layers: ``file:line: a -> b (why)``."""
    module = _module_name(relative)
    found: dict[tuple[int, str], str] = {}
    for line, imported in imports_of(relative, text):
        why = _why(module, imported)
        if why:  # one line per import statement and reason (`from x import a, b` is one edge)
            found.setdefault((line, why), f"{relative.as_posix()}:{line}: {module} -> {imported} ({why})")
    return list(found.values())


def _sources() -> Iterator[Path]:
    for folder in SCANNED:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_every_import_goes_down_the_layers() -> None:
    broken = [
        problem
        for path in _sources()
        for problem in broken_rules(path.relative_to(ROOT), path.read_text(encoding="utf-8"))
    ]
    assert broken == [], "imports against the layers:\n" + "\n".join(broken)


def test_the_scan_sees_lazy_relative_and_child_process_imports() -> None:
    """An upward import under TYPE_CHECKING, inside a function, relative, or as ``-m``: each is found."""
    probe = Path(PACKAGE, "mcp_server", "probe.py")
    text = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from geogpt_qgis.gui.chat_view import ChatView\n"
        "def f():\n"
        "    from ..cli import main\n"
        "    from .. import plugin\n"
        "    return ['python', '-m', 'tests.support.runs']\n"
        "import geogpt_qgis.agent.config\n"
        "from . import tools\n"
    )
    assert broken_rules(probe, text) == [
        "geogpt_qgis/mcp_server/probe.py:3: geogpt_qgis.mcp_server.probe -> geogpt_qgis.gui.chat_view"
        " (mcp_server is below gui)",
        "geogpt_qgis/mcp_server/probe.py:5: geogpt_qgis.mcp_server.probe -> geogpt_qgis.cli (mcp_server is below cli)",
        "geogpt_qgis/mcp_server/probe.py:6: geogpt_qgis.mcp_server.probe -> geogpt_qgis.plugin"
        " (mcp_server is below plugin)",
        "geogpt_qgis/mcp_server/probe.py:7: geogpt_qgis.mcp_server.probe -> tests.support.runs"
        " (geogpt_qgis never imports tests)",
    ]


def test_the_front_ends_qt_and_harness_rules_each_fail() -> None:
    """The other rules, on made-up modules: the front ends, Qt in core, tests from bench, evals from harness."""
    cases = {
        "geogpt_qgis/gui/x.py": (
            "from geogpt_qgis.cli import is_local_server",
            "gui and cli know nothing of each other",
        ),
        "geogpt_qgis/cli_approval.py": ("import geogpt_qgis.gui.background", "cli and gui know nothing of each other"),
        "geogpt_qgis/core/x.py": ("from qgis.PyQt.QtCore import QObject", "core is Qt-free"),
        "geogpt_qgis/tools/x.py": ("from geogpt_qgis.agent import graph", "tools is below agent"),
        "geogpt_qgis/core/y.py": (
            "from geogpt_qgis.newpart import z",
            "newpart is missing from this test's table of layers",
        ),
        "bench/x.py": ("def f():\n    from tests.support.runs import wait_until", "bench never imports tests"),
        "bench/y.py": ("run_child('tests.support.startup_probe')", "bench never imports tests"),
        "evals/x.py": ("from tests.support import demo", "evals never imports tests"),
        "harness/x.py": ("import evals.runner", "harness never imports evals"),
    }
    for relative, (text, why) in cases.items():
        broken = broken_rules(Path(relative), text + "\n")
        assert len(broken) == 1 and broken[0].endswith(f"({why})"), broken
    allowed = {
        "geogpt_qgis/gui/x.py": "from geogpt_qgis.mcp_server.service import McpService",
        "geogpt_qgis/plugin.py": "from geogpt_qgis.gui.dock import ChatDock",
        "evals/x.py": "from bench.common import run_child\nfrom harness.demo import copy_demo",
        "harness/x.py": "from geogpt_qgis.core.approval import Decision",
    }
    for relative, text in allowed.items():
        assert broken_rules(Path(relative), text + "\n") == [], relative
