"""Syntax highlighting for the code and SQL shown on approval cards."""

from __future__ import annotations

import re

from qgis.PyQt.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

PYTHON_KEYWORDS = (
    "False None True and as assert async await break class continue def del elif else except finally for from "
    "global if import in is lambda nonlocal not or pass raise return try while with yield"
).split()
SQL_KEYWORDS = (
    "select from where join left right inner outer full cross on using group by order having limit offset union all "
    "distinct as and or not in is null like ilike between case when then else end with insert into values update set "
    "delete create drop alter table view index schema truncate grant revoke returning exists cast true false asc desc"
).split()


def _format(colour: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(colour))
    if bold:
        fmt.setFontWeight(QFont.Weight.Bold)
    fmt.setFontItalic(italic)
    return fmt


class CodeHighlighter(QSyntaxHighlighter):
    """Keywords, strings, numbers and comments of Python or SQL."""

    def __init__(self, document: QTextDocument, language: str) -> None:
        super().__init__(document)
        if language == "sql":
            keywords = re.compile(r"\b(?:" + "|".join(SQL_KEYWORDS) + r")\b", re.IGNORECASE)
            comment = re.compile(r"--[^\n]*")
            strings = re.compile(r"'(?:[^']|'')*'")
        else:
            keywords = re.compile(r"\b(?:" + "|".join(PYTHON_KEYWORDS) + r")\b")
            comment = re.compile(r"#[^\n]*")
            strings = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
        self._rules = [
            (keywords, _format("#1f4e9c", bold=True)),
            (re.compile(r"\b\d+(?:\.\d+)?\b"), _format("#a35200")),
            (strings, _format("#2f7d32")),
            (comment, _format("#7a7a7a", italic=True)),
        ]

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        for pattern, fmt in self._rules:
            for match in pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), fmt)
