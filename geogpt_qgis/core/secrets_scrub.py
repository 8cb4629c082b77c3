"""Keep secrets out of everything the plugin sends to the model, writes or prints: one registry, one ``scrub``.

The model is untrusted and so is what it reads: a server error may echo the
API key it was sent, an expression may read an environment variable, a
connection string may carry a password.  Rather than hunting for each way a
secret can leak, every secret the plugin knows (API keys as they are read,
passwords of saved database connections, the key variables of the
environment) is registered here, and every exit (tool results, approval
previews, logs, the conversation store, exports, the command line) passes its
text through ``scrub``, which replaces each secret and its simple encodings
(URL-encoded, base64, JSON-escaped) with a marker.  Values shorter than
``MIN_SECRET_CHARS`` are not registered: replacing ``1234`` everywhere would
mangle numbers and still not protect such a password.  Qt-free and
thread-safe.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

MIN_SECRET_CHARS = 6
# Shorter than any secret, so scrubbing twice changes nothing more.
REDACTED = "***"
# Environment variables whose values are secrets wherever they turn up.
SECRET_ENV_VARS = ("OPENAI_API_KEY", "PGPASSWORD")

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_pattern_for: frozenset[str] = frozenset()


def register(*values: str | None) -> None:
    """Treat each value (if long enough) as a secret from now on (the pattern follows ``known()``)."""
    with _lock:
        for value in values:
            if isinstance(value, str) and len(value.strip()) >= MIN_SECRET_CHARS:
                _secrets.add(value)
                _secrets.add(value.strip())


def register_password(password: str | None, *shown: str | None) -> bool:
    """Register a connection's password, unless it equals something shown openly (its user or database name).

    A password that is also the user name is no secret the scrubber could keep
    (the name is in every connection label), and hiding it would hide the
    name everywhere: a schema called like the role would come out as ``***``.
    Returns whether it was registered.
    """
    if not password or password.strip().casefold() in {(s or "").strip().casefold() for s in shown}:
        return False
    if len(password.strip()) < MIN_SECRET_CHARS:
        return False
    register(password)
    return True


def forget_all() -> None:
    """Drop every registered secret (tests start from a clean registry)."""
    with _lock:
        _secrets.clear()


def known() -> frozenset[str]:
    """The registered secrets and the secret environment variables' current values."""
    from_env = (os.environ.get(name) for name in SECRET_ENV_VARS)
    with _lock:
        current = set(_secrets)
    current.update(v for v in from_env if v and len(v.strip()) >= MIN_SECRET_CHARS)
    return frozenset(current)


def _encodings(secret: str) -> Iterable[str]:
    """The secret as it may appear in text: as is, URL-encoded, base64, JSON-escaped."""
    raw = secret.encode("utf-8")
    yield secret
    yield quote(secret, safe="")
    yield quote_plus(secret)
    yield quote(secret)
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = encoded.decode("ascii")
        yield text
        yield text.rstrip("=")
    yield json.dumps(secret)[1:-1]
    yield json.dumps(secret, ensure_ascii=False)[1:-1]


def _current_pattern() -> re.Pattern[str] | None:
    global _pattern, _pattern_for
    secrets = known()
    with _lock:
        if _pattern is not None and secrets == _pattern_for:
            return _pattern
    if not secrets:
        return None
    forms = {form for secret in secrets for form in _encodings(secret) if len(form) >= MIN_SECRET_CHARS}
    # Longest first, so an encoding that contains another is replaced whole.
    pattern = re.compile("|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True)))
    with _lock:
        _pattern, _pattern_for = pattern, secrets
    return pattern


def scrub(text: str) -> str:
    """``text`` with every known secret (and its encodings) replaced by ``REDACTED``."""
    if not text:
        return text
    pattern = _current_pattern()
    if pattern is None:
        return text
    return pattern.sub(REDACTED, text)


def scrub_value(value: Any) -> Any:
    """``scrub`` applied to every string inside plain data (dicts, lists, tuples); anything else as it was."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_value(k): scrub_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_value(v) for v in value)
    return value



def scrub_exception(exc: BaseException, depth: int = 3) -> BaseException:
    """``exc`` with known secrets removed from its arguments and messages, in place; returns it.

    In place, so its type (which says what went wrong: a refused key, a
    server down) still explains it; its causes are scrubbed too.  Needed where
    an exception is stored as it is: LangGraph keeps a failed step's error in
    the conversation store, and a server's error may quote the key it was sent.
    """
    with contextlib.suppress(AttributeError, TypeError):
        exc.args = tuple(scrub_value(a) for a in exc.args)
    for name in ("message", "body", "detail", "error"):
        value = getattr(exc, name, None)
        if isinstance(value, (str, dict, list)):
            with contextlib.suppress(AttributeError, TypeError):
                setattr(exc, name, scrub_value(value))
    if depth > 0:
        for linked in (exc.__cause__, exc.__context__):
            if linked is not None and linked is not exc:
                scrub_exception(linked, depth - 1)
    return exc
