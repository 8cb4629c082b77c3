"""What a tool call used and made, typed: read by the dock, the Sources list, the run log and the evals.

A tool answers with one ``ToolResult``: the short ``text`` the model reads,
and a ``ToolArtifact`` naming what the call read and made, as structured
values: the project layers it read and added (``LayerRef``: name and layer
id), the tables (``TableRef``: connection, schema, table) and OGC API
collections (``CollectionRef``: server, collection id, landing page) it
queried, the algorithm it ran (``AlgorithmRun``: id and parameters), the
features it selected, the chart it drew, the files it wrote and the figures it
measured (value, unit, method: ``core.figures``).  Everything downstream reads
the artifact; nothing parses the text, so the text can be worded for the model
alone.

``ToolResult`` is a frozen dataclass, not a ``str``: text operations on it
(``+``, ``.strip()``, an f-string returned as a result) are type errors mypy
reports, instead of a plain string that silently lost the artifact.

Artifacts travel as ``ToolMessage.artifact`` (LangChain's
``content_and_artifact``), stored with the conversation as a plain JSON dict
(``to_dict``/``from_dict``: a stored conversation never depends on these class
names; one stored before artifacts existed reads as empty, and one stored when
tables and algorithms were display strings and layers bare names reads into
the structured fields).  Qt-free.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from geogpt_qgis.core.figures import Figure
from geogpt_qgis.core.text import short


@dataclass(frozen=True)
class LayerRef:
    """A project layer a call read or added, by name and layer id (``""``: stored before ids were kept)."""

    name: str
    layer_id: str = ""

    @classmethod
    def of(cls, layer: Any) -> LayerRef:
        """The reference of a ``QgsMapLayer`` (duck-typed: this module imports nothing of QGIS)."""
        return cls(str(layer.name()), str(layer.id()))

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "layer_id": self.layer_id}

    @classmethod
    def from_dict(cls, data: Any) -> LayerRef | None:
        """The reference ``to_dict`` wrote, a bare name (stored before ids), or ``None`` for anything else."""
        if isinstance(data, LayerRef):
            return data
        if isinstance(data, str):
            return cls(data) if data else None
        if isinstance(data, Mapping) and isinstance(data.get("name"), str):
            return cls(data["name"], str(data.get("layer_id") or ""))
        return None


# A layer (or attribute table) a call added to the project: the same reference.
AddedLayer = LayerRef


@dataclass(frozen=True)
class TableRef:
    """A database table a call read: the saved connection's name, the schema (``""``: not named) and the table."""

    connection: str
    schema: str
    table: str

    @property
    def label(self) -> str:
        """``schema.table (connection)``, as Sources lists it."""
        name = f"{self.schema}.{self.table}" if self.schema else self.table
        return with_place(name, self.connection)

    @classmethod
    def named(cls, name: str, connection: str) -> TableRef:
        """``schema.table`` or ``table`` (as SQL names it) on ``connection``."""
        schema, dot, table = name.partition(".")
        return cls(connection, schema, table) if dot else cls(connection, "", name)

    @classmethod
    def from_label(cls, label: str) -> TableRef:
        """A ``schema.table (connection)`` label (stored before tables were structured)."""
        match = re.fullmatch(r"(.*) \(([^()]*)\)", label)
        return cls.named(match.group(1), match.group(2)) if match else cls.named(label, "")

    def to_dict(self) -> dict[str, str]:
        return {"connection": self.connection, "schema": self.schema, "table": self.table}

    @classmethod
    def from_dict(cls, data: Any) -> TableRef | None:
        if isinstance(data, TableRef):
            return data
        if isinstance(data, str):
            return cls.from_label(data) if data else None
        if isinstance(data, Mapping) and isinstance(data.get("table"), str) and data["table"]:
            return cls(str(data.get("connection") or ""), str(data.get("schema") or ""), data["table"])
        return None


