"""Fenced code blocks in an answer's Markdown, and a "copy" link put above each one.

The dock renders every Markdown block through one path (``gui.markdown_view``),
streamed or reopened; before Qt reads a block, each fenced code block gets a
link line above it whose address carries the code itself, percent-encoded.  So
a click copies exactly the code the answer holds, with nothing to look up and
the same result live and after reopening.  The code is taken from the source,
as CommonMark reads it: the lines between the fences, less the opening fence's
indentation.  Qt-free.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

COPY_SCHEME = "geogpt-copy"
# An opening fence: up to three spaces, three or more backticks or tildes, an info string (no backtick after ```).
_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}(?=[^`]*$)|~{3,})")


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block: the line of its opening fence and its code, exactly as a reader gets it."""

    line: int
    indent: str
    code: str


def code_blocks(markdown: str) -> list[CodeBlock]:
    """The fenced code blocks of ``markdown``, in order (one left open runs to the end)."""
    blocks: list[CodeBlock] = []
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        if opened is None:
            index += 1
            continue
        indent, fence = opened.group("indent"), opened.group("fence")
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not _closes(lines[end], fence):
            body.append(_dedent(lines[end], len(indent)))
            end += 1
        blocks.append(CodeBlock(index, indent, "\n".join(body)))
        index = end + 1
    return blocks


def with_copy_links(markdown: str, label: str) -> str:
    """``markdown`` with a ``[label](geogpt-copy:<code>)`` line, in its own paragraph, above each code block."""
    blocks = code_blocks(markdown)
    if not blocks:
        return markdown
    lines = markdown.split("\n")
    for block in reversed(blocks):
        link = f"{block.indent}[{label}]({copy_url(block.code)})"
        lines[block.line : block.line] = ["", link, ""] if block.line else [link, ""]
    return "\n".join(lines)


def copy_url(code: str) -> str:
    return f"{COPY_SCHEME}:{quote(code, safe='')}"


def code_of(url: str) -> str | None:
    """The code a copy link carries (``None``: not a copy link)."""
    prefix = f"{COPY_SCHEME}:"
    return unquote(url[len(prefix) :]) if url.startswith(prefix) else None


def _closes(line: str, fence: str) -> bool:
    """A closing fence: the same character, at least as long, up to three spaces in, nothing after."""
    stripped = line.strip()
    return len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def _dedent(line: str, indent: int) -> str:
    """A code line less up to ``indent`` leading spaces (the opening fence's)."""
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, indent) :]
