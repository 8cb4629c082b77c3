"""The names a guided reply may use (``core.guided_schema.Vocabulary``), read from the project and the registry.

Read on the main thread before each guided model call (a few milliseconds), so
a layer added by the step before is a name the next reply may use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgis.core import QgsApplication, QgsVectorLayer

from geogpt_qgis.core.guided_schema import Vocabulary
from geogpt_qgis.tools.layers import ordered_layers

if TYPE_CHECKING:
    from qgis.core import QgsProject


def read_vocabulary(project: QgsProject) -> Vocabulary:
    """The project's layer names and field names, and every algorithm id of the running registry (main thread)."""
    layers = ordered_layers(project)
    fields = [field.name() for layer in layers if isinstance(layer, QgsVectorLayer) for field in layer.fields()]
    registry = QgsApplication.processingRegistry()
    algorithms = sorted(algorithm.id() for algorithm in registry.algorithms())
    return Vocabulary(
        layers=tuple(layer.name() for layer in layers),
        fields=tuple(dict.fromkeys(fields)),
        algorithms=tuple(algorithms),
    )
