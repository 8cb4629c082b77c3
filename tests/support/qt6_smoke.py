"""Build the dock's and the options page's widgets under PyQt6, with no QGIS at all.

Run by tests/qgis/test_qt6_smoke.py with the Python of the Qt 6 tools venv (``.stamps/qt6-venv``,
PyQt6 from PyPI, no system site packages), offscreen:

    .stamps/qt6-venv/bin/python tests/support/qt6_smoke.py

``qgis.PyQt`` comes from tests/support/qt6_qgis (a stand-in for QGIS 4's, which maps to PyQt6);
``qgis.core`` and ``qgis.gui`` do not exist here.  Every module of geogpt_qgis/gui is imported; a
module that needs a QGIS class fails with ``No module named 'qgis.core'`` (or ``qgis.gui``) and is
reported as such.  Every Qt class the other modules define is built (with the sample arguments
below when it needs some) and the main ones are driven a little (streamed text, tool steps, an
approval card...), so a Qt 5-only spelling (an unscoped enum, ``exec_``, an enum compared with an
integer) fails here.  Plugin settings are kept in memory: they live in ``QgsSettings``, a QGIS class.

Prints one JSON object and exits 1 if anything failed:
``{"qt": ..., "qgis_core_importable": false, "needs_qgis": {module: missing}, "built": [...],
"failed": {name: traceback}}``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "support" / "qt6_qgis"), str(ROOT)]
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.PyQt.QtCore import QT_VERSION_STR, QCoreApplication, QObject, pyqtSignal  # noqa: E402
from qgis.PyQt.QtGui import QColor, QImage, QPixmap, QTextDocument  # noqa: E402
from qgis.PyQt.QtWidgets import QApplication, QLabel  # noqa: E402

QGIS_MODULES = ("qgis.core", "qgis.gui", "qgis.analysis", "qgis.utils")
PNG_SIZE = 64


def settings_in_memory() -> None:
    """Plugin settings in a dict instead of QgsSettings (a QGIS class), for widgets that load and save them."""
    from geogpt_qgis.toolbelt import preferences

    store = preferences.PlgSettings()

    def get_plg_settings(cls: type) -> preferences.PlgSettings:
        return preferences.PlgSettings(**vars(store))

    def set_value(cls: type, key: str, value: Any) -> None:
        if not hasattr(store, key):
            raise KeyError(key)
        setattr(store, key, value)

    preferences.PlgOptionsManager.get_plg_settings = classmethod(get_plg_settings)
    preferences.PlgOptionsManager.set_value = classmethod(set_value)


def png(folder: Path) -> Path:
    image = QImage(PNG_SIZE, PNG_SIZE, QImage.Format.Format_ARGB32)
    image.fill(QColor("teal"))
    path = folder / "chart.png"
    assert image.save(str(path)), path
    return path


class _StandInProject(QObject):
    """The three project signals "Undo run" listens to (no QGIS in the Qt 6 venv)."""

    dirtySet = pyqtSignal()  # noqa: N815 - QgsProject's names
    layersAdded = pyqtSignal(list)  # noqa: N815
    layersRemoved = pyqtSignal(list)  # noqa: N815


class _StandInUndo:
    """What ``UndoRunAction`` asks of a ``RunUndo``: whether it fits, and the undo itself."""

    def __init__(self) -> None:
        self.project = _StandInProject()
        self.done = False

    def blocked(self) -> list[str]:
        return []

    def overridden(self) -> list[str]:
        return []

    def undo(self) -> list[str]:
        self.done = True
        return ["removed layer 'x'"]


def sample_arguments(folder: Path) -> dict[str, Callable[[], tuple[tuple, dict]]]:
    """Arguments for the classes that need some, by class name."""
    from geogpt_qgis.core.approval import ApprovalRequest
    from geogpt_qgis.core.sources import Sources

    request = ApprovalRequest("Run SQL", "SELECT 1;\nUPDATE t SET a = 1", "sql", ["t"], "sql", "run_sql", "c1")

    def run_args() -> tuple:  # the dock's run controller over its widgets; its service runs nothing, no watcher
        from geogpt_qgis.agent.conversation import Conversation
        from geogpt_qgis.gui.chat_input import ChatInput
        from geogpt_qgis.gui.chat_view import ChatView
        from geogpt_qgis.gui.server_picker import ServerPicker

        return (Conversation(None), None, ChatView(), ChatInput(), ServerPicker(live=True))

    def conversation_view() -> tuple[tuple, dict]:
        from geogpt_qgis.gui.run_controller import RunController

        controller = RunController(*run_args())
        return (None, None, controller, controller.composer, None), {}

    def answer_export() -> tuple[tuple, dict]:
        from geogpt_qgis.gui.run_controller import RunController

        return (RunController(*run_args()),), {}

    return {
        "AnswerExport": answer_export,
        "UndoRunAction": lambda: ((_StandInUndo(), ["added layer 'x'"]), {}),
        "_EnterSends": lambda: ((lambda: None, QObject()), {}),
        "ConversationView": conversation_view,
        "RunController": lambda: (run_args(), {}),
        "ApprovalCard": lambda: ((request.to_dict(),), {}),
        "DockApprovals": lambda: ((lambda: None, "ask"), {}),  # the MCP server's approver; no chat: it refuses
        "ChartView": lambda: ((str(png(folder)),), {}),
        "CodeHighlighter": lambda: ((QTextDocument("SELECT name FROM t -- note\nWHERE n > 5"), "sql"), {}),
        "CollapsibleSection": lambda: (("Title", QLabel("body")), {"expanded": True}),
        "InstallBanner": lambda: ((["langgraph", "shapely"],), {}),
        "LatestAnswers": lambda: ((QObject(),), {}),
        "LikeButton": lambda: (("Buffer the rivers", [("run_algorithm", {"algorithm": "native:buffer"})], None), {}),
        "MarkdownDialog": lambda: (("Log", "# Title\n\n- one\n- two"), {}),
        "MyRecipesBox": lambda: ((), {"path": folder / "my_recipes.json"}),
        "SourcesView": lambda: ((Sources(layers=["schools"], tables=["public.roads (demo)"]),), {}),
        "ToolStepWidget": lambda: (("c2", "run_algorithm", {"algorithm": "native:buffer", "DISTANCE": 500}), {}),
        "AnswerActions": lambda: (("**Ten** schools.", "How many schools?"), {}),
        "_ScaledImage": lambda: ((QPixmap(str(png(folder))),), {}),
    }


def drive(name: str, obj: Any, folder: Path) -> None:
    """Use the main widgets the way the dock does."""
    if name == "ChatView":
        from geogpt_qgis.core.artifacts import ToolArtifact
        from geogpt_qgis.core.events import RunStatus
        from geogpt_qgis.core.sources import Sources

        obj.resize(400, 600)
        obj.add_user_message("Which schools are near a river?")
        obj.append_reasoning("Look at the layers first.")
        obj.tool_started("c1", "describe_layer", {"layer": "schools"})
        obj.tool_progress("c1", 50.0)
        obj.tool_finished("c1", True, "40 features", 0.04, ToolArtifact(chart=str(png(folder))))
        for chunk in ("## Answer\n\n", "| a | b |\n|---|---|\n| 1 | 2 |\n\n", "Some **bold** and `code`.\n"):
            obj.append_text(chunk)
        obj.add_sources(Sources(layers=["schools"], algorithms=["native:buffer (INPUT=rivers)"]))
        obj.add_approval_card({"action": "Run code", "details": "print(1)", "language": "python"})
        obj.add_notice("A notice", "warning")
        for status in RunStatus:
            obj.end_turn(status)
        assert "Answer" in obj.answer_text(), obj.answer_text()
    elif name == "MarkdownView":
        obj.append_stream("# Heading\n\nA paragraph with *emphasis*")
        obj.append_stream(" continued.\n\n```python\nprint(1)\n```\n")
        obj.finish_stream()
        assert "continued" in obj.source_text, obj.source_text
    elif name == "ToolStepWidget":
        obj.show_progress(30.0)
        obj.finish(False, "unknown parameter", 0.2)
        obj.mark_stopped()
    elif name == "ContextMeter":
        obj.show_usage(3000, 8192, reserved=1000, omitted=2)
        obj.reset_usage()
    elif name == "ConversationBar":
        obj.set_title("Schools near rivers")
    elif name == "ConversationsPage":
        obj.show_conversations([])
    elif name == "CodeHighlighter":
        obj.rehighlight()
    elif name == "UndoRunAction":
        obj.button.click()
        assert obj.undo.done and obj.report.text(), "the undo ran and said what it did"
    if hasattr(obj, "show") and hasattr(obj, "isWidgetType") and obj.isWidgetType():
        obj.show()


def gui_modules() -> list[str]:
    import geogpt_qgis.gui as gui

    return sorted(f"geogpt_qgis.gui.{m.name}" for m in pkgutil.iter_modules(gui.__path__))


def takes_live(cls: type) -> bool:
    """Whether the class has a ``live`` variant (the dock's compact one) to build as well."""
    init = vars(cls).get("__init__")
    return init is not None and "live" in inspect.signature(init).parameters


def needs_qgis(error: ImportError) -> str | None:
    missing = getattr(error, "name", None) or ""
    return missing if missing in QGIS_MODULES or missing == "qgis._core" else None


def run() -> dict[str, object]:
    """Import every gui module, build every Qt class in them; a failure is recorded and the rest still run."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    settings_in_memory()
    built: list[str] = []
    failed: dict[str, str] = {}
    qgis_needed: dict[str, str] = {}
    keep: list[object] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        samples = sample_arguments(folder)
        for module_name in gui_modules():
            try:
                module = importlib.import_module(module_name)
            except ImportError as error:
                if needs_qgis(error):
                    qgis_needed[module_name] = needs_qgis(error) or ""
                    continue
                failed[module_name] = traceback.format_exc()
                continue
            except Exception:  # noqa: BLE001 - every failure is reported, with its traceback
                failed[module_name] = traceback.format_exc()
                continue
            classes = [
                c
                for _, c in inspect.getmembers(module, inspect.isclass)
                if c.__module__ == module_name and issubclass(c, QObject)
            ]
            for cls in classes:
                name = cls.__name__
                try:
                    args, kwargs = samples[name]() if name in samples else ((), {})
                    variants = [kwargs, {**kwargs, "live": True}] if takes_live(cls) else [kwargs]
                    for variant in variants:
                        obj = cls(*args, **variant)
                        keep.append(obj)
                        drive(name, obj, folder)
                        app.processEvents()
                    built.append(name)
                except Exception:  # noqa: BLE001
                    failed[name] = traceback.format_exc()
        QCoreApplication.processEvents()
    return {
        "qt": QT_VERSION_STR,
        "qgis_core_importable": _importable("qgis.core"),
        "needs_qgis": qgis_needed,
        "built": sorted(built),
        "failed": failed,
    }


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    report = run()
    print(json.dumps(report))
    sys.exit(1 if report["failed"] else 0)
