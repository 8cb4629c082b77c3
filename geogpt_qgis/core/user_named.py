"""What the user typed in a conversation: the URLs, files and folders a tool may use without asking.

A tool may read a file outside the project's folder, or fetch a URL, without
the user's approval only when the user named it (or it sits in a folder they
named): the model is untrusted, and a path it read in a layer's attributes is
not the user's choice.  One record per conversation, shared by every tool
family through ``ToolContext.user_named`` so that ``load_data`` and
``run_algorithm`` judge a path the same way.

A named folder trusts what is under it, but never a folder so broad that it
names nothing (a lone "/", "~", "..", the home folder or any folder above it):
"schools / parks" in a sentence must not open the whole disk.  URLs compare
by scheme, host and path with dot segments removed, so ".." cannot climb out
of the path the user gave.  Qt-free; safe from any thread.
"""

from __future__ import annotations

import posixpath
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

from geogpt_qgis.core.cancel import current_conversation

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+", re.IGNORECASE)
# A word that names a file or folder: it has a slash, or ends in a file extension.
_PATH_WORD = re.compile(r"[\\/]|\.[A-Za-z0-9]{2,5}$")
_QUOTES = "\"'`“”‘’«»()[]<>,;:!?"
_NO_NAME = frozenset({"", ".", "..", "~", "/", "\\"})


def url_key(url: str) -> str:
    """``scheme://host/path`` with dot segments resolved, no query and no trailing slash."""
    parts = urlsplit(url.strip().rstrip(".,;:"))
    path = posixpath.normpath(parts.path) if parts.path else ""
    path = "" if path in (".", "/") else path.replace("//", "/")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path.rstrip('/')}"


def url_within(url: str, known: str) -> bool:
    """``url`` is the URL ``known`` (a key) names, or below its path."""
    key = url_key(url)
    return bool(known) and (key == known or key.startswith(known + "/"))


class UserNamed:
    """Per conversation: the URL keys and path words the user typed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._urls: dict[str, list[str]] = {}
        self._paths: dict[str, list[str]] = {}

    def notice(self, text: str) -> None:
        """Remember what the user's message names (called before each run and for a reopened conversation)."""
        conversation = current_conversation.get()
        urls = [url_key(u) for u in _URL.findall(text or "")]
        words = [w.strip(_QUOTES).rstrip(".") for w in _URL.sub(" ", text or "").split()]
        paths = [w.split("|", 1)[0] for w in words if w and _PATH_WORD.search(w)]  # a QGIS source: its file
        with self._lock:
            for store, found in ((self._urls, urls), (self._paths, paths)):
                known = store.setdefault(conversation, [])
                known += [item for item in found if item not in known]

    def urls(self) -> list[str]:
        with self._lock:
            return list(self._urls.get(current_conversation.get(), []))

    def url_given(self, url: str, also: list[str] | None = None) -> bool:
        """The user typed ``url`` or a URL above it (or it is under one of ``also``: configured servers)."""
        return any(url_within(url, known) for known in [*self.urls(), *(url_key(u) for u in also or [])])

    def file_named(self, path: Path, home: str) -> bool:
        """``path`` is in the project's folder ``home``, or is a file or under a folder the user named.

        A bare file name the user typed trusts a file of that name (they said
        which file; the model found where).  A folder trusts what is under it,
        unless it is too broad to name anything (see the module's docstring).
        """
        target = path.expanduser().resolve()
        if home and target.is_relative_to(Path(home).resolve()):
            return True
        with self._lock:
            named = list(self._paths.get(current_conversation.get(), []))
        for word in named:
            if "/" not in word and "\\" not in word:
                if target.name == word:
                    return True
                continue
            place = Path(word).expanduser()
            place = (Path(home) / place if home and not place.is_absolute() else place).resolve()
            if _too_broad(word, place):
                continue
            if target == place or target.is_relative_to(place):
                return True
        return False


def _too_broad(word: str, place: Path) -> bool:
    """A word like "/", "~/" or "../", or a place that holds the home folder: it names no particular data."""
    if all(part in _NO_NAME for part in re.split(r"[\\/]", word)):
        return True
    home = Path.home().resolve()
    return place == Path(place.anchor) or home == place or home.is_relative_to(place)
