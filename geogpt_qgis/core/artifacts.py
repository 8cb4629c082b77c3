"""What a tool call used and made, typed: read by the dock, the Sources list, the run log and the evals.

A tool answers with two things (``ToolResult``): the short text the model
reads, and a ``ToolArtifact`` naming the layers, tables and collections it
read, the algorithm it ran, the layers it added, the features it selected and
the chart it drew, and the figures it measured (value, unit, method:
``core.figures``).  Everything downstream reads the artifact; nothing parses
the text, so the text can be worded for the model alone.  Artifacts travel as
``ToolMessage.artifact`` (LangChain's ``content_and_artifact``), stored with
the conversation as a plain JSON dict (``to_dict``/``from_dict``: a stored
conversation never depends on these class names, and one stored before
artifacts existed reads as empty).  Qt-free.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.core.figures import Figure
from geogpt_qgis.core.text import short


@dataclass(frozen=True)
class AddedLayer:
    """A layer (or attribute table) a call added to the project."""

    name: str
    layer_id: str = ""


@dataclass(frozen=True)
class Selection:
    """A layer's selection as a call left it."""

    layer: str
    count: int


@dataclass(frozen=True)
class ToolArtifact:
    """What one call read and made.  Tables are ``schema.table (connection)``, collections ``name (server)``."""

    layers: tuple[str, ...] = ()  # project layers read, by name
    tables: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    algorithm: str = ""  # "native:buffer (INPUT=rivers, DISTANCE=500)"
    added: tuple[AddedLayer, ...] = ()
    selected: tuple[Selection, ...] = ()
    chart: str = ""  # the PNG a chart was saved as
    files: tuple[str, ...] = ()  # files a call wrote for the user (an exported map), absolute paths
    figures: tuple[Figure, ...] = ()  # measures it reported, with unit and method

    @property
    def empty(self) -> bool:
        return self == EMPTY

    @property
    def added_names(self) -> list[str]:
        return [layer.name for layer in self.added]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without the empty parts."""
        data: dict[str, Any] = {
            "layers": list(self.layers),
            "tables": list(self.tables),
            "collections": list(self.collections),
            "algorithm": self.algorithm,
            "added": [{"name": a.name, "layer_id": a.layer_id} for a in self.added],
            "selected": [{"layer": s.layer, "count": s.count} for s in self.selected],
            "chart": self.chart,
            "files": list(self.files),
            "figures": [figure.to_dict() for figure in self.figures],
        }
        return {key: value for key, value in data.items() if value}

    @classmethod
    def from_dict(cls, data: Any) -> ToolArtifact:
        """The artifact ``to_dict`` wrote; anything else (``None``: stored before artifacts) reads as empty."""
        if isinstance(data, ToolArtifact):
            return data
        if not isinstance(data, Mapping):
            return EMPTY
        return cls(
            layers=_texts(data.get("layers")),
            tables=_texts(data.get("tables")),
            collections=_texts(data.get("collections")),
            algorithm=str(data.get("algorithm") or ""),
            added=tuple(
                AddedLayer(str(item.get("name") or ""), str(item.get("layer_id") or ""))
                for item in _mappings(data.get("added"))
            ),
            selected=tuple(
                Selection(str(item.get("layer") or ""), _count(item.get("count")))
                for item in _mappings(data.get("selected"))
            ),
            chart=str(data.get("chart") or ""),
            files=_texts(data.get("files")),
            figures=tuple(
                figure for item in _mappings(data.get("figures")) if (figure := Figure.from_dict(item)) is not None
            ),
        )


EMPTY = ToolArtifact()


class ToolResult(str):
    """A tool's answer: the text the model reads, carrying the call's ``artifact``.

    A ``str`` so that a tool returns it where it returned text: the toolkit
    takes the artifact off (``content_and_artifact``), and whoever calls a tool
    method directly (the tests, a script) reads the same text as before.  It is
    the last thing a tool makes: text operations on it return plain ``str``.
    """

    artifact: ToolArtifact

    def __new__(cls, text: str, artifact: ToolArtifact = EMPTY) -> ToolResult:
        made = super().__new__(cls, text)
        made.artifact = artifact
        return made

    @property
    def text(self) -> str:
        return str(self)


def content_and_artifact(value: Any) -> tuple[str, ToolArtifact]:
    """A tool's return value as LangChain's ``(content, artifact)`` (plain text: a call that made and used nothing)."""
    artifact = value.artifact if isinstance(value, ToolResult) else EMPTY
    return str(value), artifact


def merged(artifacts: Iterable[ToolArtifact]) -> ToolArtifact:
    """Several artifacts as one (a tool made of steps), each list in first-use order."""
    parts = list(artifacts)
    return ToolArtifact(
        layers=_unique(x for a in parts for x in a.layers),
        tables=_unique(x for a in parts for x in a.tables),
        collections=_unique(x for a in parts for x in a.collections),
        algorithm=next((a.algorithm for a in parts if a.algorithm), ""),
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


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()


def _mappings(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list | tuple) else []


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _unique(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(item for item in items if item))
