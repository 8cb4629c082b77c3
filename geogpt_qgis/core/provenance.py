"""Where a result layer came from, as text for its QGIS metadata (abstract and history).

After the chat is closed a result layer must still say how it was made, so
that it can be audited: the question asked, the tool and the algorithm with
its parameters, the input layers and their sources, the model and the server
that chose the steps, when, and with which plugin version.  This module only
composes that record from plain values (``Provenance``); writing it onto a
layer and into its result GeoPackage is ``tools.provenance``'s job.

Nothing secret goes in: sources and the server's address lose their
credentials (passwords, user:password@, key and token query values) and pass
through ``secrets_scrub.scrub``, since metadata is saved in the project and
the GeoPackage and travels with them.

The run's question and model reach the toolkit through ``current_origin``
(a context variable the session sets for each run, as it sets the
conversation), so neither the prompt nor any tool schema carries them.
Qt-free.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from geogpt_qgis.core.secrets_scrub import REDACTED, scrub
from geogpt_qgis.core.text import single_line

# Every record starts so: what the abstract is, and how a reader (or a test) tells it from a user's own text.
HEADER = "Made by GeoGPT for QGIS"
MAX_QUESTION_CHARS = 2000  # a pasted essay stays readable in Layer Properties
MAX_VALUE_CHARS = 500  # one parameter value (a long expression), cut

# Names whose value is a secret in QGIS's key=value sources (not ``key``: PostGIS's ``key='gid'`` is a column).
_HIDDEN_NAMES = r"password|passwd|pwd|api[_-]?key|apikey|access[_-]?token|token|secret|signature"
# ... and in a URL's query, where ``key`` and ``sig`` carry API keys and signed-URL signatures.
_QUERY_VALUE = re.compile(rf"([?&](?:{_HIDDEN_NAMES}|key|sig)=)[^&#\s'\"]+", re.IGNORECASE)
# Such a name and its value, quoted or bare, in QGIS data source strings (PostGIS, WFS, WMS...).
_KEY_VALUE = re.compile(
    rf"\b({_HIDDEN_NAMES})\s*=\s*('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&'\"]+)", re.IGNORECASE
)
# A URL's user info (the user name and password before its host), anywhere in a source.
_USER_INFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s@]+@", re.IGNORECASE)
# Where an earlier record starts in an abstract (always at the start of a line).
_EARLIER_RECORD = re.compile(rf"^{re.escape(HEADER)} ", re.MULTILINE)


@dataclass(frozen=True)
class RunOrigin:
    """What started the run: the user's message of this turn and the model that answered it (no key).

    ``client``: an MCP client called the tool; its question and model are its own and never sent here.
    """

    question: str
    model: str
    server: str
    provider: str = ""
    client: str = ""

    @classmethod
    def of(cls, question: str, model: str, base_url: str, provider: str = "") -> RunOrigin:
        """The origin with the server's address stripped of credentials."""
        return cls(question, model, server_address(base_url), provider)

    @classmethod
    def mcp(cls, client: str) -> RunOrigin:
        """A call from an MCP client: the client is known, its question and model are not."""
        return cls("", "", "", client=single_line(client) or "unnamed")


# The origin of the run the calling code belongs to (``None``: a tool called outside a chat run).
current_origin: ContextVar[RunOrigin | None] = ContextVar("geogpt_run_origin", default=None)


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the toolkit starts it: the tool, arguments and time its results' provenance names.

    Known before the call runs, so the result store can write a result's record
    together with its table, before QGIS opens it (``tools.result_store``).
    """

    tool: str
    arguments: Mapping[str, Any]
    time: dt.datetime


# The tool call the calling code belongs to (set by the toolkit around each call; ``None`` outside one).
current_call: ContextVar[ToolCall | None] = ContextVar("geogpt_tool_call", default=None)


@dataclass(frozen=True)
class InputSource:
    """An input of the step: a project layer (name and data source), a database table or an OGC collection."""

    name: str
    source: str
    kind: str = "layer"


@dataclass(frozen=True)
class Provenance:
    """One step that made a result layer: everything its metadata records."""

    tool: str
    time: dt.datetime
    plugin_version: str
    origin: RunOrigin | None = None
    algorithm: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)  # the call's, where no algorithm ran
    inputs: tuple[InputSource, ...] = ()

    @property
    def timestamp(self) -> str:
        """ISO 8601 in UTC, to the second: ``2026-11-28T09:30:00Z``."""
        moment = self.time.astimezone(dt.UTC) if self.time.tzinfo else self.time
        return moment.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def server_address(url: str) -> str:
    """``url`` without user, password, query or fragment: where the model ran, nothing that unlocks it."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return scrub(_USER_INFO.sub(r"\1", url))
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return scrub(urlunsplit((parts.scheme, host, parts.path, "", "")))


