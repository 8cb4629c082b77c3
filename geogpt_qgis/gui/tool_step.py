"""One tool step in the chat: a one-line chip that reads as a sentence, the arguments and result on demand.

Collapsed, a finished step says what it did in the tool's own words (the first
line of its result: ``Selected 16 of 31 features in 'schools' · ✓ 0.02 s``);
a running one says what it is doing (``Select features: schools, "pupils" > 500
· running…``).  Expanded: the arguments as a list and the result, where a
Markdown table is a real table.  The raw call is in the chip's tooltip.
"""

from __future__ import annotations

import json
import re
from typing import Any

from qgis.PyQt.QtWidgets import QFrame, QWidget

from geogpt_qgis.core.text import format_arguments, short
from geogpt_qgis.gui.auto_height import AutoHeightTextBrowser
from geogpt_qgis.gui.collapsible import CollapsibleSection
from geogpt_qgis.toolbelt.i18n import tr

BODY_MAX_HEIGHT = 260
SUMMARY_CHARS = 90  # a result's first line longer than this is no summary
ARGUMENT_CHARS = 40
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}", re.MULTILINE)


def humanized(name: str) -> str:
    """``select_features`` → ``Select features``."""
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def doing(name: str, args: dict[str, Any]) -> str:
    """What a running call does: its name in words and its short argument values."""
    values = [short(str(v), ARGUMENT_CHARS) for v in args.values() if isinstance(v, str | int | float) and str(v)]
    return f"{humanized(name)}: {', '.join(values[:3])}" if values else humanized(name)


def summary(result: str) -> str:
    """The result's first line when it reads as a sentence (not a table row, not too long); else ""."""
    first = result.strip().splitlines()[0].strip() if result.strip() else ""
    if not first or first.startswith("|") or len(first) > SUMMARY_CHARS:
        return ""
    return first.rstrip(":")


def body_markdown(args: dict[str, Any], result: str | None) -> str:
    """Arguments as a list, then the result: Markdown tables stay tables, other lines keep their breaks."""
    listed = "\n".join(f"- `{key}`: {_inline(value)}" for key, value in args.items()) or tr("(none)")
    text = f"**{tr('Arguments')}**\n\n{listed}"
    if result is not None:
        if _TABLE_RULE.search(result):  # a table needs a blank line above it to be one
            shown = re.sub(r"(?m)^([^|\n].*)\n(?=\|)", "\\1\n\n", result)
        else:
            shown = "  \n".join(_escape_md(line) for line in result.splitlines())
        text += f"\n\n**{tr('Result')}**\n\n{shown}"
    return text


def _inline(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "`" + text.replace("`", "'") + "`"


def _escape_md(line: str) -> str:
    return re.sub(r"([\\`*_#<>\[\]])", r"\\\1", line)


class ToolStepWidget(CollapsibleSection):
    """Collapsed: a one-line chip; expanded: arguments and result."""

    def __init__(self, call_id: str, name: str, args: dict[str, Any], parent: QWidget | None = None) -> None:
        self.call_id = call_id
        self.name = name
        self.args = args
        self.ok: bool | None = None
        self.result = ""
        text = AutoHeightTextBrowser(max_height=BODY_MAX_HEIGHT)
        text.setFrameShape(QFrame.Shape.StyledPanel)
        super().__init__(self._title(tr("running…")), text, parent)
        self.text = text
        self.header.setToolTip(f"{self.name}({format_arguments(self.args)})")
        self._render_body()

    def _title(self, status: str) -> str:
        said = summary(self.result) if self.ok else ""
        return f"{said or doing(self.name, self.args)} · {status}"

    def _render_body(self) -> None:
        self.text.setMarkdown(body_markdown(self.args, self.result if self.ok is not None else None))

    def show_progress(self, percent: float) -> None:
        if self.ok is None:
            self.set_title(self._title(tr("running… {percent:.0f}%").format(percent=percent)))

    def finish(self, ok: bool, result: str, seconds: float | None) -> None:
        """Show the outcome: a tick or a cross, the time (unknown for restored steps), the result in the body."""
        self.ok, self.result = ok, result
        took = f" {seconds:.2f} s" if seconds is not None else ""
        self.set_title(self._title(f"{'✓' if ok else '✗'}{took}"))
        self._render_body()

    def mark_stopped(self) -> None:
        if self.ok is None:
            self.ok, self.result = False, tr("Stopped before it finished.")
            self.set_title(self._title(tr("■ stopped")))
            self._render_body()
