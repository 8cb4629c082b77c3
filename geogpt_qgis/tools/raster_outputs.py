"""Raster outputs of algorithms: a style that fits what they hold and a statistics line for the model.

Called by the processing runner after the outputs were added.  The statistics
are read on the worker (``describe_raster``: exact or said to be approximate);
the style is set on the main thread from them: a hillshade in greys, a band of
few integer classes paletted, anything else a pseudocolour ramp stretched over
its own min and max (QGIS's default for a new single-band raster is a grey
stretch that makes slope or distance hard to read).
"""

from __future__ import annotations

from dataclasses import dataclass

from qgis.core import (
    QgsColorRampShader,
    QgsContrastEnhancement,
    QgsPalettedRasterRenderer,
    QgsProject,
    QgsRasterLayer,
    QgsRasterShader,
    QgsSingleBandGrayRenderer,
    QgsSingleBandPseudoColorRenderer,
    QgsStyle,
)

from geogpt_qgis.core.artifacts import AddedLayer
from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.rasters import RasterReadPlan, band_summary, describe_raster, plan_raster_read

RAMP = "Viridis"
MAX_PALETTE_CLASSES = 32


@dataclass
class OutputStats:
    """Band 1's range and, for a few integer values, the values (for the palette)."""

    layer_id: str
    minimum: float | None
    maximum: float | None
    classes: list[float]


def finish_raster_outputs(ctx: ToolContext, algorithm_id: str, added: tuple[AddedLayer, ...]) -> list[str]:
    """Style each single-band raster output and return the lines that summarise their statistics (worker)."""
    plans: list[tuple[str, RasterReadPlan]] = ctx.on_main(_plans, ctx.project, added)
    lines: list[str] = []
    stats = []
    for layer_id, plan in plans:
        summary = band_summary(plan, ctx.cancel)
        stats.append(OutputStats(layer_id, *summary))
        lines += [f"{plan.name!r} " + line[0].lower() + line[1:] for line in describe_raster(plan, ctx.cancel)]
    ctx.on_main(_style_all, ctx.project, stats, "hillshade" in algorithm_id.lower())
    return lines


def _plans(project: QgsProject, added: tuple[AddedLayer, ...]) -> list[tuple[str, RasterReadPlan]]:
    plans = []
    for item in added:
        layer = project.mapLayer(item.layer_id)
        if isinstance(layer, QgsRasterLayer) and layer.bandCount() == 1 and layer.providerType() == "gdal":
            plans.append((layer.id(), plan_raster_read(layer)))
    return plans


def _style_all(project: QgsProject, stats: list[OutputStats], hillshade: bool) -> None:
    for item in stats:
        layer = project.mapLayer(item.layer_id)
        if isinstance(layer, QgsRasterLayer) and item.minimum is not None and item.maximum is not None:
            style(layer, item, hillshade)


def style(layer: QgsRasterLayer, stats: OutputStats, hillshade: bool, ramp_name: str = RAMP) -> None:
    """Set the renderer (main thread); ``ramp_name`` is a colour ramp of QGIS's default style."""
    provider = layer.dataProvider()
    low, high = float(stats.minimum or 0.0), float(stats.maximum or 0.0)
    if hillshade:
        renderer = QgsSingleBandGrayRenderer(provider, 1)
        enhancement = QgsContrastEnhancement(provider.dataType(1))
        stretch = QgsContrastEnhancement.ContrastEnhancementAlgorithm.StretchToMinimumMaximum
        enhancement.setContrastEnhancementAlgorithm(stretch)
        enhancement.setMinimumValue(low)
        enhancement.setMaximumValue(high)
        renderer.setContrastEnhancement(enhancement)
        layer.setRenderer(renderer)
    elif stats.classes and len(stats.classes) <= MAX_PALETTE_CLASSES:
        ramp = QgsStyle.defaultStyle().colorRamp(ramp_name)
        count = len(stats.classes)
        classes = [
            QgsPalettedRasterRenderer.Class(value, ramp.color(i / max(count - 1, 1)), "")
            for i, value in enumerate(stats.classes)
        ]
        layer.setRenderer(QgsPalettedRasterRenderer(provider, 1, classes))
    else:
        ramp = QgsStyle.defaultStyle().colorRamp(ramp_name)
        function = QgsColorRampShader(low, high, ramp)
        function.classifyColorRamp(5)
        shader = QgsRasterShader(low, high)
        shader.setRasterShaderFunction(function)
        renderer = QgsSingleBandPseudoColorRenderer(provider, 1, shader)
        renderer.setClassificationMin(low)
        renderer.setClassificationMax(high)
        layer.setRenderer(renderer)
    layer.triggerRepaint()
