"""Describe an algorithm compactly: what each parameter wants, and what comes out.

One line per parameter: name, type (with the geometry an input needs, the unit
of a distance, the range of a number, the choices of an enum with their
indexes), default, and whether it is optional or advanced.  Main thread.
"""

from __future__ import annotations

import re
from typing import Any

from qgis.core import QgsApplication, QgsProcessingAlgorithm, QgsProcessingRegistry, QgsUnitTypes

from geogpt_qgis.core.fuzzy import closest_names
from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.compat import (
    DISTANCE_UNKNOWN,
    NUMBER_INTEGER,
    SOURCE_TYPE_NAMES,
    enum_value,
    parameter_is_advanced,
    parameter_is_optional,
)
from geogpt_qgis.tools.processing.curves import describe_default
from geogpt_qgis.tools.processing.renames import registered_id
from geogpt_qgis.tools.safety.algorithms import classify_algorithm

HELP_CHARS = 400
LAYER_DESTINATIONS = frozenset({"sink", "vectorDestination", "rasterDestination"})

_TYPE_LABELS = {
    "source": "vector layer",
    "vector": "vector layer",
    "raster": "raster layer",
    "layer": "layer",
    "multilayer": "list of layers",
    "mesh": "mesh layer",
    "sink": "vector output",
    "vectorDestination": "vector output",
    "rasterDestination": "raster output",
    "fileDestination": "file output",
    "folderDestination": "folder output",
    "field": "field name",
    "expression": "QGIS expression",
    "crs": "CRS (e.g. EPSG:25832, or a layer name)",
    "extent": "extent (xmin,xmax,ymin,ymax [EPSG:code], or a layer name)",
    "point": "point (x,y [EPSG:code])",
    "boolean": "true/false",
    "string": "text",
    "file": "file path",
    "matrix": "table (list of values)",
    "band": "raster band number",
    "range": "range (min,max)",
    "datetime": "date/time",
}


def _from_its_provider(registry: QgsProcessingRegistry, wanted: str) -> QgsProcessingAlgorithm | None:
    """``provider:name`` looked up in its provider's own table.

    ``algorithmById`` asks every algorithm of the providers listed before the one named for its id, and
    the GRASS and GDAL ones answer in Python (300 calls into Python for ``native:buffer``, 12 ms on the
    main thread here); a provider finds its own in a table.  ``None``: not found that way (an alias).
    """
    provider_id, _, name = wanted.partition(":")
    provider = registry.providerById(provider_id) if name else None
    return provider.algorithm(name) if provider is not None else None


def find_algorithm(algorithm_id: str) -> QgsProcessingAlgorithm:
    """The registered algorithm for an id (or unique display name), else ``ToolError`` with the closest ids."""
    registry = QgsApplication.processingRegistry()
    wanted = (algorithm_id or "").strip()
    algorithm = _from_its_provider(registry, wanted) or registry.algorithmById(wanted)
    if algorithm is not None:
        return algorithm
    renamed = registered_id(wanted, lambda candidate: registry.algorithmById(candidate) is not None)
    if renamed is not None:
        return registry.algorithmById(renamed)
    everything = registry.algorithms()
    by_name = [a for a in everything if a.displayName().casefold() == wanted.casefold()]
    if len(by_name) == 1:
        return by_name[0]
    ids = [a.id() for a in everything]
    close = closest_names(wanted, ids, 3)
    if ":" not in wanted:
        close = list(dict.fromkeys([*closest_names(f"native:{wanted}", ids, 2), *close]))[:3]
    hint = f"; did you mean {' or '.join(close)}?" if close else "; find_algorithm with plain words finds one"
    raise ToolError(f"no algorithm {wanted!r}{hint}")


def known_algorithm(name: str) -> QgsProcessingAlgorithm | None:
    """The algorithm ``name`` names without a doubt (an id, a renamed id, ``buffer`` for native:buffer,
    a title only one algorithm has), else ``None``: then it is words to search for.  Main thread."""
    registry = QgsApplication.processingRegistry()
    wanted = name.strip()
    if not wanted:
        return None
    candidates = [wanted]
    if ":" not in wanted and not any(c.isspace() for c in wanted):
        candidates.append(f"native:{wanted.casefold()}")
    for candidate in candidates:
        found = registered_id(candidate, lambda c: registry.algorithmById(c) is not None)
        if found is not None:
            return registry.algorithmById(found)
    titled = [a for a in registry.algorithms() if a.displayName().casefold() == wanted.casefold()]
    return titled[0] if len(titled) == 1 else None


def renamed_note(requested: str, algorithm: QgsProcessingAlgorithm) -> str:
    """Tells the model which id ran when it asked for a renamed one ("" when it asked for this one)."""
    wanted = (requested or "").strip()
    if ":" not in wanted or wanted == algorithm.id():
        return ""
    return f"{wanted} is called {algorithm.id()} in this QGIS (QGIS renamed it); use {algorithm.id()}."


