"""Qt 6 (QGIS 4) rules that QGIS's own PyQt5 -> PyQt6 checker cannot enforce, checked on the syntax tree.

The checker (make lint, scripts/qt6_checker.py) knows Qt's enums and APIs but, with no Qt 6 QGIS to
import here, not QGIS's; and it rewrites ``exec_`` or ``PyQt5`` imports rather than forbidding them.
These rules read every Python file of the package, the tests, the benchmarks, the evals and the
scripts, and resolve names against the QGIS and PyQt this suite runs on:

- no enum member reached through its class instead of its enum (``QgsWkbTypes.Point``, not
  ``QgsWkbTypes.Type.Point``; ``Qt.AlignLeft``), for Qt's and QGIS's classes alike: Qt 6 has only
  the scoped spelling;
- nothing imported from ``PyQt5``, ``PyQt6`` or ``sip`` directly: only through ``qgis.PyQt``;
- no ``exec_`` (Qt 6 has ``exec``), ``qApp``, ``QRegExp``, ``QDesktopWidget``, ``QVariant.<Type>``,
  ``fontMetrics().width``, ``activated[str]`` or compiled resources;
- ``QAction``, ``QActionGroup`` and ``QShortcut`` (QtGui in Qt 6) come from
  ``geogpt_qgis.toolbelt.qt_actions``, the one module that knows QGIS 3.22 keeps them in QtWidgets.
"""

from __future__ import annotations

import ast
import enum
import importlib
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("geogpt_qgis", "tests", "bench", "evals", "scripts")
# The test-only stand-in for QGIS 4's qgis.PyQt is made of PyQt6 imports, as QGIS's own is.
SHIM = ROOT / "tests" / "support" / "qt6_qgis"
ACTIONS_MODULE = ROOT / "geogpt_qgis" / "toolbelt" / "qt_actions.py"
MOVED_TO_QTGUI = {"QAction", "QActionGroup", "QShortcut"}
DIRECT_BINDINGS = {"PyQt5", "PyQt6", "sip"}
REMOVED_IN_QT6 = {"qApp", "QRegExp", "QDesktopWidget", "QRegExpValidator"}


def python_files() -> list[Path]:
    files = [p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts]
    assert len(files) > 200, files  # the rules below must have read the tree, not an empty folder
    return sorted(files)


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


@cache
def qgis_module(name: str) -> Any:
    return importlib.import_module(name)


def qgis_names(tree: ast.Module) -> dict[str, Any]:
    """Names a file imports from qgis.core, qgis.gui, qgis.analysis or qgis.PyQt.*, resolved to their objects."""
    names: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "qgis":
            try:
                module = qgis_module(node.module)
            except ImportError:
                continue
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if value is not None:
                    names[alias.asname or alias.name] = value
    return names


def is_enum_member(value: Any) -> bool:
    """A member of a Python enum (Qt 6, QGIS 3.3x+ Qgis enums) or a sip enum (PyQt5)."""
    if isinstance(value, type):
        return False
    return isinstance(value, enum.Enum) or type(type(value)).__name__ == "enumtype"


def unscoped_enums(path: Path, tree: ast.Module) -> list[str]:
    names = qgis_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        owner = names.get(node.value.id)
        if not isinstance(owner, type) or is_enum_member(owner):
            continue
        member = getattr(owner, node.attr, None)
        if is_enum_member(member) and type(member) is not owner:
            scoped = f"{node.value.id}.{type(member).__name__}.{node.attr}"
            found.append(f"{where(path, node)} {node.value.id}.{node.attr} -> {scoped}")
    return found


def test_enum_members_are_reached_through_their_enum():
    found = [line for path in python_files() for line in unscoped_enums(path, parsed(path))]
    assert not found, "unscoped enum members (Qt 6 has only the scoped spelling):\n" + "\n".join(found)


