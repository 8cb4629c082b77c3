"""Build the dock's and the options page's Qt-only widgets under PyQt6, with no QGIS at all.

Run by tests/qgis/test_qt6_smoke.py with the Python of the Qt 6 tools venv (``.stamps/qt6-venv``,
PyQt6 from PyPI, no system site packages), offscreen:

    .stamps/qt6-venv/bin/python tests/support/qt6_smoke.py

``qgis.PyQt`` comes from tests/support/qt6_qgis (a stand-in for QGIS 4's, which maps to PyQt6);
``qgis.core`` and ``qgis.gui`` do not exist here, so a widget that needs a QGIS class fails to
import, and one that compares a Qt 6 enum with an integer or calls a Qt 5-only method fails when
it is built or used.  Each widget is built and driven a little (streamed text, a tool step, an
approval card...).  Prints one JSON object: ``{"qt": ..., "built": [...], "failed": {name: traceback}}``;
exits 1 if anything failed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "support" / "qt6_qgis"), str(ROOT)]
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.PyQt.QtCore import QT_VERSION_STR, QCoreApplication  # noqa: E402
from qgis.PyQt.QtGui import QColor, QImage  # noqa: E402
from qgis.PyQt.QtWidgets import QApplication, QPlainTextEdit  # noqa: E402

PNG_SIZE = 64


def _settings_in_memory() -> None:
    """ModelBar reads and writes plugin settings through QgsSettings, a QGIS class: keep them in a dict here."""
    from geogpt_qgis.toolbelt import preferences

    store = preferences.PlgSettings()

    def get_plg_settings() -> preferences.PlgSettings:
        return preferences.PlgSettings(**vars(store))

    def set_value_from_key(key: str, value: object) -> bool:
        setattr(store, key, value)
        return True

    preferences.PlgOptionsManager.get_plg_settings = staticmethod(get_plg_settings)
    preferences.PlgOptionsManager.set_value_from_key = staticmethod(set_value_from_key)


def approval_card() -> object:
    from geogpt_qgis.core.approval import ApprovalRequest
    from geogpt_qgis.gui.approval_card import ApprovalCard

    request = ApprovalRequest("Run SQL", "SELECT 1;\nUPDATE t SET a = 1", "sql", ["t"], "sql", "run_sql", "c1")
    card = ApprovalCard(request.to_dict())
    card.show()
    return card


def chat_view(tmp: Path) -> object:
    from geogpt_qgis.core.artifacts import ToolArtifact
    from geogpt_qgis.core.events import RunStatus
    from geogpt_qgis.core.sources import Sources
    from geogpt_qgis.gui.chat_view import ChatView

    view = ChatView()
    view.resize(400, 600)
    view.show()
    view.add_user_message("Which schools are near a river?")
    view.append_reasoning("Look at the layers first.")
    view.tool_started("c1", "describe_layer", {"layer": "schools"})
    view.tool_progress("c1", 50.0)
    view.tool_finished("c1", True, "40 features", 0.04, ToolArtifact(chart=str(_png(tmp))))
    for chunk in ("## Answer\n\n", "| a | b |\n|---|---|\n| 1 | 2 |\n\n", "Some **bold** text and `code`.\n"):
        view.append_text(chunk)
    view.add_sources(Sources(layers=["schools"], algorithms=["native:buffer (INPUT=rivers)"]))
    view.add_approval_card({"action": "Run code", "details": "print(1)", "language": "python"})
    view.add_notice("A notice", "warning")
    view.end_turn(next(iter(RunStatus)))
    QCoreApplication.processEvents()
    assert "Answer" in view.answer_text(), view.answer_text()
    return view


def _png(tmp: Path) -> Path:
    image = QImage(PNG_SIZE, PNG_SIZE, QImage.Format.Format_ARGB32)
    image.fill(QColor("teal"))
    path = tmp / "chart.png"
    assert image.save(str(path)), path
    return path


def chart_view(tmp: Path) -> object:
    from geogpt_qgis.gui.chart_view import ChartView

    view = ChartView(str(_png(tmp)))
    view.show()
    return view


def code_highlighter() -> object:
    from geogpt_qgis.gui.highlighter import CodeHighlighter

    editor = QPlainTextEdit("SELECT name FROM schools -- comment\nWHERE pupils > 500")
    highlighter = CodeHighlighter(editor.document(), "sql")
    highlighter.rehighlight()
    return editor, highlighter


def context_meter() -> object:
    from geogpt_qgis.gui.context_meter import ContextMeter

    meter = ContextMeter()
    meter.show_usage(3000, 8192, reserved=1000, omitted=2)
    meter.reset_usage()
    return meter


def conversation_bar() -> object:
    from geogpt_qgis.gui.conversation_bar import ConversationBar

    bar = ConversationBar()
    bar.set_title("Schools near rivers")
    bar.show()
    return bar


def conversations_page() -> object:
    from geogpt_qgis.gui.conversations_page import ConversationsPage

    page = ConversationsPage()
    page.show_conversations([])
    page.show()
    return page


def install_banner() -> object:
    from geogpt_qgis.gui.install_banner import InstallBanner

    banner = InstallBanner(["langgraph", "shapely"])
    banner.show()
    return banner


def markdown_dialog() -> object:
    from geogpt_qgis.gui.markdown_dialog import MarkdownDialog

    dialog = MarkdownDialog("Log", "# Title\n\n- one\n- two")
    dialog.show()
    dialog.close()
    return dialog


def markdown_view() -> object:
    from geogpt_qgis.gui.markdown_view import MarkdownView

    view = MarkdownView()
    view.append_stream("# Heading\n\nA paragraph with *emphasis*")
    view.append_stream(" continued.\n\n```python\nprint(1)\n```\n")
    view.finish_stream()
    assert "continued" in view.source_text, view.source_text
    return view


def model_bar() -> object:
    _settings_in_memory()
    from geogpt_qgis.gui.model_bar import ModelBar

    bar = ModelBar()
    bar.settings_button.setChecked(True)
    bar.show()
    return bar


def settings_events() -> object:
    from geogpt_qgis.gui.settings_events import settings_events

    return settings_events()


def future_relay() -> object:
    from geogpt_qgis.gui.future_relay import FutureRelay

    return FutureRelay()


def sources_view() -> object:
    from geogpt_qgis.core.sources import Sources
    from geogpt_qgis.gui.sources_view import SourcesView

    view = SourcesView(Sources(layers=["schools"], tables=["public.roads (demo)"]))
    view.show()
    return view


def tool_step() -> object:
    from geogpt_qgis.gui.tool_step import ToolStepWidget

    step = ToolStepWidget("c2", "run_algorithm", {"algorithm": "native:buffer", "parameters": {"DISTANCE": 500}})
    step.show_progress(30.0)
    step.finish(False, "unknown parameter", 0.2)
    step.show()
    return step


def run() -> dict[str, object]:
    """Build every widget; a failure is recorded with its traceback and the others still run."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    built: list[str] = []
    failed: dict[str, str] = {}
    keep: list[object] = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        builders: dict[str, Callable[[], object]] = {
            "ApprovalCard": approval_card,
            "ChartView": lambda: chart_view(tmp),
            "ChatView": lambda: chat_view(tmp),
            "CodeHighlighter": code_highlighter,
            "ContextMeter": context_meter,
            "ConversationBar": conversation_bar,
            "ConversationsPage": conversations_page,
            "FutureRelay": future_relay,
            "InstallBanner": install_banner,
            "MarkdownDialog": markdown_dialog,
            "MarkdownView": markdown_view,
            "ModelBar": model_bar,
            "SettingsEvents": settings_events,
            "SourcesView": sources_view,
            "ToolStepWidget": tool_step,
        }
        for name, build in builders.items():
            try:
                keep.append(build())
                app.processEvents()
                built.append(name)
            except Exception:  # noqa: BLE001 - every failure is reported, with its traceback
                failed[name] = traceback.format_exc()
        qgis_core = _importable("qgis.core")
    return {"qt": QT_VERSION_STR, "qgis_core_importable": qgis_core, "built": built, "failed": failed}


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    report = run()
    print(json.dumps(report))
    sys.exit(1 if report["failed"] else 0)
