"""Notice a model that repeats itself, while its answer streams in.

Small local models fall into loops: the same line over and over, now and then
with a stray word, until the server's length bound (or the user) stops them.
``RepetitionDetector.feed`` takes each streamed piece of text and says, as soon
as the tail of the answer is a loop, so the answer can end there with a clear
message instead of filling the dock.

Two views of the text, both updated incrementally in constant time per piece:

- **Units**: lines, and sentences within a line (a word ending in ``.``, ``?``
  or ``!``).  A loop is the tail being made of units already seen: of the last
  ``UNIT_WINDOW`` substantive units (at least ``MIN_UNIT_WORDS`` words with a
  letter or digit), at least ``UNIT_REPEATS`` repeat, word for word (case and
  spacing aside), a unit written earlier in the answer.  A stray word at the end
  of a line becomes a unit of its own, too short to count, so it does not hide
  the loop; one inside a line makes that unit new, and a loop tolerates a few.
- **Words**: an exactly periodic tail of words without line breaks (``the the
  the ...``, a phrase repeated on one line): the last ``max(MIN_PERIODIC_WORDS,
  PERIODS * p)`` words each equal the word ``p`` before (``p`` up to
  ``MAX_PERIOD`` words), and the repeated span holds a letter or digit (a table
  rule ``| --- | --- |`` does not count).

Legitimately repetitive answers are not loops by construction: a table or a
list of similar rows brings something new in each row (a name, a number), so
its rows are not repeats of one another word for word; their shared parts are
never whole units, and a row's varying cell breaks the word period.  What is
flagged is text that adds nothing: a dozen units in which at most two are new.
"""

from __future__ import annotations

import re
from collections import deque

UNIT_WINDOW = 12  # the last substantive units looked at
UNIT_REPEATS = 10  # how many of them must repeat an earlier unit
MIN_UNIT_WORDS = 3  # a unit with fewer words (with a letter or digit) is not counted either way
MIN_LOOP_CHARACTERS = 200  # the repeated units of a loop hold at least this much text
MAX_PERIOD = 40  # longest word period looked for
PERIODS = 8  # a word loop repeats its span this many times
MIN_PERIODIC_WORDS = 48  # and covers at least this many words
MAX_UNIT_CHARACTERS = 2000  # a unit without any end is judged in pieces of this size

_PIECE = re.compile(r"(\S+)(\s+)")
_SENTENCE_END = (".", "?", "!")
_WORDY = re.compile(r"\w")


class RepetitionDetector:
    """Feed it an answer's text as it streams; ``feed`` returns True once the tail is a loop (and stays True)."""

    def __init__(self) -> None:
        self.looping = False
        self._pending = ""  # text after the last whole word
        self._unit: list[str] = []  # words of the unit being written
        self._seen: set[str] = set()  # every substantive unit so far, normalised
        self._recent: deque[tuple[bool, int]] = deque(maxlen=UNIT_WINDOW)  # (repeat?, characters)
        self._words: deque[str] = deque(maxlen=MAX_PERIOD + 1)
        self._runs = [0] * (MAX_PERIOD + 1)  # _runs[p]: words in a row equal to the word p before

    def feed(self, text: str) -> bool:
        """Add streamed text; True when the answer has become a loop."""
        if self.looping or not text:
            return self.looping
        self._pending += text
        consumed = 0
        for match in _PIECE.finditer(self._pending):
            consumed = match.end()
            word, space = match.group(1), match.group(2)
            if self._word(word, ends_unit="\n" in space or word.endswith(_SENTENCE_END)):
                self.looping = True
                return True
        self._pending = self._pending[consumed:]
        if len(self._pending) > MAX_UNIT_CHARACTERS:  # one endless "word": judged as a unit of its own
            self.looping = self._word(self._pending, ends_unit=True)
            self._pending = ""
        return self.looping

    def _word(self, word: str, ends_unit: bool) -> bool:
        """Take one whole word; True if it completes a loop."""
        if self._periodic(word.lower()):
            return True
        self._unit.append(word.lower())
        if ends_unit or sum(len(w) for w in self._unit) > MAX_UNIT_CHARACTERS:
            unit, self._unit = self._unit, []
            return self._unit_done(unit)
        return False

    def _periodic(self, word: str) -> bool:
        """Update the word periods with ``word``; True if the tail repeats one span exactly, long enough."""
        words = self._words
        words.append(word)
        last = len(words) - 1
        looping = False
        for period in range(1, MAX_PERIOD + 1):
            if period <= last and words[last - period] == word:
                self._runs[period] += 1
                if self._runs[period] >= max(MIN_PERIODIC_WORDS, PERIODS * period) - period and any(
                    _WORDY.search(w) for w in list(words)[-period:]
                ):
                    looping = True
            else:
                self._runs[period] = 0
        return looping

    def _unit_done(self, words: list[str]) -> bool:
        if sum(1 for w in words if _WORDY.search(w)) < MIN_UNIT_WORDS:
            return False
        key = " ".join(words)
        self._recent.append((key in self._seen, len(key)))
        self._seen.add(key)
        if len(self._recent) < UNIT_WINDOW:
            return False
        repeats = [size for repeat, size in self._recent if repeat]
        return len(repeats) >= UNIT_REPEATS and sum(repeats) >= MIN_LOOP_CHARACTERS
