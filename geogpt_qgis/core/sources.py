"""What an answer rests on, from the artifacts of its turn's tool calls.  Qt-free.

Every final answer gets a "Sources" list built from the calls that actually
ran and succeeded, never from the model's word: the layers read, the tables
and collections queried, the algorithms run with the parameters that
mattered, the layers the turn made, its charts and the files it wrote.  Each call names these
itself in its ``ToolArtifact`` (``core.artifacts``); this module only gathers
them.  The dock shows the list under the answer; a stored conversation gets
it back (``with_extras``), and so does its Markdown export.

Layers are ``LayerRef`` (name and layer id): two layers of the same name stay
two entries, and a click on one selects that one (by id; by name only for a
layer stored before ids were kept).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact

LAYER_LISTS = ("layers", "results")


@dataclass
class Sources:
    """What one answer rests on, each list in first-use order."""

    layers: list[LayerRef] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)  # "public.roads (demo)"
    collections: list[str] = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)  # "native:buffer (INPUT=rivers, DISTANCE=500)"
    results: list[LayerRef] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # files the turn wrote for the user (an exported map)

    def __post_init__(self) -> None:
        # Untyped callers may still give bare layer names: references without an id, as a stored list reads.
        for key in LAYER_LISTS:
            items: list[Any] = getattr(self, key)
            if any(isinstance(item, str) for item in items):
                setattr(self, key, [ref for item in items if (ref := LayerRef.from_dict(item)) is not None])

    @property
    def empty(self) -> bool:
        return not any(
            (self.layers, self.tables, self.collections, self.algorithms, self.results, self.charts, self.files)
        )

    @property
    def layer_names(self) -> list[str]:
        return [layer.name for layer in self.layers]

    @property
    def result_names(self) -> list[str]:
        return [layer.name for layer in self.results]

    def to_dict(self) -> dict[str, list[Any]]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sources:
        """What ``to_dict`` wrote; layers stored as bare names (before ids were kept) read without an id."""
        lists: dict[str, list[Any]] = {key: list(data.get(key) or []) for key in cls().to_dict()}
        for key in LAYER_LISTS:
            lists[key] = [ref for item in lists[key] if (ref := LayerRef.from_dict(item)) is not None]
        for key in set(lists) - set(LAYER_LISTS):
            lists[key] = [item for item in lists[key] if isinstance(item, str)]
        return cls(**lists)

    def sections(self) -> list[tuple[str, list[str]]]:
        """``(heading, items)`` of the lists that are not empty, in display order (layers by name)."""
        named = [
            ("Layers", self.layer_names),
            ("Tables", self.tables),
            ("Collections", self.collections),
            ("Algorithms", self.algorithms),
            ("Results", self.result_names),
            ("Charts", self.charts),
            ("Files", self.files),
        ]
        return [(heading, items) for heading, items in named if items]

    def to_markdown(self) -> str:
        lines = ["**Sources**", ""]
        lines += [f"- {heading}: " + "; ".join(f"`{item}`" for item in items) for heading, items in self.sections()]
        return "\n".join(lines)


def collect_sources(artifacts: Iterable[ToolArtifact]) -> Sources:
    """The sources of a turn: the artifacts of its calls that succeeded, in order.

    Layers the turn itself made are listed as results, not as sources, even
    when a later step reads them (the same id; the same name for a reference
    without an id).
    """
    sources = Sources()
    read: list[LayerRef] = []
    for artifact in artifacts:
        read += artifact.layers
        sources.tables += artifact.table_labels
        sources.collections += artifact.collection_labels
        if artifact.algorithm is not None:
            sources.algorithms.append(artifact.algorithm.label)
        sources.results += artifact.added
        sources.charts.append(artifact.chart)
        sources.files += artifact.files
    sources.layers = [layer for layer in read if not _made(layer, sources.results)]
    for key in ("tables", "collections", "algorithms", "charts", "files"):
        setattr(sources, key, list(dict.fromkeys(item for item in getattr(sources, key) if item)))
    for key in LAYER_LISTS:
        setattr(sources, key, _distinct_layers(getattr(sources, key)))
    return sources


def _made(layer: LayerRef, made: list[LayerRef]) -> bool:
    """Whether ``layer`` is one of the layers the turn made: the same id, or the same name where either has none."""
    return any(
        layer.layer_id == other.layer_id if layer.layer_id and other.layer_id else layer.name == other.name
        for other in made
    )


def _distinct_layers(layers: Iterable[LayerRef]) -> list[LayerRef]:
    """Each layer once, first use first: by id, and a reference without an id dropped when its name has one."""
    kept = list(dict.fromkeys(layer for layer in layers if layer.name))
    with_id = {layer.name for layer in kept if layer.layer_id}
    return [layer for layer in kept if layer.layer_id or layer.name not in with_id]


def with_extras(entries: Sequence[Any]) -> list[Any]:
    """A stored transcript with what the dock shows beside it: charts after their steps, sources after answers.

    ``entries`` are ``agent.transcript.Entry`` objects (with their call's
    ``artifact``); new ones are made with the same class (so this module
    imports nothing of the agent).  A turn (from one user message to the
    next) gets its sources after its last entry, if it has an answer and
    anything to list.
    """
    if not entries:
        return []
    make = type(entries[0])
    out: list[Any] = []
    turn: list[Any] = []

    def close_turn() -> None:
        if any(e.kind == "answer" for e in turn):
            sources = collect_sources(e.artifact for e in turn if e.kind == "tool" and e.ok)
            if not sources.empty:
                out.append(make("sources", sources.to_markdown(), args=sources.to_dict()))
        turn.clear()

    for entry in entries:
        if entry.kind == "user":
            close_turn()
        out.append(entry)
        turn.append(entry)
        if entry.kind == "tool" and entry.ok and entry.artifact.chart:
            out.append(make("chart", entry.artifact.chart))
    close_turn()
    return out
