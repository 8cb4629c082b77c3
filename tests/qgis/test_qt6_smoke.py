"""QGIS 4 / Qt 6 readiness where no Qt 6 QGIS can be installed: the widgets on PyQt6, and the Qt 6 checker.

Both run in the Qt 6 tools venv that make setup prepares (``.stamps/qt6-venv``: PyQt6 from PyPI, no
system site packages, so none of QGIS 3's PyQt5 leaks in) and use the checker make setup fetched from
Debian's qgis source package (``.stamps/qt6-checker``).  So this file sits in tests/qgis, which make test
runs after make setup, not in tests/unit (which passes on a fresh clone with only requirements-dev.txt).

The smoke test (tests/support/qt6_smoke.py, offscreen, in a child process) imports every module of
geogpt_qgis/gui through the test-only ``qgis.PyQt`` stand-in in tests/support/qt6_qgis, and builds
and drives every Qt class of those that import. Left out, because they need ``qgis.core``/``qgis.gui``
classes that only a Qt 6 QGIS provides (tests/qgis/test_dock.py and test_options.py build them in QGIS 3):

- ``gui/dock.py``: ``ChatDock`` is a ``QgsDockWidget`` and follows ``QgsProject``;
- ``gui/chat_panel.py``: ``ChatPanel`` runs the agent on ``QgsProject`` (the main-thread bridge,
  the project watcher);
- ``gui/options_page.py``: the page and its factory are ``QgsOptionsPageWidget`` and
  ``QgsOptionsWidgetFactory``.

Any other gui module that starts to need QGIS at import fails the test: keep widgets Qt-only (import
QGIS where it is used) or add the module here with its reason.  Plugin settings are kept in memory
there (they live in ``QgsSettings``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QT6_PYTHON = ROOT / ".stamps" / "qt6-venv" / "bin" / "python"
CHECKER = ROOT / ".stamps" / "qt6-checker" / "pyqt5_to_pyqt6.py"
NEEDS_QGIS = {
    "geogpt_qgis.gui.dock",
    "geogpt_qgis.gui.chat_panel",
    "geogpt_qgis.gui.options_page",
    "geogpt_qgis.gui.options_factory",  # a QgsOptionsWidgetFactory: nothing to build without QGIS
}
# Among the classes built: the chat column and everything it shows.
CHAT_WIDGETS = {
    "ApprovalCard",
    "ChartView",
    "ChatView",
    "CodeHighlighter",
    "ContextMeter",
    "ConversationBar",
    "ConversationsPage",
    "InstallBanner",
    "MarkdownDialog",
    "MarkdownView",
    "SourcesView",
    "ToolStepWidget",
}


def qt6_tools() -> Path:
    assert QT6_PYTHON.is_file() and CHECKER.is_file(), "the Qt 6 tools venv and checker are missing: run make lint"
    return QT6_PYTHON


def test_every_qt_only_widget_builds_and_runs_under_pyqt6():
    run = subprocess.run(
        [str(qt6_tools()), str(ROOT / "tests" / "support" / "qt6_smoke.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    assert run.stdout.strip(), run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["failed"] == {}, "\n".join(f"{name}:\n{trace}" for name, trace in report["failed"].items())
    assert report["qt"].startswith("6."), report
    assert report["qgis_core_importable"] is False  # Qt 6 alone: no QGIS 3 class stood in for a Qt 6 one
    assert set(report["needs_qgis"]) == NEEDS_QGIS, report["needs_qgis"]
    assert set(report["built"]) >= CHAT_WIDGETS, report["built"]
    assert run.returncode == 0, run.stderr


def test_the_checker_wrapper_fails_on_qt5_code_and_leaves_it_untouched(tmp_path):
    """make lint fails on what QGIS's checker would rewrite or warns about; the files are not changed."""
    package = tmp_path / "pkg"
    package.mkdir()
    source = (
        "from qgis.PyQt.QtCore import Qt\nfrom qgis.PyQt.QtWidgets import QDialog\n\n"
        "ALIGN = Qt.AlignLeft\n\n\ndef show(dialog: QDialog, label) -> int:\n"
        "    label.fontMetrics().width('x')\n    return dialog.exec_()\n"
    )
    (package / "old.py").write_text(source)
    (package / "new.py").write_text("from qgis.PyQt.QtCore import Qt\n\nALIGN = Qt.AlignmentFlag.AlignLeft\n")
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "qt6_checker.py"),
            "check",
            "--python",
            str(qt6_tools()),
            "--checker",
            str(CHECKER),
            str(package),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "+ALIGN = Qt.AlignmentFlag.AlignLeft" in run.stdout
    assert "+    return dialog.exec()" in run.stdout
    assert f"{package / 'old.py'}:8:4 WARNING: QFontMetrics.width() has been removed in Qt6" in run.stdout
    assert "new.py" not in run.stdout
    assert "1 file(s) to change, 1 warning(s)" in run.stderr
    assert (package / "old.py").read_text() == source
