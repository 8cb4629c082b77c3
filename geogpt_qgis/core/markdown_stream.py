"""Split a streamed Markdown answer into finished blocks, in linear time.

The dock renders each finished block (paragraph, list, table, fenced code)
once, as Markdown, and shows only the unfinished tail as plain text.  So the
cost of rendering a stream grows with its length, instead of re-rendering the
whole answer on every token.
"""

from __future__ import annotations

_FENCES = ("```", "~~~")


class MarkdownBlockSplitter:
    """Feed streamed text; get back the blocks that can no longer change.

    A block ends at a blank line outside a fenced code block.  Each character
    is scanned once.
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._unjoined: list[str] = []  # text after _buffer that holds no newline
        self._scanned = 0  # offset in _buffer of the first line not yet scanned
        self._in_fence = False
        self._has_content = False

    @property
    def pending(self) -> str:
        """The unfinished tail of the stream."""
        self._join()
        return self._buffer

    def _join(self) -> None:
        if self._unjoined:
            self._buffer += "".join(self._unjoined)
            self._unjoined.clear()

    def feed(self, text: str) -> list[str]:
        """Add streamed text; return the blocks it completed, oldest first."""
        if "\n" not in text:
            # No line can end here: just remember the text (no copying of the tail).
            self._unjoined.append(text)
            return []
        self._unjoined.append(text)
        self._join()
        blocks: list[str] = []
        while True:
            newline = self._buffer.find("\n", self._scanned)
            if newline < 0:
                return blocks
            line = self._buffer[self._scanned : newline]
            self._scanned = newline + 1
            stripped = line.strip()
            if stripped.startswith(_FENCES):
                self._in_fence = not self._in_fence
            if stripped or self._in_fence:
                self._has_content = True
                continue
            if self._has_content:
                blocks.append(self._buffer[: self._scanned].rstrip("\n"))
            self._buffer = self._buffer[self._scanned :]
            self._scanned = 0
            self._has_content = False

    def finish(self) -> str:
        """End the stream and return the last block (maybe empty)."""
        self._join()
        rest = self._buffer.strip("\n")
        self._buffer, self._scanned, self._in_fence, self._has_content = "", 0, False, False
        return rest
