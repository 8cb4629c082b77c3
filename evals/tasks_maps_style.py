"""Style tasks (issue 23): scored on the renderer the run leaves, its classes recomputed without QGIS.

Graduated breaks are numpy's quantiles of the GeoPackage's values (read with
sqlite3 through the oracle), categories the set of distinct values, and a
raster's pseudocolour range GDAL's pixels through numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from evals.oracle import Oracle
from evals.raster_oracle import DEM, RasterOracle
from evals.task import Call, Expected, Reads, Task

Check = Callable[[Any], list[str]]  # the project -> what is wrong with it


def _layer(project: Any, name: str) -> Any:
    found = project.mapLayersByName(name)
    return found[0] if len(found) == 1 else None


def graduated_like_numpy(layer_name: str, field: str, values: list[float], classes: int) -> Check:
    """A graduated renderer on ``field`` whose class edges are numpy's quantiles of ``values``."""
    expected = [float(v) for v in np.quantile(values, np.linspace(0.0, 1.0, classes + 1))]

    def check(project: Any) -> list[str]:
        from qgis.core import QgsGraduatedSymbolRenderer

        layer = _layer(project, layer_name)
        renderer = layer.renderer() if layer is not None else None
        if not isinstance(renderer, QgsGraduatedSymbolRenderer):
            return [f"{layer_name!r} is not graduated (renderer {renderer.type() if renderer else None})"]
        if renderer.classAttribute() != field:
            return [f"{layer_name!r} is graduated by {renderer.classAttribute()!r}, not {field!r}"]
        ranges = renderer.ranges()
        edges = [ranges[0].lowerValue(), *(r.upperValue() for r in ranges)] if ranges else []
        if len(edges) != len(expected) or not np.allclose(edges, expected, rtol=1e-9):
            return [f"{layer_name!r} has class edges {edges}, numpy's quantiles are {expected}"]
        return []

    return check


def categorized_as(layer_name: str, field: str, values: set[Any]) -> Check:
    """A categorized renderer on ``field`` with one class per distinct value."""

    def check(project: Any) -> list[str]:
        from qgis.core import QgsCategorizedSymbolRenderer

        layer = _layer(project, layer_name)
        renderer = layer.renderer() if layer is not None else None
        if not isinstance(renderer, QgsCategorizedSymbolRenderer) or renderer.classAttribute() != field:
            return [f"{layer_name!r} is not categorized by {field!r}"]
        found = {c.value() for c in renderer.categories()}
        return [] if found == values else [f"{layer_name!r} has classes {sorted(found)}, expected {sorted(values)}"]

    return check


def pseudocolor_over(layer_name: str, low: float, high: float) -> Check:
    """A singleband pseudocolour renderer stretched over ``low``..``high``."""

    def check(project: Any) -> list[str]:
        from qgis.core import QgsSingleBandPseudoColorRenderer

        layer = _layer(project, layer_name)
        renderer = layer.renderer() if layer is not None else None
        if not isinstance(renderer, QgsSingleBandPseudoColorRenderer):
            return [f"{layer_name!r} is not singleband pseudocolor"]
        got = (renderer.classificationMin(), renderer.classificationMax())
        if not np.allclose(got, (low, high), rtol=1e-6):
            return [f"{layer_name!r} is stretched over {got}, the band's range is {(low, high)}"]
        return []

    return check


def styled_as_in_the_demo(layer_name: str) -> Check:
    """The layer's symbology XML is the demo project's, read from the project file."""

    def check(project: Any) -> list[str]:
        from qgis.core import QgsProject

        from geogpt_qgis.tools.maps.style_history import symbology_xml
        from harness.demo import PROJECT

        layer = _layer(project, layer_name)
        original = QgsProject()
        if layer is None or not original.read(str(PROJECT)):
            return [f"no {layer_name!r} to compare, or the demo project did not open"]
        first = _layer(original, layer_name)
        same = first is not None and symbology_xml(layer) == symbology_xml(first)
        original.clear()
        return [] if same else [f"{layer_name!r} is styled {layer.renderer().type()}, not as in the demo project"]

    return check


def _dem_range(o: Oracle) -> tuple[float, float]:
    pixels, _, nodata = RasterOracle(o.gpkg).array(DEM)
    valid = pixels[pixels != nodata] if nodata is not None else pixels
    return float(valid.min()), float(valid.max())


def _populations(o: Oracle) -> list[float]:
    return [float(a["population"]) for a, _ in o.rows("districts")]


def _classes_answer(reads: Reads) -> str:
    return "The districts are coloured by population in five classes: " + reads.last.split(": ", 1)[1]


MAPS_STYLE = [
    Task(
        "style-districts-population",
        "maps",
        "Colour the districts by population in five classes.",
        [
            [Call("style_layer", {"layer": "districts", "method": "quantile", "field": "population", "classes": 5})],
            _classes_answer,
        ],
        lambda o: Expected(
            numbers=list(np.quantile(_populations(o), [0.2, 0.4, 0.6, 0.8])),  # the reply names the breaks
            project=[graduated_like_numpy("districts", "population", _populations(o), 5)],
        ),
    ),
    Task(
        "style-landuse-by-district",
        "maps",
        "Show the land use areas in a different colour for each district.",
        [
            [Call("style_layer", {"layer": "landuse", "method": "categorized", "field": "district"})],
            lambda r: "Each district's land use now has its own colour.",
        ],
        lambda o: Expected(
            project=[categorized_as("landuse", "district", {a["district"] for a, _ in o.rows("landuse")})]
        ),
    ),
    Task(
        "style-elevation-pseudocolor",
        "maps",
        "Colour the elevation model with the viridis ramp.",
        [
            [Call("style_layer", {"layer": "elevation", "method": "pseudocolor", "color": "viridis"})],
            lambda r: "The elevation is now coloured with Viridis from its lowest to its highest value.",
        ],
        lambda o: Expected(project=[pseudocolor_over("elevation", *_dem_range(o))]),
    ),
    Task(
        "style-undo",
        "maps",
        "Colour the districts by population in five classes. Actually no, undo that.",
        [
            [Call("style_layer", {"layer": "districts", "method": "jenks", "field": "population"})],
            [Call("style_layer", {"layer": "districts", "method": "undo"})],
            lambda r: "Done: the districts have their previous style again.",
        ],
        lambda o: Expected(words=["previous style"], project=[styled_as_in_the_demo("districts")]),
    ),
]
