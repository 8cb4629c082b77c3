"""An analysis's algorithm steps wired as they ran: the plan a Processing model and a PyQGIS script are written from.

The run log keeps each ``run_algorithm`` call as the model sent it
(``AlgorithmRun``: layers by name or id, enums as words, distances as text).
To run again, each value is turned into what QGIS takes, the way the call was
prepared when it ran (``params``): enums to their index, numbers to numbers,
field lists to lists, and the finer arcs the runner chose when the model left
them out.  A layer value is wired to where it came from: a layer an earlier
step added becomes that step's output (``Wire.child``), any other layer an
input of the analysis named after the layer (``Wire.input``), a file path a
value.  Each step's result layers keep their names as the step's outputs.
A distance on a layer in degrees gets the reprojection step the runner ran
before it (to the layer's UTM zone), so the rerun measures in metres too.

Built on the main thread (a CRS or extent given as a layer name is looked up
in the project); nothing runs here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qgis.core import QgsMapLayer, QgsProject

from geogpt_qgis.core.analysis_steps import Analysis, Step
from geogpt_qgis.core.artifacts import LayerRef
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.compat import enum_value, parameter_is_optional
from geogpt_qgis.tools.processing.describe import LAYER_DESTINATIONS, find_algorithm, made_outputs
from geogpt_qgis.tools.processing.params import (
    LAYER_TYPES,
    PreparedParameters,
    _accurate_curves,
    _plan_reprojections,
    _scalar_value,
)

INPUT, CHILD, VALUE = "input", "child", "value"
REPROJECT = "native:reprojectlayer"
RASTER_KINDS = frozenset({"raster"})
VECTOR_KINDS = frozenset({"source", "vector"})


@dataclass(frozen=True)
class Wire:
    """Where one parameter value comes from: an input of the analysis, an earlier step's output, or a value."""

    kind: str  # INPUT, CHILD or VALUE
    name: str = ""  # the input's parameter name; the child's id
    output: str = ""  # the child's output parameter
    value: Any = None

    @classmethod
    def of_value(cls, value: Any) -> Wire:
        return cls(VALUE, value=value)


@dataclass
class InputLayer:
    """A layer the analysis starts from: a parameter of the model, a variable of the script."""

    name: str  # a safe identifier: the parameter's name
    layer: str  # the layer's name in the conversation: the parameter's description
    kind: str  # "vector", "raster" or "layer" (either)
    data_types: list[Any] = field(default_factory=list)  # geometry types a vector input takes (QGIS's; []: any)


@dataclass
class PlannedStep:
    """One algorithm step: its child id, the algorithm, the wired parameters and its named outputs."""

    child_id: str
    algorithm_id: str
    description: str
    wires: dict[str, list[Wire]]  # parameter -> one wire, or several for a multiple-layer parameter
    many: set[str]  # parameters that take a list (multiple layers)
    outputs: dict[str, str]  # output parameter -> the result layer's name
    defaults: dict[str, Any]  # parameters left out, with QGIS's default (the Modeler wants them set)
    temporary: list[str] = field(default_factory=list)  # outputs only later steps use (not result layers)


@dataclass
class AnalysisPlan:
    """The wired steps, the inputs they start from, and the calls the export cannot hold (labels)."""

    inputs: list[InputLayer]
    steps: list[PlannedStep]
    outside: list[str]


def plan_analysis(analysis: Analysis, project: QgsProject) -> AnalysisPlan:
    """Wire the algorithm steps of ``analysis`` as they ran (main thread); ``ToolError`` for an unknown algorithm."""
    planner = _Planner(project)
    for index, step in enumerate(analysis.steps, start=1):
        planner.add(index, step)
    return AnalysisPlan(list(planner.inputs.values()), planner.steps, [step.label for step in analysis.outside])


