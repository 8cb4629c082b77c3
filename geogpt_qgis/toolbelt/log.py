"""One logger for the plugin, forwarded to the QGIS message log.

Every module logs through ``logging.getLogger("geogpt_qgis")`` (or a child);
``install_qgis_log_handler`` routes those records to the "GeoGPT" tab of the
Log Messages panel.  Debug records only pass when debug logging is enabled.
Every line is scrubbed of known secrets (``core.secrets_scrub``) on the way:
an exception's text may quote a server's reply, and a server may echo a key.
"""

from __future__ import annotations

import contextlib
import logging

from geogpt_qgis.__about__ import PLUGIN_ID, TITLE
from geogpt_qgis.core.secrets_scrub import scrub

logger = logging.getLogger(PLUGIN_ID)


class QgsMessageLogHandler(logging.Handler):
    """Forward log records to ``QgsMessageLog`` under the plugin's tab."""

    def emit(self, record: logging.LogRecord) -> None:
        from qgis.core import Qgis, QgsMessageLog

        if record.levelno >= logging.ERROR:
            level = Qgis.MessageLevel.Critical
        elif record.levelno >= logging.WARNING:
            level = Qgis.MessageLevel.Warning
        else:
            level = Qgis.MessageLevel.Info
        with contextlib.suppress(RuntimeError):  # QGIS is shutting down
            QgsMessageLog.logMessage(scrub(self.format(record)), TITLE, level, notifyUser=False)


def install_qgis_log_handler(debug: bool = False) -> logging.Handler:
    """Attach the QGIS handler once and return it (so ``unload`` can remove it)."""
    for handler in logger.handlers:
        if isinstance(handler, QgsMessageLogHandler):
            logger.setLevel(logging.DEBUG if debug else logging.INFO)
            return handler
    handler = QgsMessageLogHandler()
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    return handler


def remove_handler(handler: logging.Handler) -> None:
    """Detach a handler installed by ``install_qgis_log_handler``."""
    logger.removeHandler(handler)
