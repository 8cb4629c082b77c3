"""Why QGIS could not open a layer, read only through paths that cannot crash QGIS.

QGIS 3.22's ``QgsError::summary()`` returns the first message of its list
without checking that there is one: on an empty error that is undefined
behaviour, and QGIS dies with signal 11.  Providers that fail without saying
why leave exactly that: an OGC API Features layer QGIS 3.22 could not open
has an empty error (issue 37: ``query_ogc_collection`` of a whole collection
killed the headless command).  So the plugin never calls ``error()``,
``summary()`` or ``message()`` on a layer or provider itself: it asks
``why_not_opened``, which checks that the layer and its provider exist and
that each error is non-empty (``isEmpty``) before it reads the messages one
by one (``messageList``, never ``first()`` of an empty list).

Main thread, as the layer: a layer made on a worker is read on that worker
before it is moved (``tools.maps.loading``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qgis.core import QgsError, QgsMapLayer

MAX_CHARS = 500  # a provider may quote a whole server reply; the model needs the gist
# QGIS's own line for any provider that failed: it repeats the layer's source and says nothing about why.
_BOILERPLATE = "Provider is not valid (provider:"


def messages(error: QgsError | None) -> list[str]:
    """The messages of ``error``, each on one line; none for no error or an empty one (never ``summary()``)."""
    if error is None or error.isEmpty():
        return []
    found = [" ".join(str(message.message() or "").split()) for message in error.messageList()]
    return [text for text in found if text]


def error_text(error: QgsError | None) -> str:
    """``error``'s messages on one line, ``""`` for an empty error (what ``summary()`` would crash on)."""
    return _joined(messages(error))


def why_not_opened(layer: QgsMapLayer | None) -> str:
    """What the layer and its data provider said about their failure, or ``""`` when they said nothing useful."""
    if layer is None:
        return ""
    said = messages(layer.error())
    provider = layer.dataProvider()
    if provider is not None:
        said += messages(provider.error())
    return _joined([text for text in said if not text.startswith(_BOILERPLATE)])


def not_opened_message(what: str, layer: QgsMapLayer | None, fallback: str = "QGIS gave no reason") -> str:
    """``QGIS could not open WHAT: REASON``, the reason read through ``why_not_opened`` (or ``fallback``)."""
    return f"QGIS could not open {what}: {why_not_opened(layer) or fallback}"


def _joined(texts: list[str]) -> str:
    joined = "; ".join(dict.fromkeys(texts))
    return joined if len(joined) <= MAX_CHARS else joined[: MAX_CHARS - 1] + "…"