class _Planner:
    def __init__(self, project: QgsProject) -> None:
        self.project = project
        self.inputs: dict[str, InputLayer] = {}  # by the layer's name
        self.steps: list[PlannedStep] = []
        self.made_ids: dict[str, tuple[str, str]] = {}  # layer id -> (child id, output)
        self.made_names: dict[str, tuple[str, str]] = {}  # layer name -> (child id, output): the latest
        self.output_names: set[str] = set()
        self.made_layers: dict[tuple[str, str], str] = {}  # (child id, output) -> the layer it made then

    def add(self, index: int, step: Step) -> None:
        run = step.algorithm
        if run is None:  # analysis_of keeps only algorithm steps: a caller's mistake, never the model's
            raise ValueError(f"step {index} ran no algorithm")
        algorithm = find_algorithm(run.id)
        child_id = _identifier(f"{algorithm.name()}_{index}")
        definitions = {d.name(): d for d in algorithm.parameterDefinitions()}
        by_lower = {name.lower(): name for name in definitions}
        raw = {by_lower.get(str(key).lower(), str(key)): value for key, value in run.parameters.items()}
        wires: dict[str, list[Wire]] = {}
        many: set[str] = set()
        statics: dict[str, Any] = {}
        for name, definition in definitions.items():
            value = raw.get(name)
            if definition.isDestination() or value is None:
                continue
            kind = definition.type()
            if kind in LAYER_TYPES:
                wires[name] = [self._layer(value, step.artifact.layers, definition)]
            elif kind == "multilayer":
                items = value if isinstance(value, list) else [value]
                wires[name] = [self._layer(item, step.artifact.layers, definition) for item in items]
                many.add(name)
            else:
                try:
                    statics[name] = _scalar_value(algorithm, definition, value, self.project)
                except ToolError as exc:
                    raise ToolError(f"step {index} ({run.id}): {exc}") from None
        prepared = PreparedParameters(values=dict(statics))
        _accurate_curves(algorithm, definitions, prepared)  # the arcs the runner drew when the model chose none
        self._reproject_geographic(index, algorithm, definitions, prepared, wires, step.artifact.layers)
        wires.update({name: [Wire.of_value(value)] for name, value in prepared.values.items()})
        defaults = {
            name: definition.defaultValue()
            for name, definition in definitions.items()
            if name not in wires
            and not definition.isDestination()
            and not parameter_is_optional(definition)
            and _plain(definition.defaultValue())
        }
        outputs = self._outputs(algorithm, raw, step.artifact.added, child_id)
        description = algorithm.displayName()
        self.steps.append(PlannedStep(child_id, algorithm.id(), description, wires, many, outputs, defaults))

    def _reproject_geographic(
        self,
        index: int,
        algorithm: Any,
        definitions: dict[str, Any],
        prepared: PreparedParameters,
        wires: dict[str, list[Wire]],
        read: tuple[LayerRef, ...],
    ) -> None:
        """A distance on a layer in degrees: a reprojection step first, as the runner reprojected it when it ran.

        Decided by the same rule (``params._plan_reprojections``), on the layers
        the step read as they are in the project now; a layer no longer there
        is taken as it is.
        """
        layers = {
            name: self._project_layer(found[0], read)
            for name, found in wires.items()
            if len(found) == 1 and found[0].kind != VALUE
        }
        _plan_reprojections(algorithm.id(), definitions, prepared, layers, {})
        for reprojection in prepared.reprojections:
            child_id = _identifier(f"reprojectlayer_{index}_{reprojection.parameter}")
            step_wires = {
                "INPUT": wires[reprojection.parameter],
                "TARGET_CRS": [Wire.of_value(reprojection.target.authid())],
            }
            description = f"Reproject {reprojection.layer_name} to metres"
            self.steps.append(PlannedStep(child_id, REPROJECT, description, step_wires, set(), {}, {}, ["OUTPUT"]))
            wires[reprojection.parameter] = [Wire(CHILD, child_id, "OUTPUT")]

    def _project_layer(self, wire: Wire, read: tuple[LayerRef, ...]) -> QgsMapLayer | None:
        """The layer a wire stood for when the step ran, if the project still holds it."""
        if wire.kind == CHILD:
            layer_id = self.made_layers.get((wire.name, wire.output), "")
        else:
            layer = next((item.layer for item in self.inputs.values() if item.name == wire.name), "")
            layer_id = next((ref.layer_id for ref in read if ref.name == layer and ref.layer_id), "")
        return self.project.mapLayer(layer_id) if layer_id else None

    def _outputs(
        self, algorithm: Any, raw: dict[str, Any], added: tuple[LayerRef, ...], child_id: str
    ) -> dict[str, str]:
        """The step's layer outputs paired with the layers it added, in the order the runner added them."""
        made = {d.name() for d in made_outputs(algorithm)} | set(raw)
        layer_outputs = [
            d.name()
            for d in algorithm.parameterDefinitions()
            if d.isDestination() and d.type() in LAYER_DESTINATIONS and d.name() in made
        ]
        outputs: dict[str, str] = {}
        for output, layer in zip(layer_outputs, added, strict=False):
            name = _unique(layer.name, self.output_names)
            self.output_names.add(name)
            outputs[output] = name
            if layer.layer_id:
                self.made_ids[layer.layer_id] = (child_id, output)
                self.made_layers[(child_id, output)] = layer.layer_id
            self.made_names[layer.name] = (child_id, output)
        return outputs

    def _layer(self, value: Any, read: tuple[LayerRef, ...], definition: Any) -> Wire:
        """Where a layer value came from: an earlier step's output, a file, or an input of the analysis."""
        text = str(value).strip()
        if text in self.made_ids:
            return Wire(CHILD, *self.made_ids[text])
        by_id = next((ref for ref in read if ref.layer_id and ref.layer_id == text), None)
        if by_id is None:
            made = self.made_names.get(text) or next(
                (where for name, where in self.made_names.items() if name.casefold() == text.casefold()), None
            )
            if made is not None:
                return Wire(CHILD, *made)
        named = by_id or next((ref for ref in read if ref.name.casefold() == text.casefold()), None)
        if named is None and _is_path(text):
            return Wire.of_value(text)
        layer = named.name if named is not None else text
        return Wire(INPUT, self._input(layer, definition).name)

    def _input(self, layer: str, definition: Any) -> InputLayer:
        found = self.inputs.get(layer)
        kind = _input_kind(definition)
        if found is None:
            taken = {item.name for item in self.inputs.values()}
            found = InputLayer(_unique(_identifier(layer), taken), layer, kind, _data_types(definition))
            self.inputs[layer] = found
        elif found.kind != kind or _ints(found.data_types) != _ints(_data_types(definition)):
            found.kind = found.kind if found.kind == kind else "layer"  # used two ways: any layer
            found.data_types = []
        return found


