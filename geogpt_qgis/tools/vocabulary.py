"""The names a guided reply may use (``core.guided_schema.Vocabulary``), read from the project and the registry.

Read on the main thread before each guided model call (a few milliseconds), so
a layer added by the step before is a name the next reply may use.  The
algorithm ids (658 on QGIS 3.22) are sorted once per state of the registry:
the providers and how many algorithms each holds, which changes only when a
plugin adds or removes a provider or refreshes its algorithms.
"""

from __future__ import annotations

from functools import lru_cache
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
    providers = QgsApplication.processingRegistry().providers()
    state = tuple((provider.id(), len(provider.algorithms())) for provider in providers)
    return Vocabulary(
        layers=tuple(layer.name() for layer in layers),
        fields=tuple(dict.fromkeys(fields)),
        algorithms=_algorithm_ids(state),
    )


@lru_cache(maxsize=4)
def _algorithm_ids(state: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    """Every algorithm id of the running registry, sorted; ``state`` (providers and their counts) keys the cache."""
    del state  # only the key: the ids are read from the registry as it is now
    return tuple(sorted(algorithm.id() for algorithm in QgsApplication.processingRegistry().algorithms()))
