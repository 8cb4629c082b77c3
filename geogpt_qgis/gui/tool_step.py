"""One tool step in the chat: name and arguments, status and time, the result on demand."""

from __future__ import annotations

import json
from typing import Any

from qgis.PyQt.QtGui import QFontDatabase
from qgis.PyQt.QtWidgets import QFrame, QWidget

from geogpt_qgis.core.text import format_arguments
from geogpt_qgis.gui.auto_height import AutoHeightTextBrowser
from geogpt_qgis.gui.collapsible import CollapsibleSection
from geogpt_qgis.toolbelt.i18n import tr

BODY_MAX_HEIGHT = 220


class ToolStepWidget(CollapsibleSection):
    """Collapsed: ``▸ describe_layer(layer="schools") ✓ 0.04 s``; expanded: arguments and result."""

    def __init__(self, call_id: str, name: str, args: dict[str, Any], parent: QWidget | None = None) -> None:
        self.call_id = call_id
        self.name = name
        self.args = args
        self.ok: bool | None = None
        self.result = ""
        text = AutoHeightTextBrowser(max_height=BODY_MAX_HEIGHT)
        text.setFrameShape(QFrame.Shape.StyledPanel)
        text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        super().__init__(self._title(tr("running…")), text, parent)
        self.text = text
        self._render_body()

    def _title(self, status: str) -> str:
        return f"{self.name}({format_arguments(self.args)})  {status}"

    def _render_body(self) -> None:
        arguments = json.dumps(self.args, indent=2, ensure_ascii=False)
        body = f"{tr('Arguments')}:\n{arguments}"
        if self.ok is not None:
            body += f"\n\n{tr('Result')}:\n{self.result}"
        self.text.setPlainText(body)

    def show_progress(self, percent: float) -> None:
        if self.ok is None:
            self.set_title(self._title(tr("running… {percent:.0f}%").format(percent=percent)))

    def finish(self, ok: bool, result: str, seconds: float | None) -> None:
        """Show the outcome: a tick or a cross, the time (unknown for restored steps), the result in the body."""
        self.ok, self.result = ok, result
        took = f" {seconds:.2f} s" if seconds is not None else ""
        self.set_title(self._title(f"{'✓' if ok else '✗'}{took}"))
        self.header.setToolTip(f"{self.name}({format_arguments(self.args)})")
        self._render_body()

    def mark_stopped(self) -> None:
        if self.ok is None:
            self.ok, self.result = False, tr("Stopped before it finished.")
            self.set_title(self._title(tr("■ stopped")))
            self._render_body()