@dataclass(frozen=True)
class CollectionRef:
    """An OGC API Features collection a call read: the server as the user named it, its landing page (``""``:
    stored before collections were structured) and the collection's id."""

    server: str
    collection: str
    url: str = ""

    @property
    def label(self) -> str:
        """``hospitals (Town server)``, as Sources lists it."""
        return with_place(self.collection, self.server)

    @classmethod
    def from_label(cls, label: str) -> CollectionRef:
        """A ``collection (server)`` label (stored before collections were structured)."""
        match = re.fullmatch(r"(.*) \(([^()]*)\)", label)
        return cls(match.group(2), match.group(1)) if match else cls("", label)

    def to_dict(self) -> dict[str, str]:
        return {"server": self.server, "collection": self.collection, "url": self.url}

    @classmethod
    def from_dict(cls, data: Any) -> CollectionRef | None:
        if isinstance(data, CollectionRef):
            return data
        if isinstance(data, str):
            return cls.from_label(data) if data else None
        if isinstance(data, Mapping) and isinstance(data.get("collection"), str) and data["collection"]:
            return cls(str(data.get("server") or ""), data["collection"], str(data.get("url") or ""))
        return None


@dataclass(frozen=True)
class AlgorithmRun:
    """A processing algorithm a call ran: its ``id`` and the ``parameters`` the model set (outputs left out).

    Parameters are JSON values (what the model sent), read-only.  A run stored
    when algorithms were display strings keeps its values as the text shown then.
    """

    id: str
    parameters: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        kept = {
            str(key): value
            for key, value in self.parameters.items()
            if not str(key).upper().startswith("OUTPUT") and value != "TEMPORARY_OUTPUT"
        }
        object.__setattr__(self, "parameters", MappingProxyType(kept))

    @property
    def label(self) -> str:
        """``native:buffer (INPUT=rivers, DISTANCE=500)``, as Sources lists it."""
        return algorithm_label(self.id, self.parameters)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "parameters": json.loads(json.dumps(dict(self.parameters), default=str))}

    @classmethod
    def from_dict(cls, data: Any) -> AlgorithmRun | None:
        if isinstance(data, AlgorithmRun):
            return data
        if isinstance(data, str):
            return cls.from_label(data) if data else None
        if isinstance(data, Mapping) and isinstance(data.get("id"), str) and data["id"]:
            parameters = data.get("parameters")
            return cls(data["id"], dict(parameters) if isinstance(parameters, Mapping) else {})
        return None

    @classmethod
    def from_label(cls, label: str) -> AlgorithmRun:
        """``native:buffer (INPUT=rivers, DISTANCE=500)`` (stored before runs were structured): values as shown."""
        match = re.fullmatch(r"(\S+) \((.*)\)", label, flags=re.DOTALL)
        if not match:
            return cls(label.strip())
        pairs = re.split(r", (?=[A-Za-z_][A-Za-z0-9_]*=)", match.group(2))
        parameters = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        return cls(match.group(1), parameters)


@dataclass(frozen=True)
class Selection:
    """A layer's selection as a call left it."""

    layer: str
    count: int


