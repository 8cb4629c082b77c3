"""A debug guard: layers, providers and the project are made and touched on QGIS's main thread only.

Building a QGIS provider on the agent's worker thread can kill QGIS (the
OGC API Features provider does in 3.22), and it may work for months before
it does.  So the plugin makes every layer and provider through the
constructors here, and calls ``assert_main_thread`` where it reads or
changes ``QgsProject``; with the guard on, the first call from any other
thread raises ``WrongThread`` and is recorded, so a tool that breaks the rule
fails its tests at once even when the tool turns the exception into an error
message.  The guard is off by default (the plugin pays nothing); the test
suite turns it on with ``GEOGPT_THREAD_GUARD=1``, which child processes
(``python -m geogpt_qgis ask``) inherit.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qgis.core import QgsProviderMetadata, QgsRasterLayer, QgsVectorLayer

ENV_VAR = "GEOGPT_THREAD_GUARD"

_violations: list[str] = []
_lock = threading.Lock()


class WrongThread(AssertionError):
    """QGIS-owned work was attempted off the main thread (only raised while the guard is on)."""


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "").strip() not in ("", "0")


def assert_main_thread(what: str) -> None:
    """With the guard on, raise ``WrongThread`` (and record it) unless called on QGIS's main thread.

    ``what`` says what was attempted, e.g. "a layer was added to the project".
    """
    if not enabled():
        return
    from qgis.PyQt.QtCore import QCoreApplication, QThread

    app = QCoreApplication.instance()
    if app is None or QThread.currentThread() is app.thread():
        return
    message = f"{what} on thread {threading.current_thread().name!r}, not QGIS's main thread (use ctx.on_main)"
    with _lock:
        _violations.append(message)
    raise WrongThread(message)


def take_violations() -> list[str]:
    """The violations recorded since the last call (tests check this after each test)."""
    with _lock:
        found = list(_violations)
        _violations.clear()
    return found


def vector_layer(uri: str, name: str, provider: str) -> QgsVectorLayer:
    """``QgsVectorLayer(uri, name, provider)``, on the main thread."""
    from qgis.core import QgsVectorLayer

    assert_main_thread(f"a {provider} vector layer was created")
    return QgsVectorLayer(uri, name, provider)


def raster_layer(uri: str, name: str, provider: str = "gdal") -> QgsRasterLayer:
    """``QgsRasterLayer(uri, name, provider)``, on the main thread."""
    from qgis.core import QgsRasterLayer

    assert_main_thread(f"a {provider} raster layer was created")
    return QgsRasterLayer(uri, name, provider)


def provider_metadata(key: str) -> QgsProviderMetadata:
    """QGIS's metadata of the data provider ``key`` (its connections, URI codec), on the main thread."""
    from qgis.core import QgsProviderRegistry

    assert_main_thread(f"the {key} provider was used")
    return QgsProviderRegistry.instance().providerMetadata(key)
