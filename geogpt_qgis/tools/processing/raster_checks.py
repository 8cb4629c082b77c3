"""Checks on raster inputs of algorithms: band numbers that exist, and the CRS guard for terrain.

A band number beyond the raster's bands is refused naming the valid range
(QGIS's own message is "Incorrect parameter value for BAND").  A class label
used where a class value goes (``A==Forest`` in a formula, "Forest" in a
reclassification table) is refused with the class's code, read from the
raster's paletted renderer.

The CRS guard: a slope is never computed on a geographic DEM with degrees as metres.

Slope, aspect, hillshade and the roughness indices divide height differences
by the distance between pixel centres in the raster's map units.  On a DEM in
EPSG:4326 that distance is in degrees while the heights are in metres, so the
slope comes out almost vertical everywhere, silently.  The algorithms are
recognised by their name in the registry (the part after the provider: the
same for native:, gdal:, qgis: and grass ones); a call whose input raster is
geographic is refused with the way out (reproject to the UTM zone first),
unless it sets the GDAL tools' own SCALE to convert degrees (e.g. 111120).
"""

from __future__ import annotations

import re
from typing import Any

from qgis.core import QgsMapLayer, QgsPalettedRasterRenderer, QgsProcessingAlgorithm, QgsRasterLayer

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.compat import parameter_is_optional
from geogpt_qgis.tools.processing.crs import utm_crs_for_layer

TERRAIN_NAMES = frozenset(
    {
        "slope",
        "aspect",
        "hillshade",
        "ruggednessindex",
        "roughness",
        "relief",
        "tpitopographicpositionindex",
        "triterrainruggednessindex",
        "r.slope.aspect",
        "r.relief",
    }
)


def is_terrain_algorithm(algorithm_id: str) -> bool:
    return algorithm_id.split(":", 1)[-1].lower() in TERRAIN_NAMES


def check_raster_inputs(
    algorithm: QgsProcessingAlgorithm, values: dict[str, Any], layers: dict[str, QgsMapLayer | None]
) -> None:
    """Rasters where vectors go, band numbers, then the terrain CRS guard (main thread).

    Raises a ``ToolError`` the model can act on; a band left out of a single-band
    raster's call is set to 1 in ``values`` (QGIS would refuse it).
    """
    check_vector_slots(algorithm, layers)
    check_bands(algorithm, values, layers)
    check_class_names(algorithm, values, layers)
    check_terrain_crs(algorithm, values, layers)


TEXT_KINDS = ("string", "raster_calc_expression", "expression", "matrix")
_LAYER_REF = re.compile(r"\"[^\"]*@[^\"]*\"|'[^']*@[^']*'")  # "landcover@1": a layer's band, not a class


def check_class_names(
    algorithm: QgsProcessingAlgorithm, values: dict[str, Any], layers: dict[str, QgsMapLayer | None]
) -> None:
    """A class label written where its code belongs, in a formula or a table of an algorithm on a classed raster."""
    labels: dict[str, tuple[float, str]] = {}
    for layer in layers.values():
        if not isinstance(layer, QgsRasterLayer):
            continue
        renderer = layer.renderer()
        if isinstance(renderer, QgsPalettedRasterRenderer):
            for item in renderer.classes():
                if item.label.strip() and not _is_number(item.label):
                    labels[item.label.strip().casefold()] = (item.value, layer.name())
    if not labels:
        return
    for definition in algorithm.parameterDefinitions():
        value = values.get(definition.name())
        if definition.type() not in TEXT_KINDS or value in (None, ""):
            continue
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            bare = _LAYER_REF.sub(" ", text)  # a quoted label (A=="Forest") is still a label
            for label, (code, layer_name) in labels.items():
                if re.search(rf"(?<![\w@]){re.escape(label)}(?![\w@])", bare, re.IGNORECASE):
                    raise ToolError(
                        f"{definition.name()}: {label!r} is a class label of {layer_name!r}, not a value; its code "
                        f"is {code:g}. Use the code (e.g. A=={code:g}). Nothing was run."
                    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_vector_slots(algorithm: QgsProcessingAlgorithm, layers: dict[str, QgsMapLayer | None]) -> None:
    """A raster given for a vector input (QGIS's own message is "Could not load source layer")."""
    for definition in algorithm.parameterDefinitions():
        layer = layers.get(definition.name())
        if definition.type() in ("source", "vector") and isinstance(layer, QgsRasterLayer):
            raise ToolError(
                f"{definition.name()} needs a vector layer; {layer.name()!r} is a raster layer. "
                "Nothing was run. Give a vector layer (describe_layer without a layer shows each layer's type)."
            )


def check_bands(
    algorithm: QgsProcessingAlgorithm, values: dict[str, Any], layers: dict[str, QgsMapLayer | None]
) -> None:
    for definition in algorithm.parameterDefinitions():
        if definition.type() != "band":
            continue
        layer = layers.get(definition.parentLayerParameterName())
        if not isinstance(layer, QgsRasterLayer):
            continue
        if values.get(definition.name()) in (None, "", []):
            if layer.bandCount() == 1 and not parameter_is_optional(definition):
                values[definition.name()] = 1  # the only band
            continue
        chosen = values[definition.name()]
        for band in chosen if isinstance(chosen, list) else [chosen]:
            try:
                number = int(band)
            except (TypeError, ValueError):
                raise ToolError(f"{definition.name()}: a band is a number, not {band!r}") from None
            count = layer.bandCount()
            if not 1 <= number <= count:
                span = "only band 1" if count == 1 else f"bands 1-{count}"
                raise ToolError(
                    f"{definition.name()}={number} is out of range: {layer.name()!r} has {span}. Nothing was run."
                )


def check_terrain_crs(
    algorithm: QgsProcessingAlgorithm, values: dict[str, Any], layers: dict[str, QgsMapLayer | None]
) -> None:
    """Refuse a terrain algorithm on a geographic raster (main thread); the error says how to do it right."""
    if not is_terrain_algorithm(algorithm.id()):
        return
    scale = values.get("SCALE")
    if isinstance(scale, (int, float, str)) and str(scale).strip() and float(scale) != 1.0:
        return  # the caller converted degrees to metres itself
    for name, layer in layers.items():
        if not isinstance(layer, QgsRasterLayer) or not layer.crs().isValid() or not layer.crs().isGeographic():
            continue
        target, description = utm_crs_for_layer(layer)
        raise ToolError(
            f"{name}: {layer.name()!r} is in {layer.crs().authid()} (degrees), so {algorithm.id()} would take its "
            "pixel spacing in degrees as metres and give wrong results. Nothing was computed. Reproject it first: "
            f"run gdal:warpreproject with INPUT={layer.name()!r}, TARGET_CRS={target.authid()} ({description}), "
            "then run this on the result."
        )
