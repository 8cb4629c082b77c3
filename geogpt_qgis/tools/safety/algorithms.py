"""Decide what a processing algorithm call would do, from the algorithm's own definitions at run time.

An algorithm runs without the user's approval only when it is known to be
free of side effects: it comes from QGIS's own providers, its outputs are new
layers or files in a temporary folder, it changes no existing layer, and
nothing it is given reaches a database, a URL, the file system, SQL, Python
or a command line.  Everything is read from the algorithm's parameter and
output definitions and flags when the call is made, so algorithms that a QGIS
update or another plugin adds are judged too; where the definitions cannot
tell (a downloader's URL is a plain string parameter), the short reviewed
list ``KNOWN_EFFECTS`` says what the algorithm does.  Anything unknown asks.

Classification reads the project (layer names for the description) and so
runs on the main thread; it never runs the algorithm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qgis.core import QgsMapLayer, QgsProcessingAlgorithm, QgsProcessingUtils, QgsProject

from geogpt_qgis.core.effects import CallEffects, Effect, Found
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.compat import FLAG_HIDDEN, FLAG_NO_THREADING, has_flag
from geogpt_qgis.tools.safety.expressions import check_expression

if TYPE_CHECKING:
    from collections.abc import Callable

    # Whether the user may be taken to have chosen this file: in the project's folder, or named by them.
    FileTrust = Callable[[Path], bool]

# Providers whose algorithms are part of QGIS and were reviewed with this module.  Any other
# provider (GRASS, SAGA, other plugins, the user's scripts and models) runs code whose effects
# cannot be read from its definitions: it asks.
TRUSTED_PROVIDERS = frozenset({"native", "qgis", "gdal", "3d"})


@dataclass(frozen=True)
class Known:
    """What a reviewed algorithm does that its parameter types do not show; ``shows`` names the target."""

    effect: Effect
    what: str
    shows: tuple[str, ...] = ()


_SQL = ("DATABASE", "SQL")
# The reviewed exceptions, all in one place (QGIS 3.22; checked by tests/qgis/test_processing_attacks.py).
KNOWN_EFFECTS: dict[str, Known] = {
    "native:filedownloader": Known(Effect.NETWORK, "downloads a URL (or sends DATA to it)", ("URL", "METHOD", "DATA")),
    "native:batchnominatimgeocoder": Known(Effect.NETWORK, "sends addresses to the Nominatim service", ("FIELD",)),
    "native:downloadgpsdata": Known(Effect.RUN_CODE, "runs GPSBabel to read a GPS device", ("DEVICE", "PORT")),
    "native:uploadgpsdata": Known(Effect.RUN_CODE, "runs GPSBabel to write to a GPS device", ("DEVICE", "PORT")),
    "native:convertgpsdata": Known(Effect.RUN_CODE, "runs GPSBabel on a file", ("INPUT", "FORMAT")),
    "native:convertgpxfeaturetype": Known(Effect.RUN_CODE, "runs GPSBabel on a file", ("INPUT",)),
    "native:setprojectvariable": Known(Effect.CHANGE_PROJECT, "sets a project variable", ("NAME", "VALUE")),
    "native:renamelayer": Known(Effect.CHANGE_PROJECT, "renames a layer of the project", ("INPUT", "NAME")),
    "native:loadlayer": Known(Effect.CHANGE_PROJECT, "loads a layer into the project", ("INPUT", "NAME")),
    "native:layertobookmarks": Known(Effect.CHANGE_PROJECT, "adds bookmarks to the project or the user's profile"),
    "native:transferannotationsfrommain": Known(Effect.CHANGE_PROJECT, "moves the project's annotations"),
    "native:createdirectory": Known(Effect.WRITE_FILE, "creates a folder", ("PATH",)),
    "native:postgisexecutesql": Known(Effect.WRITE_DATABASE, "runs SQL in PostgreSQL", _SQL),
    "qgis:postgisexecuteandloadsql": Known(Effect.WRITE_DATABASE, "runs SQL in PostgreSQL", _SQL),
    "native:spatialiteexecutesql": Known(Effect.WRITE_DATABASE, "runs SQL in SpatiaLite", _SQL),
    "native:spatialiteexecutesqlregistered": Known(Effect.WRITE_DATABASE, "runs SQL in SpatiaLite", _SQL),
    "gdal:executesql": Known(Effect.WRITE_DATABASE, "runs SQL on the input's data source", ("INPUT", "SQL")),
    "qgis:executesql": Known(Effect.WRITE_DATABASE, "runs SQL over the input layers", ("INPUT_QUERY",)),
    "qgis:importintospatialite": Known(Effect.WRITE_DATABASE, "imports into SpatiaLite", ("DATABASE", "TABLENAME")),
    "gdal:importvectorintopostgisdatabasenewconnection": Known(
        Effect.WRITE_DATABASE, "imports into PostgreSQL", ("HOST", "PORT", "DBNAME", "SCHEMA", "TABLE")
    ),
    "qgis:advancedpythonfieldcalculator": Known(Effect.RUN_CODE, "runs Python for each feature", ("GLOBAL", "FORMULA")),
}
# Change nothing but which features are selected, like the select_features tool (QGIS runs
# them on the main thread and returns the input layer, which would otherwise look like an edit).
SELECTION_ONLY = frozenset(
    {
        "qgis:selectbyattribute",
        "qgis:selectbyexpression",
        "native:selectbylocation",
        "native:selectwithindistance",
        "qgis:randomselection",
        "qgis:randomselectionwithinsubsets",
    }
)
# Have no destination yet only read (their outputs are numbers and strings).
READ_ONLY = frozenset({"native:rasterlayerproperties"})

# Parameter types (QgsProcessingParameterDefinition.type()) and what their values can reach.
LAYER_TYPES = frozenset(
    {"source", "vector", "raster", "layer", "mesh", "pointcloud", "multilayer", "tininputlayers",
     "idw_interpolation_data", "dxflayers", "vectortilewriterlayers"}
)  # fmt: skip
PURE_TYPES = frozenset(
    {"number", "distance", "duration", "scale", "boolean", "enum", "field", "band", "crs", "extent", "point",
     "range", "color", "matrix", "datetime", "meshdatasetgroups", "meshdatasettime", "layout", "layoutitem",
     "maptheme", "raster_calc_expression", "relief_colors", "coordinateoperation", "geometry"}
)  # fmt: skip
EXPRESSION_TYPES = frozenset({"expression", "aggregates", "fields_mapping"})
DATABASE_TYPES = frozenset({"providerconnection", "databaseschema", "databasetable"})
# Single layers an algorithm hands back (the layers a package or a split writes are "outputMultilayer").
LAYER_OUTPUTS = frozenset({"outputVector", "outputRaster", "outputLayer", "outputPointCloud"})
TEMPORARY_WORDS = frozenset({"temporary_output", "temporary", "memory", "memory:", "temp", ""})
_DATABASE_DESTINATION = re.compile(r"^\s*(postgres|postgis|mssql|oracle|hana|spatialite|pg)\s*:|dbname\s*=", re.I)
# A GDAL string value is pasted into the tool's command line: only plain tokens run unasked
# (no spaces, quotes, options or paths), so OPTIONS/EXTRA cannot add arguments.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|/vsi[a-z0-9_]+/", re.ASCII)  # anywhere in a value
_PATH_SYNTAX = re.compile(r"[\\/]|^~|\.\.")  # a separator, a home folder or a parent folder: a place on disk
_PLAIN_TOKEN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.,:=+]*$")


def classify_algorithm(
    algorithm: QgsProcessingAlgorithm,
    parameters: dict[str, Any] | None,
    project: QgsProject | None = None,
    trusted_file: FileTrust | None = None,
) -> CallEffects:
    """Every effect running ``algorithm`` with the model's ``parameters`` would have (main thread).

    A layer given as a file path reads that file: outside the project's folder,
    unless ``trusted_file`` says the user named it, that asks (as ``load_data``
    does for the same file).  Without ``trusted_file`` every such file asks.
    """
    parameters = parameters or {}
    given = {str(key).lower(): value for key, value in parameters.items()}
    algorithm_id = algorithm.id()
    provider = algorithm.provider()
    provider_id = provider.id() if provider is not None else ""
    found: list[Found] = []
    if provider_id not in TRUSTED_PROVIDERS:
        name = provider.name() if provider is not None else "no provider"
        found.append(
            Found(
                Effect.RUN_CODE,
                f"{algorithm_id} from {name!r}",
                "not built into QGIS: another plugin, a script or a model, whose effects cannot be read",
            )
        )
    known = KNOWN_EFFECTS.get(algorithm_id)
    if known is not None:
        shown = [f"{key}={_short(given.get(key.lower()))}" for key in known.shows if given.get(key.lower())]
        found.append(Found(known.effect, "; ".join(shown), known.what))
    definitions = algorithm.parameterDefinitions()
    for definition in definitions:
        found += _parameter_effects(provider_id, definition, given, project, trusted_file)
    if known is None:
        found += _in_place_effects(algorithm, definitions, given, project, found)
    if not any(item.effect.needs_approval for item in found):
        found += _flag_effects(algorithm)  # the last word: flags that say it touches the project
    return CallEffects.of(found)


def is_temporary_destination(value: str) -> bool:
    """A destination in a temporary folder (or memory) that the user does not keep unless they save it."""
    text = value.strip()
    if text.lower() in TEMPORARY_WORDS or text.lower().startswith("memory:"):
        return True
    from geogpt_qgis.toolbelt.paths import temp_dir

    try:
        target = Path(text).expanduser().resolve()
        folders = [temp_dir().resolve(), Path(QgsProcessingUtils.tempFolder()).resolve()]
    except (OSError, ValueError):
        return False
    return any(target.is_relative_to(folder) for folder in folders)


# -- parts ---------------------------------------------------------------------------------
def _flag_effects(algorithm: QgsProcessingAlgorithm) -> list[Found]:
    why = []
    if has_flag(algorithm, FLAG_HIDDEN):
        why.append("it is hidden from the toolbox (a model-designer helper, or retired)")
    if has_flag(algorithm, FLAG_NO_THREADING) and algorithm.id() not in SELECTION_ONLY:
        why.append("QGIS runs it on the main thread because it touches the project")
    return [Found(Effect.CHANGE_PROJECT, algorithm.id(), "; ".join(why))] if why else []


def _parameter_effects(
    provider_id: str,
    definition: Any,
    given: dict[str, Any],
    project: QgsProject | None,
    trusted_file: FileTrust | None = None,
) -> list[Found]:
    name, kind = definition.name(), definition.type()
    value = given.get(name.lower())
    present = value is not None and value != "" and value != []
    if definition.isDestination():
        return _destination_effects(name, value)
    urls = [text for text in _strings(value) if _URL.search(text)]
    if urls:
        # Whatever the parameter, a URL in its value (or GDAL's /vsicurl/...) is a place the call may reach.
        return [Found(Effect.NETWORK, f"{name}={_short(url)}", "a URL") for url in urls]
    if kind in DATABASE_TYPES:
        return [Found(Effect.WRITE_DATABASE, f"{name}={_short(value) if present else '(default)'}")]
    if kind == "execute_sql":
        return [Found(Effect.WRITE_DATABASE, f"{name}={_short(value)}", "SQL")] if present else []
    if kind == "file":
        if not present:
            return []
        return [Found(Effect.WRITE_FILE, f"{name}={_short(value)}", "a file or folder it may read or change")]
    if kind in EXPRESSION_TYPES:
        return _expression_effects(name, value) if present else []
    if kind in LAYER_TYPES:
        return _layer_effects(value, project, trusted_file) if present else []
    if kind == "string":
        if present and provider_id == "gdal" and not _PLAIN_TOKEN.match(str(value)):
            return [Found(Effect.RUN_CODE, f"{name}={_short(value)}", "text passed to the GDAL command line as it is")]
        if present and _PATH_SYNTAX.search(str(value)):
            # A text that spells a path (vector tiles' XYZ_TEMPLATE, a folder...) is where an algorithm may write.
            return [Found(Effect.WRITE_FILE, f"{name}={_short(value)}", "a path in a text parameter")]
        return []
    if kind in PURE_TYPES:
        return []
    return [Found(Effect.RUN_CODE, f"parameter {name} of type {kind!r}", "a kind of value not reviewed for effects")]


def _destination_effects(name: str, value: Any) -> list[Found]:
    if value is None or (isinstance(value, str) and is_temporary_destination(value)):
        return [Found(Effect.ADD_LAYER, name)]
    if not isinstance(value, str):
        return [Found(Effect.WRITE_FILE, f"{name}={_short(value)}")]
    if _DATABASE_DESTINATION.search(value):
        return [Found(Effect.WRITE_DATABASE, f"{name} -> {value}")]
    exists = Path(value.split("|", 1)[0]).expanduser().exists()
    return [Found(Effect.WRITE_FILE, f"file {value}", "exists: it will be overwritten" if exists else "")]


def _expression_effects(name: str, value: Any) -> list[Found]:
    """Expressions inside a parameter (a formula, a filter, aggregates or a field mapping)."""
    found: list[Found] = []
    for text in _strings(value):
        check = check_expression(text)
        check.require_small(name)
        for item in check.effects.risky:
            found.append(Found(item.effect, f"{name}: {item.target} in {text!r}", item.why))
    return found


def _in_place_effects(
    algorithm: QgsProcessingAlgorithm,
    definitions: list[Any],
    given: dict[str, Any],
    project: QgsProject | None,
    earlier: list[Found],
) -> list[Found]:
    """Layers an algorithm hands back without having made them: it changed them where they are."""
    if algorithm.id() in SELECTION_ONLY:
        return [Found(Effect.SELECT, _layer_label(given.get("input"), project))] if given.get("input") else []
    destinations = {d.name() for d in definitions if d.isDestination()}
    inputs = {d.name(): d for d in definitions if d.type() in LAYER_TYPES}
    changed = [
        output.name()
        for output in algorithm.outputDefinitions()
        if output.type() in LAYER_OUTPUTS and output.name() not in destinations
    ]
    found: list[Found] = []
    if changed:
        names = [n for n in changed if n in inputs] or list(inputs)
        targets = [_layer_label(given.get(n.lower()), project) for n in names if given.get(n.lower())]
        found.append(
            Found(Effect.EDIT_DATA, ", ".join(targets) or algorithm.id(), "it hands back an input layer it changed")
        )
    elif not destinations and algorithm.id() not in READ_ONLY and not any(f.effect.needs_approval for f in earlier):
        found.append(
            Found(Effect.EDIT_DATA, algorithm.id(), "it makes no new layer or file, so it acts on existing data")
        )
    return found


def _layer_effects(value: Any, project: QgsProject | None, trusted_file: FileTrust | None) -> list[Found]:
    """Reading each layer a parameter names; a file outside the project that the user did not name asks."""
    found = []
    for text in _strings(value) or [str(v) for v in _items(value)]:
        layer = None
        if project is not None:
            layer = project.mapLayer(text) or next(iter(project.mapLayersByName(text)), None)
        file = _file_of(text, project) if layer is None else None
        if file is not None and not (trusted_file is not None and trusted_file(file)):
            why = "outside the project's folder, and the user did not name it"
            found.append(Found(Effect.READ_PRIVATE, f"file {file}", why))
        else:
            found.append(Found(Effect.READ, _layer_label(text, project)))
        if layer is None and file is None:
            # Text beside the layers (a vector-tile layer's filterExpression...) may be evaluated: checked as one.
            found += _expression_effects("a layer's expression", text)
    return found


def _file_of(text: str, project: QgsProject | None) -> Path | None:
    """The file a layer value names (``path|layername=...`` too), or ``None`` for a layer name or id."""
    spelt = text.split("|", 1)[0].strip()
    if not spelt or _URL.search(spelt):
        return None
    path = Path(spelt).expanduser()
    if not path.is_absolute():
        home = project.homePath() if project is not None else ""
        path = Path(home) / path if home else path
    if _PATH_SYNTAX.search(spelt) or path.exists():
        return path
    return None


def _layer_label(value: Any, project: QgsProject | None) -> str:
    text = str(value)
    layer: QgsMapLayer | None = None
    if project is not None and isinstance(value, str):
        layer = project.mapLayer(value) or next(iter(project.mapLayersByName(value)), None)
    if layer is None:
        return f"{_short(text)}"
    source = layer.publicSource().split("|", 1)[0] if layer.providerType() != "memory" else "memory"
    return f"layer {layer.name()!r} ({layer.providerType()}: {_short(source)})"


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _strings(value: Any) -> list[str]:
    """Every string inside a parameter value (lists and dicts of them too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    return []


def _short(value: Any, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def require_approval(
    algorithm: QgsProcessingAlgorithm,
    parameters: dict[str, Any] | None,
    project: QgsProject | None,
    approved: bool,
    trusted_file: FileTrust | None = None,
) -> CallEffects:
    """The call's effects; ``ToolError`` naming them if they need approval and the user gave none."""
    effects = classify_algorithm(algorithm, parameters, project, trusted_file)
    if effects.needs_approval and not approved:
        raise ToolError(
            f"{algorithm.id()} {effects.summary()} ({'; '.join(effects.lines())}); it needs the user's approval"
        )
    return effects