def _input_kind(definition: Any) -> str:
    kind = definition.type()
    if kind in RASTER_KINDS:
        return "raster"
    if kind in VECTOR_KINDS:
        return "vector"
    return "layer"


def _data_types(definition: Any) -> list[Any]:
    """The geometry types a vector parameter accepts, as QGIS gives them (ints on 3.22, enum members later)."""
    if definition.type() not in VECTOR_KINDS or not hasattr(definition, "dataTypes"):
        return []
    return list(definition.dataTypes())


def _ints(types: list[Any]) -> list[int]:
    return sorted(enum_value(t) for t in types)


def _identifier(name: str) -> str:
    """A layer name as a parameter name and script variable: ASCII letters, digits and ``_``, not a digit first.

    Accents are dropped (``Höhe`` -> ``hohe``), anything else becomes ``_``: whatever the
    layer is called, the name is a valid Python identifier in the script, in upper case too.
    """
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^0-9A-Za-z]+", "_", plain).strip("_").lower() or "layer"
    return f"layer_{text}" if text[0].isdigit() else text


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}_{number}", number + 1
    return candidate


def _is_path(text: str) -> bool:
    """A file given instead of a project layer (``params`` took such a value as the file itself)."""
    return "/" in text or "\\" in text or Path(text.split("|", 1)[0]).is_file()


def _plain(value: Any) -> bool:
    """A default a model file and a script can hold as it is (not a null, not a QGIS object)."""
    if isinstance(value, bool | int | float | str):
        return True
    return isinstance(value, list) and all(isinstance(item, bool | int | float | str) for item in value)
