"""Guided tool calls: one JSON schema that admits exactly a call of an offered tool, or a final answer.

A small model, or a server that renders no tools for it, rarely writes a valid
native tool call.  Every server users run can instead constrain a reply to a
JSON schema (Ollama's ``format``, the OpenAI protocol's ``response_format``,
llama.cpp's grammars), and a reply constrained to

    {"tool": "<an offered tool>", "arguments": {<valid for that tool>}}
    {"answer": "<Markdown for the user>"}

is always a call the toolkit can read, whatever the model.  Names the model
must not invent are restricted where they are known (``Vocabulary``): layer
parameters to the project's layers, field parameters to its fields, the
algorithm of ``run_algorithm`` to the registry's ids.  The schema travels
beside the prompt, never in it, so it can change with the project while the
prompt (and the server's cache of it) stays the same.

A small model (the compact profile) also gets a grounded answer: its
figures can only be numbers the question or this question's tool results
hold (``grounded_answer``).  Held to a call, SmolLM2-135M looked at the right
layer and then answered "10 schools" where describe_layer had said 31: a
number it made up reads as a fact.  Held to figures that were read, a wrong
pick is still possible, an invented figure is not.  Its answer also first
quotes a line of what was read (``evidence_lines``), shown under it, and then
opens with a figure of that line (``_linked_answers``): left to write text
first, SmolLM2 copied the question and ran on to the token bound, or wrote the
question's 400 where the line it quoted said 17.

``AnswerStream`` reads the reply as it streams: the text of an answer is
passed on as it is generated (the dock shows it growing), a call is read whole
at the end (``parse_reply``).  Qt-free and free of LangChain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

TOOL_KEY = "tool"
ARGUMENTS_KEY = "arguments"
ANSWER_KEY = "answer"
EVIDENCE_KEY = "evidence"

# Parameters that name one project layer (load_data's ``layer`` names a layer inside the source: not restricted).
LAYER_PARAMETERS = frozenset({"layer"})
UNRESTRICTED_LAYER_TOOLS = frozenset({"load_data"})
# Parameters that name fields of a layer: the union of the project's field names (the layer is chosen in the
# same reply, so one list for all layers).
FIELD_PARAMETERS = {"edit_features": "field", "read_features": "fields"}
# The algorithm parameter of run_algorithm.
ALGORITHM_PARAMETERS = {"run_algorithm": "algorithm"}
# QGIS expressions: for a server that matches patterns against the JSON text (llama-cpp-python), held to a JSON
# string without braces.  QGIS writes none outside text values, and a small model that "closed" its call inside
# the string ran on to the token bound: SmolLM2 wrote "\"type\" = 'primary' }}\n\nThe answer is 1...".
EXPRESSION_PARAMETERS = frozenset({"expression"})
EXPRESSION_IN_JSON_TEXT = r'^([^"\\{}\x00-\x1f]|\\["\\/bfnrt])*$'
# Beyond these many names a list is not sent: a schema is compiled into a grammar on every call.
MAX_NAMES = 1000
# Beyond these many distinct figures read, the answer is left free (a grammar of every value of a big table).
MAX_FIGURES = 400
# A figure: a number that starts a word (a layer id's "c8bdbb54_d299_4810" holds none, "EPSG:25832" and "32N"
# do), with its minus sign; the grammar of a small model's answer grows with each one, and it picks among them.
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*")
# A character of a grounded answer other than a digit: not a quote, a backslash or a control character either,
# so the pattern means the same to servers that match it against the raw JSON text (llama.cpp's grammars) and
# to those that match the decoded string (a grounded answer is one line, without quotes).
_UNWRITTEN = r'"\\\x00-\x1f'
_NOT_A_DIGIT = f"[^0-9{_UNWRITTEN}]"
# What a figure of an answer follows: not a letter (Gemma wrote "fid (int6200239.1)"), a point, a comma, a plus or a
# minus sign (a minus in front of a figure read would be a figure nobody read).
_BEFORE_A_FIGURE = f"[^0-9A-Za-z_.,+\\x2d{_UNWRITTEN}]"
# A small model's answer quotes at most these many lines of what was read, each one offered if it is at most
# EVIDENCE_CHARS long; beyond MAX_EVIDENCE_LINES distinct lines, no quote is asked for (a grammar of a big table).
MAX_QUOTED = 2  # each line quoted costs its tokens again: SmolLM2 quoted four lines until a 128-token bound cut it
EVIDENCE_CHARS = 200
MAX_EVIDENCE_LINES = 300
# Up to these many lines, an answer quotes one line and writes only that line's figures (``_linked_answers``): one
# branch of the schema per line, so beyond them the grammar would grow past what a server compiles on each call.
MAX_LINKED = 40
# A longer line is offered as its start, cut after a clause (", " or "; ") and marked as cut: run_algorithm's
# "OUTPUT: added layer 'big_schools': Point, 17 features, EPSG:25832, extent ..., fields: ..." runs past
# EVIDENCE_CHARS with a field list, and SmolLM2, offered no line, answered with the question's 400.
CUT_MARK = " ..."
_CLAUSE_END = re.compile(r"[,;] ")
EVIDENCE_HEAD = "Read from the results:"

INSTRUCTIONS = (
    "Reply with one JSON object: a tool call "
    '{"tool": "<name>", "arguments": {...}} or your answer {"answer": "<Markdown>"}. '
    "Call a tool to look at the data before you answer."
)


@dataclass(frozen=True)
class Vocabulary:
    """Names that exist now: the project's layers and fields, the registry's algorithm ids."""

    layers: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = ()
    # Algorithms whose parameters are known (those of the worked examples shown for the question): id -> the
    # JSON schema of run_algorithm's ``parameters`` for it (``tools.vocabulary``).
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)


# Algorithms a worked example runs, each with the names of the parameters it sets.
ExampleAlgorithms = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class WorkedExamples:
    """Worked examples shown beside a question: their text, and the algorithms they run with the parameters set."""

    text: str = ""
    algorithms: ExampleAlgorithms = ()


@dataclass(frozen=True)
class GuidedReply:
    """A reply read whole: an answer (``text``), a call (``tool`` and ``arguments``), or neither (``problem``)."""

    text: str = ""
    tool: str | None = None
    arguments: Any = None
    problem: str | None = None
    evidence: tuple[str, ...] = ()  # the lines of the results an answer quotes (``evidence_lines``)


def system_text(prompt: str, tool_schemas: list[dict[str, Any]]) -> str:
    """The system prompt of a guided conversation: ``prompt``, how to reply, and one line per offered tool.

    Fixed for the conversation's tools, so the prompt stays append-only; the
    names of layers and fields are in the schema, not here.
    """
    lines = [prompt, "", INSTRUCTIONS, "Tools:"]
    for schema in tool_schemas:
        function = schema["function"]
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required") or ())
        names = [name if name in required else f"{name}?" for name in parameters.get("properties") or {}]
        description = " ".join(str(function.get("description") or "").split())
        lines.append(f"- {function['name']}({', '.join(names)}): {description}")
    return "\n".join(lines)


def reply_schema(
    tool_schemas: list[dict[str, Any]],
    vocabulary: Vocabulary,
    answer_allowed: bool = True,
    figures: tuple[str, ...] | None = None,
    evidence: tuple[str, ...] = (),
    raw_patterns: bool = False,
) -> dict[str, Any]:
    """The JSON schema a guided reply must match: a call of one offered tool, or an answer.

    ``answer_allowed`` False leaves the answer out: the first reply to a
    question is a call, so the answer rests on what a tool read (a small model
    otherwise answers from its imagination), as the system prompt asks.
    ``figures`` (not ``None``): the only numbers the answer may write (``grounded_answer``).
    ``evidence`` (not empty): the lines of the results the answer first quotes from (``evidence_lines``): up to
    MAX_LINKED, it quotes one and opens with a figure of it (``_linked_answers``); beyond, it quotes one or two
    and states one of ``figures``.
    ``raw_patterns``: the server matches patterns against the JSON text (``EXPRESSION_IN_JSON_TEXT``).
    """
    branches = [
        branch for schema in tool_schemas for branch in _call_schemas(schema["function"], vocabulary, raw_patterns)
    ]
    if not answer_allowed and branches:
        return {"anyOf": branches}
    if evidence and len(evidence) <= MAX_LINKED:
        return {"anyOf": [*branches, *_linked_answers(evidence)]}
    properties: dict[str, Any] = {}
    if evidence:
        # Written before the answer (servers generate the properties in this order): the model picks the lines that
        # answer the question, then writes its answer with them in front of it.
        properties[EVIDENCE_KEY] = {
            "type": "array",
            "items": {"enum": list(evidence)},
            "uniqueItems": True,
            "minItems": 1,
            "maxItems": MAX_QUOTED,  # more than MAX_LINKED lines are offered here
        }
    # With lines quoted (each states a figure), the answer reports one of the figures read: SmolLM2-135M, free
    # to write none, quoted "... 17 features ..." and answered "Yes".
    properties[ANSWER_KEY] = grounded_answer(figures, states_a_figure=bool(evidence))
    answer = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"anyOf": [*branches, answer]}


def _linked_answers(evidence: tuple[str, ...]) -> list[dict[str, Any]]:
    """One answer per line of ``evidence``: the line quoted, then an answer that states figures of that line only.

    Held to every figure read, SmolLM2-135M quoted "... 2 features ..." and
    answered 14, a figure of another line; held to the figures of the line
    it quoted, the figure it states is one that line shows under the answer.
    """
    return [
        {
            "type": "object",
            "properties": {
                EVIDENCE_KEY: {"type": "array", "items": {"enum": [line]}, "minItems": 1, "maxItems": 1},
                ANSWER_KEY: grounded_answer(figures_in([line]) or (), figure_first=True),
            },
            "required": [EVIDENCE_KEY, ANSWER_KEY],
            "additionalProperties": False,
        }
        for line in evidence
    ]


def evidence_lines(results: list[str]) -> tuple[str, ...]:
    """The lines of ``results`` (tool results) a small model's answer may quote; empty: none, or too many to offer.

    A small model held to figures that were read still picked the wrong one
    (SmolLM2-135M: "12.9" for the 31 schools that describe_layer had read, the
    figure written most often in it).  Asked first for the lines that answer
    the question, as they were read, it writes the answer with them in front of
    it, and the user sees them under the answer: a wrong pick is then visible
    as the line it came from.  Only lines that state a figure are offered: the
    quote pins the answer's figures (a result's "native:buffer finished."
    line, quoted, gave the answer "run_algorithm").
    """
    lines = dict.fromkeys(
        line
        for text in results
        for raw in text.splitlines()
        if (line := _quotable(" ".join(raw.split()))) and _NUMBER.search(line)
    )
    return tuple(lines) if len(lines) <= MAX_EVIDENCE_LINES else ()


def _quotable(line: str) -> str:
    """``line`` as it may be quoted: whole, or its start up to a clause's end (else a word's), marked as cut.

    Cut where it runs past EVIDENCE_CHARS or before a character a schema's fixed string cannot hold
    (``writable``): select_features' "Selected 16 of 31 features in 'schools' where "type" = 'primary'."
    was offered in no form, and Gemma answered "select_features".
    """
    bad = next((index for index, char in enumerate(line) if not writable(char)), len(line))
    if bad == len(line) and len(line) <= EVIDENCE_CHARS:
        return line
    limit = min(bad, EVIDENCE_CHARS - len(CUT_MARK)) + 1
    ends = [match.start() for match in _CLAUSE_END.finditer(line, 0, limit)] or [line.rfind(" ", 0, limit)]
    return f"{line[: ends[-1]]}{CUT_MARK}" if ends[-1] > 0 else ""


def writable(name: str) -> bool:
    """Whether ``name`` may be one of a schema's fixed strings (``enum``, ``const``): no quote, no backslash.

    llama-cpp-python's schema converter escapes a quote inside one wrongly: its server failed to parse the
    grammar and then crashed (a read_features line, ``... where "beds" = maximum("beds"):``, quoted by Gemma).
    """
    return '"' not in name and "\\" not in name


def quoted(evidence: tuple[str, ...]) -> str:
    """``evidence`` as Markdown under an answer: each line quoted as it was read."""
    lines = dict.fromkeys(evidence)  # a grammar need not enforce uniqueItems: a line quoted twice is shown once
    if not lines:
        return ""
    return f"\n\n{EVIDENCE_HEAD}\n" + "\n>\n".join(f"> {line}" for line in lines)


def figures_in(texts: list[str]) -> tuple[str, ...] | None:
    """The distinct numbers written in ``texts``, in order (``None``: more than ``MAX_FIGURES``)."""
    found = list(dict.fromkeys(number for text in texts for number in _NUMBER.findall(text)))
    return tuple(found) if len(found) <= MAX_FIGURES else None


def grounded_answer(
    figures: tuple[str, ...] | None, states_a_figure: bool = False, figure_first: bool = False
) -> dict[str, Any]:
    """The schema of an answer whose numbers are all among ``figures`` (``None``: any string).

    ``states_a_figure``: the answer writes at least one of them.  ``figure_first``: it opens with one (so it
    states one: ``_linked_answers``).

    The pattern reads: text without digits, then figures, each one after a character that is not part of a
    word or a number (a space, a colon, a bracket: never a minus sign), separated by text that starts with a
    character that cannot continue a number, then a full stop or more text without digits.  "Cannot continue
    a number": not a digit, and a point or comma only before a non-digit, so figures never join into one
    that was not read ("14" "." "25832" is not 14.25832; "31" is not the start of "310"; "-31" is not 31).
    Plain groups only: llama.cpp's schema converter reads no ``(?:``.
    """
    if figures is None:
        return {"type": "string"}
    plain = f"{_NOT_A_DIGIT}*"
    if not figures:
        return {"type": "string", "pattern": f"^{plain}$"}
    # Longest first; a dot as the class "[.]": an escaped one reaches llama.cpp's grammar as an escape it may
    # refuse.
    choices = "|".join(figure.replace(".", "[.]") for figure in sorted(figures, key=len, reverse=True))
    after = f"([^0-9.,{_UNWRITTEN}]|[.,]{_NOT_A_DIGIT})"
    between = f"([.,]?{_BEFORE_A_FIGURE}|{after}{plain}{_BEFORE_A_FIGURE})"
    stated = f"({choices})({between}({choices}))*([.,]?|{after}{plain})"  # figures, then the end or more text
    if figure_first:
        pattern = f"^{stated}$"
    elif states_a_figure:
        pattern = f"^({plain}{_BEFORE_A_FIGURE})?{stated}$"
    else:
        pattern = f"^(({plain}{_BEFORE_A_FIGURE})?{stated}|{plain})$"
    return {"type": "string", "pattern": pattern}


def _call_schemas(function: dict[str, Any], vocabulary: Vocabulary, raw_patterns: bool = False) -> list[dict[str, Any]]:
    """The branches for calls of one tool: one, or for run_algorithm one more per algorithm of known parameters.

    An algorithm with its own branch is left out of the general one, so a
    reply that names it must write its parameters as that branch says (the
    names QGIS knows, layers from the project, the ones the example set).
    """
    general = _call_schema(function, vocabulary, raw_patterns)
    key = ALGORITHM_PARAMETERS.get(function["name"])
    known = {a: spec for a, spec in vocabulary.parameters.items() if a in vocabulary.algorithms}
    if key is None or not known:
        return [general]
    arguments = general["properties"][ARGUMENTS_KEY]
    choice = arguments["properties"].get(key, {})
    if "enum" in choice:
        choice["enum"] = [a for a in choice["enum"] if a not in known]
    branches = [general]
    for algorithm, spec in known.items():
        properties = {**arguments["properties"], key: {"const": algorithm}, "parameters": spec}
        own = {**arguments, "properties": properties}
        branches.append({**general, "properties": {**general["properties"], ARGUMENTS_KEY: own}})
    return branches


def _call_schema(function: dict[str, Any], vocabulary: Vocabulary, raw_patterns: bool = False) -> dict[str, Any]:
    name = function["name"]
    parameters = dict(function.get("parameters") or {})
    properties = {key: dict(spec) for key, spec in (parameters.get("properties") or {}).items()}
    for key, spec in properties.items():
        if raw_patterns and key in EXPRESSION_PARAMETERS and spec.get("type") == "string":
            spec["pattern"] = EXPRESSION_IN_JSON_TEXT
        names = _names_for(name, key, vocabulary)
        if not names:
            continue
        if spec.get("type") == "array":
            # Bounded: a small model held to a list of names repeated one until its reply was cut (invalid JSON).
            spec["items"] = {"enum": names}
            spec["maxItems"] = len(names)
        elif spec.get("type") == "string":
            spec.pop("type")
            spec["enum"] = names
    arguments: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if parameters.get("required"):
        arguments["required"] = list(parameters["required"])
    return {
        "type": "object",
        "properties": {TOOL_KEY: {"const": name}, ARGUMENTS_KEY: arguments},
        "required": [TOOL_KEY, ARGUMENTS_KEY],
        "additionalProperties": False,
    }


def _names_for(tool: str, parameter: str, vocabulary: Vocabulary) -> list[str]:
    """The names ``parameter`` of ``tool`` may take (empty: not restricted)."""
    if parameter in LAYER_PARAMETERS and tool not in UNRESTRICTED_LAYER_TOOLS:
        names = vocabulary.layers
    elif FIELD_PARAMETERS.get(tool) == parameter:
        names = vocabulary.fields
    elif ALGORITHM_PARAMETERS.get(tool) == parameter:
        names = vocabulary.algorithms
    else:
        return []
    unique = choosable(names)
    return unique if 0 < len(unique) <= MAX_NAMES else []


def choosable(names: Iterable[str]) -> list[str]:
    """``names`` once each, as a schema's list to choose from; empty if one cannot be written there (``writable``).

    Empty leaves the parameter free: the tool's answer still says which names exist.
    """
    unique = list(dict.fromkeys(names))
    return unique if all(map(writable, unique)) else []


def parse_reply(text: str) -> GuidedReply:
    """Read a whole guided reply.

    Text that is not a JSON object (a server that ignored the schema) is the
    answer as written; an object that is neither form is a problem the model
    is told about.
    """
    stripped = text.strip()
    if not stripped.startswith("{"):
        return GuidedReply(text=text)
    try:
        # strict=False: a raw line break inside a string. llama-cpp-python's grammar let SmolLM2 write one
        # in a read_features expression, and the whole call was refused as "not valid JSON"; read, the
        # expression itself is checked and its error is one the model can act on.
        value = json.loads(stripped, strict=False)
    except RecursionError:
        return GuidedReply(tool=_tool_named(stripped), problem="the reply is nested too deep to be read")
    except json.JSONDecodeError as exc:
        return GuidedReply(tool=_tool_named(stripped), problem=f"the reply is not complete JSON ({exc.msg})")
    if not isinstance(value, dict):
        return GuidedReply(text=text)
    if isinstance(value.get(ANSWER_KEY), str) and TOOL_KEY not in value:
        quotes = value.get(EVIDENCE_KEY)
        evidence = tuple(q for q in quotes if isinstance(q, str)) if isinstance(quotes, list) else ()
        return GuidedReply(text=value[ANSWER_KEY], evidence=evidence)
    tool = value.get(TOOL_KEY, value.get("name"))
    if not isinstance(tool, str) or not tool:
        keys = ", ".join(sorted(map(str, value))) or "none"
        return GuidedReply(problem=f'the reply has neither "tool" nor "answer" (keys: {keys})')
    arguments = value.get(ARGUMENTS_KEY, value.get("parameters", {}))
    return GuidedReply(tool=tool, arguments=arguments)


_TOOL_NAME = re.compile(r'"(?:tool|name)"\s*:\s*"([A-Za-z_][A-Za-z0-9_]{0,63})"')


def _tool_named(text: str) -> str | None:
    found = _TOOL_NAME.search(text[:500])
    return found.group(1) if found else None


# -- streaming ------------------------------------------------------------------------------------------------------
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_KEY_PREFIX = re.compile(r'\s*\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*')
_NEXT_KEY = re.compile(r'\s*,\s*"((?:[^"\\]|\\.)*)"\s*:\s*')


@dataclass
class AnswerStream:
    """A guided reply read as it streams: ``feed`` returns the answer text that became readable.

    Until the first key is read the reply is undecided; an ``answer`` is then
    decoded from its JSON string as it grows (escapes included, one split
    across chunks held back), anything else (a call) is only collected.  A
    reply that does not open with ``{`` is plain text and passed on as is.
    """

    received: list[str] = field(default_factory=list)
    _mode: str = "undecided"  # undecided, evidence (quoted lines before the answer), answer, plain, collect, done
    _pending: str = ""  # received text not yet decoded (answer mode) or classified (undecided)

    @property
    def text(self) -> str:
        """Everything received so far."""
        return "".join(self.received)

    @property
    def is_answer(self) -> bool:
        return self._mode in ("answer", "done", "plain")

    def feed(self, piece: str) -> str:
        self.received.append(piece)
        if self._mode in ("collect", "done"):
            return ""
        if self._mode == "plain":
            return piece
        self._pending += piece
        if self._mode == "undecided":
            return self._decide()
        if self._mode == "evidence":
            return self._past_evidence()
        return self._decode()

    def _decide(self) -> str:
        head = self._pending.lstrip()
        if not head:
            return ""
        if not head.startswith("{"):
            self._mode, text, self._pending = "plain", self._pending, ""
            return text
        return self._at_key(_KEY_PREFIX, self._pending)

    def _at_key(self, prefix: re.Pattern[str], text: str) -> str:
        """Read the key ``prefix`` matches at the start of ``text``: the answer's string starts streaming."""
        match = prefix.match(text)
        if match is None:
            if len(text) > 200:  # not the shape of either form: read whole at the end
                self._mode = "collect"
            return ""
        rest = text[match.end() :]
        if match.group(1) == EVIDENCE_KEY and self._mode == "undecided":
            self._mode, self._pending = "evidence", rest
            return self._past_evidence()
        if match.group(1) != ANSWER_KEY:
            self._mode = "collect"
            return ""
        if not rest:
            return ""
        if not rest.startswith('"'):
            self._mode = "collect"
            return ""
        self._mode, self._pending = "answer", rest[1:]
        return self._decode()

    def _past_evidence(self) -> str:
        """Wait for the end of the quoted lines (shown after the answer), then read the answer's key."""
        end = _array_end(self._pending)
        if end is None:
            if len(self._pending) > MAX_QUOTED * (EVIDENCE_CHARS + 16) + 64:
                self._mode = "collect"
            return ""
        return self._at_key(_NEXT_KEY, self._pending[end:])

    def _decode(self) -> str:
        out: list[str] = []
        text, index = self._pending, 0
        while index < len(text):
            char = text[index]
            if char == '"':
                self._mode, self._pending = "done", ""
                return "".join(out)
            if char != "\\":
                out.append(char)
                index += 1
                continue
            if index + 1 >= len(text):
                break  # an escape split across chunks: wait for the rest
            code = text[index + 1]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                index += 2
                continue
            if code != "u":
                out.append(code)
                index += 2
                continue
            decoded, used = _unicode_escape(text, index)
            if used == 0:
                break
            out.append(decoded)
            index += used
        self._pending = text[index:]
        return "".join(out)


def _array_end(text: str) -> int | None:
    """Where the JSON array of strings at the start of ``text`` ends (after its ``]``); ``None``: not yet."""
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "]":
            return index + 1
    return None


def _unicode_escape(text: str, index: int) -> tuple[str, int]:
    """The character of the ``\\uXXXX`` escape at ``index`` (a surrogate pair joined); (``""``, 0): incomplete."""
    if index + 6 > len(text):
        return "", 0
    try:
        unit = int(text[index + 2 : index + 6], 16)
    except ValueError:
        return "", 6  # not an escape the grammar allows: dropped
    if 0xD800 <= unit < 0xDC00:
        if index + 12 > len(text):
            return "", 0
        if text[index + 6 : index + 8] == "\\u":
            try:
                low = int(text[index + 8 : index + 12], 16)
            except ValueError:
                low = 0
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), 12
        return "\ufffd", 6
    if 0xDC00 <= unit < 0xE000:
        return "\ufffd", 6
    return chr(unit), 6