def clean_source(source: str) -> str:
    """A data source as it can be shown and saved: credentials replaced by ``***``.

    Covers QGIS's key=value strings (``password='...'``), URLs with a user and
    password, and secret-looking query values (``?apikey=...``); then every
    secret the plugin knows (``secrets_scrub``).
    """
    text = _USER_INFO.sub(r"\1", source)
    text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}={REDACTED}", text)
    text = _QUERY_VALUE.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    return scrub(text)


def abstract(record: Provenance) -> str:
    """The metadata abstract: one labelled line per item, readable in Layer Properties > Metadata."""
    lines = [f"{HEADER} {record.plugin_version}, {record.timestamp}."]
    origin = record.origin
    lines.append(f"Question: {_question(origin)}")
    lines.append(f"Tool: {record.tool}")
    if record.algorithm:
        lines.append(f"Algorithm: {record.algorithm}")
        lines.append(f"Parameters: {_parameters(record.parameters)}")
    elif record.arguments:
        lines.append(f"Arguments: {_parameters(record.arguments)}")
    if record.inputs:
        lines.append("Inputs:")
        lines += [f"- {_input(item)}" for item in record.inputs]
    else:
        lines.append("Inputs: none")
    lines.append(f"Model: {_model(origin)}")
    lines.append(f"Time (UTC): {record.timestamp}")
    lines.append(f"Plugin version: {record.plugin_version}")
    return "\n".join(lines)


def merged_abstract(existing: str, record: Provenance) -> str:
    """The layer's abstract with ``record``: the data's own abstract first (an OGC filter note, a loaded file's
    description), without an earlier record (a results table loaded again: its history keeps that one)."""
    own = _EARLIER_RECORD.split(existing, maxsplit=1)[0].strip()
    return f"{own}\n\n{abstract(record)}" if own else abstract(record)


def history_entry(record: Provenance) -> str:
    """One history item for the layer: the same record on one line (a layer's history lists each step that made it)."""
    parts = [f"{record.timestamp} {HEADER} {record.plugin_version}", f"tool {record.tool}"]
    if record.algorithm:
        parts.append(f"algorithm {record.algorithm} {_parameters(record.parameters)}")
    elif record.arguments:
        parts.append(f"arguments {_parameters(record.arguments)}")
    inputs = "; ".join(_input(item) for item in record.inputs) or "none"
    parts += [f"inputs {inputs}", f"model {_model(record.origin)}", f"question {_question(record.origin)}"]
    return " | ".join(parts)


def _question(origin: RunOrigin | None) -> str:
    if origin is None:
        return "(not recorded: the tool was called outside a chat)"
    if origin.client and not origin.question:
        return f"(not sent: the MCP client {json.dumps(scrub(origin.client), ensure_ascii=False)} called the tool)"
    text = single_line(origin.question).strip()
    if len(text) > MAX_QUESTION_CHARS:
        text = text[: MAX_QUESTION_CHARS - 1] + "…"
    return json.dumps(scrub(text), ensure_ascii=False)


def _model(origin: RunOrigin | None) -> str:
    if origin is None:
        return "(not recorded)"
    if origin.client and not origin.model:
        return f"the MCP client {json.dumps(scrub(origin.client), ensure_ascii=False)}'s own"
    provider = f" ({origin.provider})" if origin.provider else ""
    return f"{scrub(origin.model)} at {origin.server}{provider}"


def _input(item: InputSource) -> str:
    kind = "" if item.kind == "layer" else f"{item.kind} "
    source = clean_source(single_line(item.source)) if item.source else "unknown source"
    return f"{kind}{scrub(single_line(item.name))} ({source})"


def _parameters(parameters: Mapping[str, Any]) -> str:
    """Parameters or arguments as JSON (what the model sent), each value cut to ``MAX_VALUE_CHARS``, credentials out.

    Not all of ``clean_source``: an expression such as ``"token" = 5`` is data here, kept as written;
    a URL's user, password and secret query values go.
    """
    shown = {str(key): _value(value) for key, value in parameters.items()}
    text = _USER_INFO.sub(r"\1", json.dumps(shown, ensure_ascii=False, default=str, sort_keys=True))
    return scrub(_QUERY_VALUE.sub(lambda m: f"{m.group(1)}{REDACTED}", text))  # a URL's ?apikey=... too


def _value(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        return value[: MAX_VALUE_CHARS - 1] + "…"
    return value
