"""The names a guided reply may use (``core.guided_schema.Vocabulary``), read from the project and the registry.

Read on the main thread before each guided model call (a few milliseconds), so
a layer added by the step before is a name the next reply may use.  The
algorithm ids (658 on QGIS 3.22) are sorted once per state of the registry:
the providers and how many algorithms each holds, which changes only when a
plugin adds or removes a provider or refreshes its algorithms.

For the algorithms of the worked examples shown with the question, the
parameters are read too (``algorithm_parameters``): a reply that runs one
must then name QGIS's parameters, give layer parameters a project layer of a
kind the parameter accepts (a polygon layer where QGIS wants polygons), and
set those the example sets (a small model otherwise drops the distance of a
buffer, which QGIS would fill with its default without a word).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from qgis.core import QgsApplication, QgsVectorLayer

from geogpt_qgis.core.guided_schema import ExampleAlgorithms, Vocabulary, choosable
from geogpt_qgis.tools.layers import ordered_layers
from geogpt_qgis.tools.processing.compat import parameter_is_optional
from geogpt_qgis.tools.processing.params import layer_fits

if TYPE_CHECKING:
    from qgis.core import QgsMapLayer, QgsProcessingParameterDefinition, QgsProject

# QGIS parameter types whose value is one project layer, or a list of them.
LAYER_TYPES = frozenset({"source", "vector", "raster", "layer", "mesh", "pointcloud", "annotation"})
LIST_OF_LAYERS = "multilayer"
NUMBER_TYPES = frozenset({"number", "distance", "scale", "duration", "area", "volume"})
TEXT_TYPES = frozenset({"string", "expression", "crs", "extent", "point", "datetime", "aggregate"})
# native:aggregate's AGGREGATES: one object per output field (left free, a small model wrote {} and QGIS refused it).
AGGREGATES_TYPE = "aggregates"
AGGREGATE_ITEM = {
    "type": "object",
    "properties": {
        "aggregate": {"type": "string"},  # sum, mean, count, minimum, maximum, first_value, concatenate...
        "input": {"type": "string"},  # an expression: "\"population\""
        "name": {"type": "string"},
        "type": {"type": "integer"},  # QVariant's: 2 integer, 4 64-bit integer, 6 decimal, 10 text
        "length": {"type": "integer"},
        "precision": {"type": "integer"},
        "delimiter": {"type": "string"},
    },
    "required": ["aggregate", "input", "name", "type"],
    "additionalProperties": False,
}


def read_vocabulary(project: QgsProject, algorithms: ExampleAlgorithms = ()) -> Vocabulary:
    """The project's layer and field names, every algorithm id of the running registry, and the parameters of
    ``algorithms`` (main thread)."""
    layers = ordered_layers(project)
    names = tuple(layer.name() for layer in layers)
    fields = [field.name() for layer in layers if isinstance(layer, QgsVectorLayer) for field in layer.fields()]
    providers = QgsApplication.processingRegistry().providers()
    state = tuple((provider.id(), len(provider.algorithms())) for provider in providers)
    unique_fields = tuple(dict.fromkeys(fields))
    parameters = {}
    for algorithm_id, example_sets in algorithms:
        spec = algorithm_parameters(algorithm_id, example_sets, layers, unique_fields)
        if spec is not None:
            parameters[algorithm_id] = spec
    return Vocabulary(layers=names, fields=unique_fields, algorithms=_algorithm_ids(state), parameters=parameters)


def algorithm_parameters(
    algorithm_id: str, example_sets: tuple[str, ...], layers: list[QgsMapLayer], fields: tuple[str, ...]
) -> dict[str, Any] | None:
    """The JSON schema of run_algorithm's ``parameters`` for ``algorithm_id`` (``None``: no such algorithm).

    Every input parameter QGIS defines, typed; required are those the example
    sets that QGIS requires too.  Outputs are left out: the runner makes them.
    """
    algorithm = QgsApplication.processingRegistry().algorithmById(algorithm_id)
    if algorithm is None:
        return None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for definition in algorithm.parameterDefinitions():
        if definition.isDestination():
            continue
        properties[definition.name()] = _value_schema(definition, layers, fields)
        if definition.name() in example_sets and not parameter_is_optional(definition):
            required.append(definition.name())
    # Required first (in QGIS's order): a constrained reply writes its properties in the order given.
    order = [*required, *(name for name in properties if name not in required)]
    return {
        "type": "object",
        "properties": {name: properties[name] for name in order},
        "required": required,
        "additionalProperties": False,
    }


def _value_schema(
    definition: QgsProcessingParameterDefinition, layers: list[QgsMapLayer], fields: tuple[str, ...]
) -> dict[str, Any]:
    kind = definition.type()
    if kind in LAYER_TYPES or kind == LIST_OF_LAYERS:
        names = choosable(_fitting_names(definition, layers))
        if names:
            return {"enum": names} if kind in LAYER_TYPES else {"type": "array", "items": {"enum": names}}
        return {}
    if kind == AGGREGATES_TYPE:
        return {"type": "array", "items": AGGREGATE_ITEM, "minItems": 1}
    if kind == "field" and (choices := choosable(fields)):
        one = {"enum": choices}
        return {"type": "array", "items": one} if definition.allowMultiple() else one
    if kind in NUMBER_TYPES:
        return {"type": "number"}  # in the layer's units: the runner refuses "500 m" and says which number to send
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "enum":
        return {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}, {"type": "string"}]}
    if kind in TEXT_TYPES:
        return {"type": "string"}
    return {}


def _fitting_names(definition: QgsProcessingParameterDefinition, layers: list[QgsMapLayer]) -> list[str]:
    """The names of the layers ``definition`` accepts (polygons where it wants polygons); all, if none does.

    All, so the schema still admits a call: QGIS's refusal then says which kind of layer the parameter needs.
    """
    names = list(dict.fromkeys(layer.name() for layer in layers))
    fitting = list(dict.fromkeys(layer.name() for layer in layers if layer_fits(layer, definition)))
    return fitting or names


@lru_cache(maxsize=4)
def _algorithm_ids(state: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    """Every algorithm id of the running registry, sorted; ``state`` (providers and their counts) keys the cache."""
    del state  # only the key: the ids are read from the registry as it is now
    return tuple(sorted(algorithm.id() for algorithm in QgsApplication.processingRegistry().algorithms()))