@dataclass(frozen=True)
class ToolArtifact:
    """What one call read and made."""

    layers: tuple[LayerRef, ...] = ()  # project layers read
    tables: tuple[TableRef, ...] = ()
    collections: tuple[CollectionRef, ...] = ()
    algorithm: AlgorithmRun | None = None
    added: tuple[LayerRef, ...] = ()
    selected: tuple[Selection, ...] = ()
    chart: str = ""  # the PNG a chart was saved as
    files: tuple[str, ...] = ()  # files a call wrote for the user (an exported map), absolute paths
    figures: tuple[Figure, ...] = ()  # measures it reported, with unit and method

    def __post_init__(self) -> None:
        # Untyped callers (tests, scripts) may still write the older display strings: read as a stored one is.
        if any(isinstance(x, str) for x in (*self.layers, *self.added)):
            object.__setattr__(self, "layers", _parsed(self.layers, LayerRef.from_dict))
            object.__setattr__(self, "added", _parsed(self.added, LayerRef.from_dict))
        if any(isinstance(x, str) for x in self.tables):
            object.__setattr__(self, "tables", _parsed(self.tables, TableRef.from_dict))
        if any(isinstance(x, str) for x in self.collections):
            object.__setattr__(self, "collections", _parsed(self.collections, CollectionRef.from_dict))
        if isinstance(self.algorithm, str):
            object.__setattr__(self, "algorithm", AlgorithmRun.from_dict(self.algorithm))

    @property
    def empty(self) -> bool:
        return self == EMPTY

    @property
    def layer_names(self) -> tuple[str, ...]:
        return tuple(layer.name for layer in self.layers)

    @property
    def added_names(self) -> list[str]:
        return [layer.name for layer in self.added]

    @property
    def table_labels(self) -> tuple[str, ...]:
        return tuple(table.label for table in self.tables)

    @property
    def collection_labels(self) -> tuple[str, ...]:
        return tuple(collection.label for collection in self.collections)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without the empty parts."""
        data: dict[str, Any] = {
            "layers": [layer.to_dict() for layer in self.layers],
            "tables": [table.to_dict() for table in self.tables],
            "collections": [collection.to_dict() for collection in self.collections],
            "algorithm": self.algorithm.to_dict() if self.algorithm is not None else None,
            "added": [layer.to_dict() for layer in self.added],
            "selected": [{"layer": s.layer, "count": s.count} for s in self.selected],
            "chart": self.chart,
            "files": list(self.files),
            "figures": [figure.to_dict() for figure in self.figures],
        }
        return {key: value for key, value in data.items() if value}

    @classmethod
    def from_dict(cls, data: Any) -> ToolArtifact:
        """The artifact ``to_dict`` wrote, now or before its fields were structured; anything else reads as empty."""
        if isinstance(data, ToolArtifact):
            return data
        if not isinstance(data, Mapping):
            return EMPTY
        return cls(
            layers=_parsed(data.get("layers"), LayerRef.from_dict),
            tables=_parsed(data.get("tables"), TableRef.from_dict),
            collections=_parsed(data.get("collections"), CollectionRef.from_dict),
            algorithm=AlgorithmRun.from_dict(data.get("algorithm")),
            added=_parsed(_mappings(data.get("added")), LayerRef.from_dict),
            selected=tuple(
                Selection(str(item.get("layer") or ""), _count(item.get("count")))
                for item in _mappings(data.get("selected"))
            ),
            chart=str(data.get("chart") or ""),
            files=_texts(data.get("files")),
            figures=_parsed(_mappings(data.get("figures")), Figure.from_dict),
        )


EMPTY = ToolArtifact()


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer: the ``text`` the model reads, and the call's typed ``artifact``.

    Not a ``str``: whoever wants the text asks for ``.text``; whoever rewords
    it makes a new ``ToolResult`` with the artifact (``with_text``), so the
    artifact cannot be dropped by accident.
    """

    text: str
    artifact: ToolArtifact = EMPTY

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"ToolResult.text must be str, not {type(self.text).__name__}")

    def with_text(self, text: str) -> ToolResult:
        """The same artifact with other text (a note added to what a step said)."""
        return ToolResult(text, self.artifact)


def content_and_artifact(value: ToolResult | str) -> tuple[str, ToolArtifact]:
    """A tool's return value as LangChain's ``(content, artifact)`` (plain text, a test's stand-in: nothing used)."""
    if isinstance(value, ToolResult):
        return value.text, value.artifact
    if isinstance(value, str):
        return value, EMPTY
    raise TypeError(f"a tool returned {type(value).__name__}, not a ToolResult")


def merged(artifacts: Iterable[ToolArtifact]) -> ToolArtifact:
    """Several artifacts as one (a tool made of steps), each list in first-use order."""
    parts = list(artifacts)
    return ToolArtifact(
        layers=_unique(x for a in parts for x in a.layers),
        tables=_unique(x for a in parts for x in a.tables),
        collections=_unique(x for a in parts for x in a.collections),
        algorithm=next((a.algorithm for a in parts if a.algorithm is not None), None),
        added=_unique(x for a in parts for x in a.added),
        selected=_unique(x for a in parts for x in a.selected),
        chart=next((a.chart for a in parts if a.chart), ""),
        files=_unique(x for a in parts for x in a.files),
        figures=_unique(x for a in parts for x in a.figures),
    )


def with_place(name: str, place: str) -> str:
    """``name (place)``: a table with its connection, a collection with its server (just ``name`` without one)."""
    return f"{name} ({place})" if place.strip() else name


def algorithm_label(algorithm: str, parameters: Mapping[str, Any]) -> str:
    """``native:buffer (INPUT=rivers, DISTANCE=500)``: the id and the parameters the model set (outputs left out)."""
    shown = []
    for key, value in parameters.items():
        if key.upper().startswith("OUTPUT") or value == "TEMPORARY_OUTPUT":
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        shown.append(f"{key}={short(text, 40)}")
    return f"{algorithm} ({', '.join(shown)})" if shown else algorithm


def _parsed(value: Any, parse: Any) -> tuple[Any, ...]:
    items = value if isinstance(value, list | tuple) else ()
    return tuple(made for item in items if (made := parse(item)) is not None)


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()


def _mappings(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list | tuple) else []


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _unique(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(item for item in items if item))
