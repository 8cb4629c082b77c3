"""No attribute of the plugin's Qt classes hides a Qt method: Qt would call it, and a signal called aborts QGIS.

sip calls a Python attribute named like a C++ virtual (``event``, ``done``,
``changeEvent``...) whenever Qt calls that virtual.  The agent worker once had a
signal named ``event``: the first event sent to it (a language change the dock
passes on to its children, a deferred delete) called the signal, PyQt raised
"native Qt signal is not callable" inside a virtual, and the process aborted.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

from qgis.PyQt.QtCore import QCoreApplication, QEvent, QObject

import geogpt_qgis

PACKAGE = Path(geogpt_qgis.__file__).parent


def _self_attributes(node: ast.ClassDef) -> set[str]:
    """Names the class's methods assign on ``self`` (``self.event = ...`` hides ``QObject.event`` too)."""
    targets = [t for item in ast.walk(node) if isinstance(item, ast.Assign) for t in item.targets]
    targets += [item.target for item in ast.walk(node) if isinstance(item, ast.AnnAssign)]
    targets += [e for t in targets if isinstance(t, ast.Tuple) for e in t.elts]
    return {t.attr for t in targets if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self"}


def _named_classes() -> list[tuple[str, str, list[str], set[str]]]:
    """(module, class, pyqtSignal attributes, attributes set on self) for every top-level class of the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            signals = [
                target.id
                for item in node.body
                if isinstance(item, ast.Assign)
                and isinstance(item.value, ast.Call)
                and getattr(item.value.func, "id", "") == "pyqtSignal"
                for target in item.targets
                if isinstance(target, ast.Name)
            ]
            found.append((module, node.name, signals, _self_attributes(node)))
    return found


def _qt_bases(cls: type) -> list[type]:
    return [base for base in cls.__mro__ if base.__module__.startswith(("PyQt", "qgis._", "sip"))]


def test_no_signal_or_attribute_hides_a_qt_method():
    classes = _named_classes()
    assert sum(1 for _, _, signals, _ in classes if signals) >= 15  # the dock's parts, the worker, the relays...
    hidden = {}
    qt_classes = 0
    for module, name, signals, attributes in classes:
        cls = getattr(importlib.import_module(module), name)
        bases = _qt_bases(cls) if isinstance(cls, type) else []
        qt_classes += bool(bases)
        for attribute in {*signals, *attributes}:
            owners = [base.__name__ for base in bases if attribute in vars(base)]
            if owners:
                hidden[f"{module}.{name}.{attribute}"] = owners
    assert qt_classes >= 30
    assert hidden == {}, "rename these: Qt calls the methods they hide"


def test_the_worker_takes_events_without_calling_its_signal(qgis_app):
    from geogpt_qgis.agent.worker import AgentWorker

    errors: list[BaseException] = []
    previous = sys.excepthook
    sys.excepthook = lambda _type, value, _tb: errors.append(value)
    try:
        worker = AgentWorker()
        assert QCoreApplication.sendEvent(worker, QEvent(QEvent.Type.LanguageChange)) is False
        worker.deleteLater()
        QCoreApplication.sendPostedEvents(worker, QEvent.Type.DeferredDelete)
    finally:
        sys.excepthook = previous
    assert errors == []


def test_the_dock_survives_a_language_change(panel):
    """Switching QGIS's language sends LanguageChange down the dock's whole tree of objects."""
    errors: list[BaseException] = []
    previous = sys.excepthook
    sys.excepthook = lambda _type, value, _tb: errors.append(value)
    try:
        QCoreApplication.sendEvent(panel, QEvent(QEvent.Type.LanguageChange))
        QCoreApplication.processEvents()
    finally:
        sys.excepthook = previous
    assert errors == []
    assert isinstance(panel.conversation.worker, QObject)
