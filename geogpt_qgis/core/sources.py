"""What an answer rests on, read from the tool calls of its turn.  Qt-free.

Every final answer gets a "Sources" list built from the calls that actually
ran and succeeded, never from the model's word: the layers read, the tables
and collections queried, the algorithms run with the parameters that
mattered, the layers the turn made, and its charts.  The dock shows it under
the answer; a stored conversation gets it back (``with_extras``), and so does
its Markdown export.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from geogpt_qgis.core.text import short

CHART_PREFIX = "Chart image: "  # first line of a make_chart result
_ADDED = re.compile(r"added (?:layer|table) (['\"])(.+?)\1", re.IGNORECASE)
_PLACE_SOURCE = re.compile(r"\((layer|table) ([^,;()]+?)(?: in ([^,;()]+))?[,;)]")
_TABLES = re.compile(r"\b(?:from|join)\s+((?:\"[^\"]+\"|[\w$]+)(?:\.(?:\"[^\"]+\"|[\w$]+))?)", re.IGNORECASE)
# Tools that only look things up: the answer does not rest on them.
CATALOG_TOOLS = frozenset(
    {
        "list_layers",
        "list_tables",
        "list_connections",
        "list_ogc_collections",
        "search_algorithms",
        "describe_algorithm",
        "describe_capabilities",
    }
)
LAYER_ARGUMENTS = ("layer", "layers", "input")
# run_algorithm parameters that name layers when nothing better tells (keys, upper case).
LAYER_PARAMETERS = frozenset(
    {
        "INPUT",
        "OVERLAY",
        "INTERSECT",
        "POLYGONS",
        "POINTS",
        "LINES",
        "LAYERS",
        "JOIN",
        "MASK",
        "HUBS",
        "SOURCE",
        "TARGET",
        "INPUT_LAYER",
        "INPUT_RASTER",
        "RASTER",
        "VECTOR",
        "ZONES",
        "INPUT_VECTOR",
    }
)


@dataclass(frozen=True)
class ToolCallRecord:
    """One finished call of a turn, as events or the stored transcript tell it."""

    name: str
    args: dict[str, Any]
    ok: bool
    result: str


@dataclass
class Sources:
    """What one answer rests on, each list in first-use order."""

    layers: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)  # "native:buffer (INPUT=rivers, DISTANCE=500)"
    results: list[str] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any((self.layers, self.tables, self.collections, self.algorithms, self.results, self.charts))

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
        ]
        return [(heading, items) for heading, items in named if items]

    def to_markdown(self) -> str:
        lines = ["**Sources**", ""]
        lines += [f"- {heading}: " + "; ".join(f"`{item}`" for item in items) for heading, items in self.sections()]
        return "\n".join(lines)


def chart_path(result: str) -> str | None:
    """The PNG a make_chart result names, if any."""
    first = (result or "").split("\n", 1)[0]
    return first[len(CHART_PREFIX) :].strip() or None if first.startswith(CHART_PREFIX) else None


def _add(items: list[str], value: str) -> None:
    value = str(value).strip()
    if value and value not in items:
        items.append(value)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def sql_tables(sql: str) -> list[str]:
    """Tables a query reads (after FROM and JOIN), without quotes; CTE names included (harmless)."""
    found: list[str] = []
    for match in _TABLES.finditer(sql or ""):
        _add(found, match.group(1).replace('"', ""))
    return found


def collect_sources(calls: Iterable[ToolCallRecord], layer_name: Callable[[str], str | None] | None = None) -> Sources:
    """The sources of a turn's calls.

    ``layer_name`` maps a reference (name or id) to the project layer's name,
    or ``None`` when it is not a layer; without it, argument names decide.
    Layers the turn itself made are listed as results, not as sources, even
    when a later step reads them.
    """
    sources = Sources()
    inputs: list[str] = []
    calls = [call for call in calls if call.ok and call.name not in CATALOG_TOOLS]
    for call in calls:
        for match in _ADDED.finditer(call.result or ""):
            _add(sources.results, match.group(2))
    for call in calls:
        args = call.args or {}
        if call.name == "run_algorithm":
            parameters = args.get("parameters") or {}
            for key, value in parameters.items() if isinstance(parameters, dict) else ():
                for text in _strings(value):
                    resolved = layer_name(text) if layer_name else (text if key.upper() in LAYER_PARAMETERS else None)
                    if resolved:
                        _add(inputs, resolved)
            _add(sources.algorithms, _algorithm(args))
            continue
        if call.name == "find_places":
            for line in (call.result or "").splitlines():
                if "added layer" not in line.lower():
                    continue
                match = _PLACE_SOURCE.search(line)
                if match and match.group(1) == "layer":
                    _add(inputs, match.group(2))
                elif match:
                    _add(sources.tables, f"{match.group(2)} ({match.group(3)})" if match.group(3) else match.group(2))
            continue
        connection = str(args.get("connection") or "").strip()
        if call.name in ("run_sql", "describe_table") or (call.name == "make_chart" and _is_sql(args.get("data"))):
            tables = _strings(args.get("tables")) + sql_tables(str(args.get("sql") or args.get("data") or ""))
            for table in tables:
                _add(sources.tables, f"{table} ({connection})" if connection else table)
        if "collection" in args or "collections" in args:
            server = str(args.get("server") or "").strip()
            for collection in _strings(args.get("collection")) + _strings(args.get("collections")):
                _add(sources.collections, f"{collection} ({server})" if server else collection)
        refs = [*(_strings(args.get(key)) for key in LAYER_ARGUMENTS)]
        if call.name == "make_chart" and not _is_sql(args.get("data")):
            refs.append(_strings(args.get("data")))
        for ref in (r for group in refs for r in group):
            resolved = layer_name(ref) if layer_name else ref
            _add(inputs, resolved or ref)
        path = chart_path(call.result) if call.name == "make_chart" else None
        if path:
            _add(sources.charts, path)
    for name in inputs:
        if name not in sources.results:
            _add(sources.layers, name)
    return sources


def _is_sql(value: Any) -> bool:
    return isinstance(value, str) and bool(re.match(r"\s*\(?\s*(select|with)\b", value, re.IGNORECASE))


def _algorithm(args: dict[str, Any]) -> str:
    """``native:buffer (INPUT=rivers, DISTANCE=500)``: the id and the parameters the model set (outputs left out)."""
    parameters = args.get("parameters") or {}
    shown = []
    for key, value in parameters.items() if isinstance(parameters, dict) else ():
        if key.upper().startswith("OUTPUT") or value == "TEMPORARY_OUTPUT":
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        shown.append(f"{key}={short(text, 40)}")
    algorithm = str(args.get("algorithm") or "?")
    return f"{algorithm} ({', '.join(shown)})" if shown else algorithm


def with_extras(entries: Sequence[Any]) -> list[Any]:
    """A stored transcript with what the dock shows beside it: charts after their steps, sources after answers.

    ``entries`` are ``agent.transcript.Entry`` objects; new ones are made with
    the same class (so this module imports nothing of the agent).  A turn
    (from one user message to the next) gets its sources after its last
    entry, if it has an answer and anything to list.
    """
    if not entries:
        return []
    make = type(entries[0])
    out: list[Any] = []
    turn: list[Any] = []

    def close_turn() -> None:
        if any(e.kind == "answer" for e in turn):
            calls = [ToolCallRecord(e.name, dict(e.args or {}), e.ok, e.text) for e in turn if e.kind == "tool"]
            sources = collect_sources(calls)
            if not sources.empty:
                out.append(make("sources", sources.to_markdown(), args=sources.to_dict()))
        turn.clear()

    for entry in entries:
        if entry.kind == "user":
            close_turn()
        out.append(entry)
        turn.append(entry)
        if entry.kind == "tool" and entry.name == "make_chart" and entry.ok:
            path = chart_path(entry.text)
            if path:
                out.append(make("chart", path))
    close_turn()
    return out