def test_the_unscoped_enum_rule_sees_qt_and_qgis_enums():
    tree = ast.parse(
        "from qgis.PyQt.QtCore import Qt\nfrom qgis.core import QgsWkbTypes, QgsFeatureRequest\n"
        "a = Qt.AlignLeft\nb = QgsWkbTypes.Point\n"
        "c = QgsFeatureRequest.Flag.NoGeometry\nd = Qt.AlignmentFlag.AlignTop\n"
    )
    found = unscoped_enums(ROOT / "probe.py", tree)
    # The scoped name is the running QGIS's: QgsWkbTypes.Type on 3.22, QgsWkbTypes.WkbType (Qgis.WkbType) on 3.40+.
    from qgis.core import QgsWkbTypes

    wkb_enum = type(getattr(QgsWkbTypes, "Point")).__name__  # noqa: B009 - the unscoped spelling is the probe
    assert [line.split(" ", 1)[1] for line in found] == [
        "Qt.AlignLeft -> Qt.AlignmentFlag.AlignLeft",
        f"QgsWkbTypes.Point -> QgsWkbTypes.{wkb_enum}.Point",
    ]


def qt5_only_code(path: Path, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                f"{where(path, node)} import {a.name}" for a in node.names if a.name.split(".")[0] in DIRECT_BINDINGS
            ]
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in DIRECT_BINDINGS:
                found.append(f"{where(path, node)} from {node.module} import ... (use qgis.PyQt)")
            names = {a.name for a in node.names}
            if node.module == "qgis.PyQt.QtWidgets" and names & MOVED_TO_QTGUI and path != ACTIONS_MODULE:
                moved = ", ".join(sorted(names & MOVED_TO_QTGUI))
                found.append(f"{where(path, node)} {moved} from QtWidgets (use geogpt_qgis.toolbelt.qt_actions)")
            if names & REMOVED_IN_QT6 or "resources_rc" in names or node.module.endswith("resources_rc"):
                found.append(f"{where(path, node)} imports {sorted(names & REMOVED_IN_QT6) or 'resources_rc'}")
        elif isinstance(node, ast.Attribute):
            if node.attr == "exec_":
                found.append(f"{where(path, node)} .exec_ (Qt 6: exec)")
            if isinstance(node.value, ast.Name) and node.value.id == "QVariant":
                found.append(f"{where(path, node)} QVariant.{node.attr} (a QVariant type)")
        elif isinstance(node, ast.FunctionDef) and node.name == "exec_":
            found.append(f"{where(path, node)} def exec_")
        elif isinstance(node, ast.Name) and node.id in REMOVED_IN_QT6:
            found.append(f"{where(path, node)} {node.id} (removed in Qt 6)")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "width"
            and isinstance(node.func.value, ast.Call)
            and isinstance(node.func.value.func, ast.Attribute)
            and node.func.value.func.attr == "fontMetrics"
        ):
            found.append(f"{where(path, node)} fontMetrics().width (Qt 6: horizontalAdvance)")
        elif (
            isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "activated"
        ):
            found.append(f"{where(path, node)} activated[...] (removed in Qt 6)")
    return found


def test_no_qt5_only_code_and_qt_only_through_qgis_pyqt():
    found = [
        line for path in python_files() if not path.is_relative_to(SHIM) for line in qt5_only_code(path, parsed(path))
    ]
    assert not found, "Qt 5-only code or Qt imported around qgis.PyQt:\n" + "\n".join(found)


def test_the_qt5_rule_sees_what_it_forbids():
    source = (
        "import sip\nfrom PyQt5.QtCore import Qt\nfrom qgis.PyQt.QtWidgets import QAction, QDialog\n"
        "from qgis.PyQt.QtCore import QRegExp\nQDialog().exec_()\nx = QVariant.Int\n"
        "w = label.fontMetrics().width('x')\ncombo.activated[str].connect(f)\n"
    )
    found = qt5_only_code(ROOT / "probe.py", ast.parse(source))
    lines = sorted({int(line.split(":")[1].split(" ")[0]) for line in found})
    assert lines == [1, 2, 3, 4, 5, 6, 7, 8], found


def test_actions_come_from_where_qt6_keeps_them():
    """The shared import gives this QGIS's QAction: QtGui's where it has one (3.3x+, Qt 6), else QtWidgets'."""
    from qgis.PyQt import QtGui, QtWidgets

    from geogpt_qgis.toolbelt.qt_actions import QAction, QActionGroup, QShortcut

    expected = QtGui if hasattr(QtGui, "QAction") else QtWidgets
    assert (QAction, QActionGroup, QShortcut) == (expected.QAction, expected.QActionGroup, expected.QShortcut)
    assert QAction("probe").text() == "probe"
