"""A plain image of the map view (no layout), rendered by QGIS's parallel renderer off the main thread.

The main thread only starts the render job (which draws the layers on QGIS's
own rendering threads) and, at the end, saves the finished image; the tool's
worker thread waits in between, so QGIS stays responsive while a large image
is drawn and the user's Stop button cancels the job.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from qgis.core import QgsMapRendererParallelJob, QgsMapSettings
from qgis.PyQt.QtCore import QSize

from geogpt_qgis.core.cancel import RunCancelled
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.maps.map_view import MapView
from geogpt_qgis.tools.thread_guard import assert_main_thread

RENDER_TIMEOUT_S = 300.0
POLL_S = 0.1


class _Render:
    """One render job and the event its end sets (the job lives on the main thread)."""

    def __init__(self, settings: QgsMapSettings) -> None:
        self.done = threading.Event()
        self.job = QgsMapRendererParallelJob(settings)
        self.job.finished.connect(self.done.set)

    def start(self) -> None:
        assert_main_thread("a map render was started")
        self.job.start()

    def cancel(self) -> None:
        self.job.cancelWithoutBlocking()

    def save(self, path: Path) -> list[str]:
        """Save the image via a partial file; the layers that failed to draw, by name."""
        assert_main_thread("a rendered map was saved")
        partial = path.with_name(f".{path.stem}.geogpt-partial{path.suffix}")
        if not self.job.renderedImage().save(str(partial), "PNG"):
            if partial.is_file():
                partial.unlink()
            raise ToolError(f"QGIS could not write {str(path)!r} (is the folder writable?)")
        os.replace(partial, path)
        return [error.layerID for error in self.job.errors()]


def map_settings(project: Any, view: MapView, dpi: int) -> QgsMapSettings:
    """Settings drawing ``view`` at ``dpi``: the canvas's size scaled from its own dpi, symbols scaled alike."""
    assert_main_thread("map settings were made")
    width, height = view.image_pixels(dpi)
    settings = QgsMapSettings()
    settings.setLayers(view.layers)
    settings.setDestinationCrs(view.crs)
    settings.setTransformContext(project.transformContext())
    settings.setOutputSize(QSize(width, height))
    settings.setOutputDpi(dpi)
    settings.setExtent(view.extent)
    settings.setBackgroundColor(project.backgroundColor())
    settings.setEllipsoid(project.ellipsoid())
    return settings


def render_png(ctx: ToolContext, view: MapView, dpi: int, path: Path) -> list[str]:
    """Draw ``view`` to the PNG ``path`` (called on the tool's worker thread); the ids of layers that failed."""
    render: _Render = ctx.on_main(lambda: _Render(map_settings(ctx.project, view, dpi)))
    ctx.on_main(render.start)
    waited = 0.0
    try:
        while not render.done.wait(POLL_S):
            ctx.check_cancelled()
            waited += POLL_S
            if waited > RENDER_TIMEOUT_S:
                raise ToolError(f"drawing the map took over {RENDER_TIMEOUT_S:.0f} s; try a lower dpi")
    except (RunCancelled, ToolError):
        ctx.bridge.call(render.cancel)
        raise
    return ctx.on_main(render.save, path)