def parameter_type_label(definition: Any, algorithm: QgsProcessingAlgorithm) -> str:
    """``vector layer (polygon)``, ``distance in the units of INPUT's CRS``, ``enum 0=Round, 1=Flat``."""
    kind: str = definition.type()
    if kind in ("source", "vector", "multilayer") and hasattr(definition, "dataTypes"):
        types = [SOURCE_TYPE_NAMES.get(enum_value(t), str(t)) for t in definition.dataTypes()]
        base = _TYPE_LABELS.get(kind, kind)
        return f"{base} ({', '.join(types)})" if types else base
    if kind == "distance":
        parent = definition.parentParameterName()
        unit = definition.defaultUnit() if hasattr(definition, "defaultUnit") else DISTANCE_UNKNOWN
        unit_name = "" if unit == DISTANCE_UNKNOWN else QgsUnitTypes.toString(unit)
        where = f"in the units of {parent}'s CRS" if parent else "in layer units"
        return f"distance {where}" + (f" (default unit: {unit_name})" if unit_name else "")
    if kind == "number":
        data_type = "integer" if enum_value(definition.dataType()) == NUMBER_INTEGER else "number"
        low, high = definition.minimum(), definition.maximum()
        bounds = []
        if low > -1e300:
            bounds.append(f">= {plain_number(low, grouping=False)}")
        if high < 1e300:
            bounds.append(f"<= {plain_number(high, grouping=False)}")
        return data_type + (f" ({', '.join(bounds)})" if bounds else "")
    if kind == "enum":
        options = ", ".join(f"{i}={o}" for i, o in enumerate(definition.options()))
        many = "one or more of" if definition.allowMultiple() else "one of"
        return f"enum, {many}: {options}"
    if kind == "field":
        parent = definition.parentLayerParameterName()
        many = "names" if definition.allowMultiple() else "name"
        return f"field {many} of {parent}" if parent else f"field {many}"
    if kind == "expression":
        parent = definition.parentLayerParameterName() if hasattr(definition, "parentLayerParameterName") else ""
        return f"QGIS expression over {parent}" if parent else "QGIS expression"
    return _TYPE_LABELS.get(kind, kind)


def _default_label(definition: Any) -> str:
    default = definition.defaultValue()
    if default is None or default == "" or (hasattr(default, "isNull") and default.isNull()):
        return ""
    if definition.type() == "enum" and isinstance(default, int):
        options = definition.options()
        if 0 <= default < len(options):
            return f"; default {default} ({options[default]})"
    return f"; default {default!r}" if isinstance(default, str) else f"; default {default}"


def made_outputs(algorithm: QgsProcessingAlgorithm) -> list[Any]:
    """The outputs a call makes unasked: QGIS's defaults, and optional layers when no default is a layer.

    A report's defaults can be an HTML file alone, while the table that holds the
    answer (native:rasterlayeruniquevaluesreport's OUTPUT_TABLE) is optional: left
    out as the description taught, the call answered with a file path the model
    cannot read.
    """
    outputs = [d for d in algorithm.parameterDefinitions() if d.isDestination()]
    made = [d for d in outputs if not parameter_is_optional(d) or getattr(d, "createByDefault", lambda: False)()]
    if not any(d.type() in LAYER_DESTINATIONS for d in made):
        names = {d.name() for d in made}
        made += [d for d in outputs if d.name() not in names and d.type() in LAYER_DESTINATIONS]
    return made


def describe_algorithm_text(algorithm: QgsProcessingAlgorithm) -> str:
    """The compact description returned to the model."""
    lines = [f"{algorithm.id()} — {algorithm.displayName()} ({algorithm.group() or algorithm.provider().name()})"]
    help_text = " ".join(re.sub(r"<[^>]+>", " ", algorithm.shortHelpString() or algorithm.shortDescription()).split())
    if help_text:
        lines.append(help_text[:HELP_CHARS] + ("…" if len(help_text) > HELP_CHARS else ""))
    lines.append("Parameters:")
    for definition in algorithm.parameterDefinitions():
        if definition.isDestination():
            continue
        notes = []
        if parameter_is_optional(definition):
            notes.append("optional")
        if parameter_is_advanced(definition):
            notes.append("advanced")
        note = f" [{', '.join(notes)}]" if notes else ""
        default = describe_default(algorithm.id(), definition.name(), definition.defaultValue())
        lines.append(
            f"- {definition.name()}: {parameter_type_label(definition, algorithm)}"
            f"{default or _default_label(definition)}{note} — {definition.description()}"
        )
    outputs = [d for d in algorithm.parameterDefinitions() if d.isDestination()]
    made = made_outputs(algorithm)
    if made:
        lines.append(
            "Outputs (added to the project as layers; leave them out): "
            + "; ".join(f"{d.name()} ({_TYPE_LABELS.get(d.type(), d.type())}: {d.description()})" for d in made)
        )
    extra = [d for d in outputs if d.name() not in {m.name() for m in made}]
    if extra:
        lines.append(
            'Optional outputs, made only if you pass NAME="TEMPORARY_OUTPUT" (only when the user asked): '
            + "; ".join(f"{d.name()} ({d.description()})" for d in extra)
        )
    other = [o for o in algorithm.outputDefinitions() if o.name() not in {d.name() for d in outputs}]
    if other:
        lines.append("Also returns: " + ", ".join(f"{o.name()} ({o.description()})" for o in other))
    effects = classify_algorithm(algorithm, {})
    if effects.needs_approval:
        lines.append(f"Needs the user's approval: it {effects.summary()}.")
    return "\n".join(lines)
