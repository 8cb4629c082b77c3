"""Separate inline ``<think>...</think>`` reasoning from the answer in a token stream.

Some models (DeepSeek-R1 and friends through some servers) put their reasoning
in the content between think tags instead of a separate field.  The tags may
arrive split across chunks, so a short tail that could be the start of a tag
is held back until the next chunk decides it.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["text", "reasoning"]
_OPEN, _CLOSE = "<think>", "</think>"


class ThinkTagSplitter:
    """Feed content chunks; get ``(kind, text)`` pieces in order."""

    def __init__(self) -> None:
        self._inside = False
        self._held = ""

    def feed(self, chunk: str) -> list[tuple[Kind, str]]:
        text = self._held + chunk
        self._held = ""
        pieces: list[tuple[Kind, str]] = []
        while text:
            tag = _CLOSE if self._inside else _OPEN
            index = text.find(tag)
            if index >= 0:
                self._emit(pieces, text[:index])
                text = text[index + len(tag) :]
                self._inside = not self._inside
                continue
            keep = _partial_tag_suffix(text, tag)
            self._emit(pieces, text[: len(text) - keep])
            self._held = text[len(text) - keep :]
            break
        return pieces

    def flush(self) -> list[tuple[Kind, str]]:
        """Return whatever is held back (the stream ended)."""
        pieces: list[tuple[Kind, str]] = []
        self._emit(pieces, self._held)
        self._held = ""
        return pieces

    def _emit(self, pieces: list[tuple[Kind, str]], text: str) -> None:
        if text:
            pieces.append(("reasoning" if self._inside else "text", text))


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
