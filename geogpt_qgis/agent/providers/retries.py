"""A busy or failing model server asked again: after the wait it asks for, or a short backoff.

A busy or failing server (HTTP 429, 5xx) is asked again by ``with_retries``,
after the wait it asks for (``Retry-After``, up to a bound) or a short backoff;
the graph uses it around each model call.  The clients' own retries are off,
so both protocols are retried the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from geogpt_qgis.agent.providers.faults import chain, status_code

# A busy or failing server (these statuses) is asked again, at most this many tries in all.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
RETRY_ATTEMPTS = 3
# Waits before the 2nd and 3rd tries when the server does not say (Retry-After).
RETRY_BACKOFF_SECONDS = (1.0, 3.0)
# The longest Retry-After honoured; a server asking for more is not waited for (the user is told).
RETRY_AFTER_LIMIT = 30.0

T = TypeVar("T")


class RetriesExhausted(RuntimeError):
    """A busy or failing server still failed after ``attempts`` tries; ``__cause__`` is the last failure."""

    def __init__(self, last: BaseException, attempts: int) -> None:
        super().__init__(f"{attempts} tries failed; the last: {last}")
        self.last = last
        self.attempts = attempts


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a failed request's ``Retry-After`` header asks for (seconds or an HTTP date), if any."""
    for item in chain(exc):
        headers = getattr(getattr(item, "response", None), "headers", None)
        value = headers.get("retry-after") if headers is not None else None
        if not value:
            continue
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    return None


def retry_wait(exc: BaseException, attempt: int) -> float | None:
    """Seconds to wait before trying again after try number ``attempt`` failed with ``exc``; None: give up."""
    if status_code(exc) not in RETRY_STATUSES or attempt >= RETRY_ATTEMPTS:
        return None
    asked = retry_after_seconds(exc)
    if asked is not None:
        return asked if asked <= RETRY_AFTER_LIMIT else None
    return RETRY_BACKOFF_SECONDS[min(attempt, len(RETRY_BACKOFF_SECONDS)) - 1]


async def with_retries(
    call: Callable[[], Awaitable[T]],
    on_retry: Callable[[str], None],
    retryable: Callable[[BaseException], bool] = lambda exc: True,
) -> T:
    """``await call()``, asked again while the server is busy or failing (``retry_wait``).

    ``on_retry`` gets a sentence for the user before each wait.  Raises the
    failure itself when it is not worth retrying, ``RetriesExhausted`` when the
    tries ran out.  Only failures before the answer starts are retried (an HTTP
    status comes before any token), so nothing the user saw is sent twice.
    """
    attempt = 1
    while True:
        try:
            return await call()
        except Exception as exc:
            wait = retry_wait(exc, attempt) if retryable(exc) else None
            if wait is None:
                if attempt > 1 and status_code(exc) in RETRY_STATUSES:
                    raise RetriesExhausted(exc, attempt) from exc
                raise
            status = status_code(exc)
            reason = "is busy" if status == 429 else "failed"
            when = f"in {wait:.0f} s" if wait >= 1 else "now"
            tries = f"try {attempt + 1} of {RETRY_ATTEMPTS}"
            on_retry(f"The model server {reason} (HTTP {status}); trying again {when} ({tries}).")
            await asyncio.sleep(wait)
            attempt += 1
