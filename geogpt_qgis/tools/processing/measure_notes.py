"""The measures an algorithm call makes: where its expressions measure, in which unit, and by which method.

Found from parameter *types*, not algorithm ids: every ``expression``
parameter, every item of an ``aggregates`` or ``fields_mapping`` parameter
(``input``/``expression`` with the output ``name``), and an expression written
into ``FIELD_NAME`` (the field calculators).  The processing context measures on
an ellipsoid even when the project has none (``tools.measures.use_ellipsoid``).
The result names each measure's unit and method, the output fields remember
theirs (read back by ``read_features``/``describe_layer``), and statistics of a
field whose unit is known carry it.  Main thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsMapLayer,
    QgsProcessingAlgorithm,
    QgsProcessingContext,
    QgsProject,
)

from geogpt_qgis.core.figures import Figure
from geogpt_qgis.tools.measures import expression_figures, field_units, use_ellipsoid, whole_measure

# Statistics of a field that keep its unit (counts, variances and the like do not).
MEASURE_STATISTICS = frozenset(
    {"SUM", "MEAN", "MEDIAN", "MIN", "MAX", "RANGE", "STD_DEV", "FIRSTQUARTILE", "THIRDQUARTILE", "IQR"}
)
ITEM_EXPRESSION_KEYS = ("input", "expression")


@dataclass
class RunMeasures:
    """What one call measures: figures for the result, and the unit of each output field."""

    ellipsoid: str = ""
    figures: list[Figure] = field(default_factory=list)
    fields: dict[str, Figure] = field(default_factory=dict)

    def notes(self) -> list[str]:
        """One line naming every measure, with its warnings."""
        if not self.figures:
            return []
        return ["Measures: " + "; ".join(figure.label for figure in self.figures) + "."]


def plan_measures(
    algorithm: QgsProcessingAlgorithm,
    values: dict[str, Any],
    project: QgsProject,
    context: QgsProcessingContext,
    crs: QgsCoordinateReferenceSystem | None,
) -> RunMeasures:
    """Set the context's ellipsoid if the project has none, and name the measures ``values`` make."""
    ellipsoid = use_ellipsoid(context, project, crs)
    measures = RunMeasures(ellipsoid)
    layer_crs = crs if crs is not None else QgsCoordinateReferenceSystem()
    target_field = values.get("FIELD_NAME")
    for definition in algorithm.parameterDefinitions():
        name, kind = definition.name(), definition.type()
        value = values.get(name)
        if kind == "expression" and isinstance(value, str):
            found = expression_figures(value, name, layer_crs, ellipsoid)
            measures.figures += found
            if found and isinstance(target_field, str) and target_field and whole_measure(value):
                measures.fields[target_field] = replace(found[0], what=f"field {target_field!r}")
        elif kind in ("aggregates", "fields_mapping") and isinstance(value, list):
            for item in value:
                if not isinstance(item, dict):
                    continue
                text = next((item[k] for k in ITEM_EXPRESSION_KEYS if isinstance(item.get(k), str)), "")
                out = str(item.get("name") or "")
                aggregate = str(item.get("aggregate") or "")
                found = expression_figures(text, f"{name} {out!r}", layer_crs, ellipsoid, aggregate)
                measures.figures += found
                if found and out and whole_measure(text):
                    measures.fields[out] = replace(found[0], what=f"field {out!r}")
    return measures


def first_layer_crs(values: dict[str, Any], project: QgsProject, reprojected: dict[str, Any]) -> Any:
    """The CRS the call's expressions measure in: INPUT's (after reprojection), else the first layer's."""
    names = ["INPUT", *[k for k in values if k != "INPUT"]]
    for key in names:
        if key in reprojected:
            return reprojected[key]
        value = values.get(key)
        layer = value if isinstance(value, QgsMapLayer) else project.mapLayer(value) if isinstance(value, str) else None
        if layer is not None and layer.crs().isValid():
            return layer.crs()
    return None


def statistic_figures(values: dict[str, Any], results: dict[str, Any], project: QgsProject) -> dict[str, Figure]:
    """Statistics of a field whose unit is known (``SUM`` of an area field...), by result key."""
    source = values.get("INPUT_LAYER", values.get("INPUT"))
    layer = source if isinstance(source, QgsMapLayer) else project.mapLayer(source) if isinstance(source, str) else None
    field_name = values.get("FIELD_NAME")
    if layer is None or not isinstance(field_name, str):
        return {}
    unit = field_units(layer).get(field_name)
    if unit is None:
        return {}
    found = {}
    for key, value in results.items():
        if key in MEASURE_STATISTICS and isinstance(value, int | float) and not isinstance(value, bool):
            found[key] = replace(unit, what=f"{key} of {field_name!r}", value=float(value))
    return found


def with_unit(figure: Figure | None) -> str:
    """``4,029,875 m² (ellipsoidal on WGS 84)`` for a statistic with a unit."""
    if figure is None:
        return ""
    text = f" {figure.unit} ({figure.method})" if figure.method else f" {figure.unit}"
    return text + (f" [{figure.warning}]" if figure.warning else "")
