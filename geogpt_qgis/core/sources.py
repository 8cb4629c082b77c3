"""What an answer rests on, from the artifacts of its turn's tool calls.  Qt-free.

Every final answer gets a "Sources" list built from the calls that actually
ran and succeeded, never from the model's word: the layers read, the tables
and collections queried, the algorithms run with the parameters that
mattered, the layers the turn made, its charts and the files it wrote.  Each call names these
itself in its ``ToolArtifact`` (``core.artifacts``); this module only gathers
them.  The dock shows the list under the answer; a stored conversation gets
it back (``with_extras``), and so does its Markdown export.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from geogpt_qgis.core.artifacts import ToolArtifact


@dataclass
class Sources:
    """What one answer rests on, each list in first-use order."""

    layers: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)  # "native:buffer (INPUT=rivers, DISTANCE=500)"
    results: list[str] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # files the turn wrote for the user (an exported map)

    @property
    def empty(self) -> bool:
        return not any(
            (self.layers, self.tables, self.collections, self.algorithms, self.results, self.charts, self.files)
        )

    def to_dict(self) -> dict[str, list[str]]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sources:
        return cls(**{key: list(data.get(key) or []) for key in cls().to_dict()})

    def sections(self) -> list[tuple[str, list[str]]]:
        """``(heading, items)`` of the lists that are not empty, in display order."""
        named = [
            ("Layers", self.layers),
            ("Tables", self.tables),
            ("Collections", self.collections),
            ("Algorithms", self.algorithms),
            ("Results", self.results),
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
    when a later step reads them.
    """
    sources = Sources()
    read: list[str] = []
    for artifact in artifacts:
        read += artifact.layers
        sources.tables += artifact.tables
        sources.collections += artifact.collections
        sources.algorithms.append(artifact.algorithm)
        sources.results += artifact.added_names
        sources.charts.append(artifact.chart)
        sources.files += artifact.files
    made = set(sources.results)
    sources.layers = [name for name in read if name not in made]
    for key, items in sources.to_dict().items():
        setattr(sources, key, list(dict.fromkeys(item for item in items if item)))
    return sources


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
