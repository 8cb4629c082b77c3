"""Tool-call arguments as a model server streams them: bounded and made safe before any client library reads them.

A model looping inside an argument writes thousands of words into it; one
looping on brackets nests it hundreds of levels deep.  The client libraries
parse what arrives without such bounds: langchain-ollama hands every string
argument to ``json.loads``, then to ``ast.literal_eval``, and Python's parser
raises ``MemoryError`` on about 1,500 space-separated words (``json.loads``:
``RecursionError`` on a thousand ``[``), which nothing caught: the run ended
with an error that blamed the server.  So each line of a chat stream is
checked here, in the HTTP transport under the clients
(``providers.transports.StreamRepairTransport``), before a client sees it:

- arguments beyond the bounds of ``core.call_bounds`` (``CALL_TEXT_CHARS`` per
  text, ``CALL_CHARS`` in all, ``CALL_DEPTH`` levels, ``CALL_DIGITS`` per
  integer) are replaced by ``{REFUSED_ARGUMENTS: why}``; the toolkit answers
  that call with a tool error giving the size and the bound, and the run goes on;
- over Ollama, every string argument travels wrapped (``{TEXT_KEY: text}``,
  a value langchain-ollama passes on untouched), so no text of the model's
  is ever parsed by the client; ``unparsed_as_invalid`` unwraps them when the
  reply is complete.  Arguments sent as one JSON string (some models'
  templates do that) are decoded here; a string that is not a JSON object
  travels as ``{UNPARSED_ARGUMENTS: text}`` and becomes an invalid tool call;
- over OpenAI's protocol a call's arguments arrive in pieces; they are held
  back and passed on whole, checked, with the chunk that ends the reply, so
  the client never reads a call past the bounds (nor re-parses a growing
  prefix of it at every chunk).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from geogpt_qgis.core.call_bounds import CALL_CHARS, CALL_DEPTH, CALL_TEXT_CHARS, REFUSED_ARGUMENTS, arguments_problem

# Key under which an Ollama tool call's unparsable argument string travels to the graph.
UNPARSED_ARGUMENTS = "__geogpt_unparsed_arguments__"
# Key of the object one string argument travels in over Ollama (langchain-ollama parses strings, not objects).
TEXT_KEY = "__geogpt_text__"
# An Ollama frame nested deeper than this is cut down to it before it is parsed (Python's parser fails near
# 1,000 levels, less the stack in use); the arguments sit 6 levels in, so cut ones are beyond CALL_DEPTH.
FRAME_DEPTH = CALL_DEPTH + 8


def refused(problem: str) -> dict[str, Any]:
    """The arguments that stand for ones not read, saying why."""
    return {REFUSED_ARGUMENTS: problem}


def _too_deep() -> str:
    return f"the arguments are nested more than {CALL_DEPTH} levels deep; at most {CALL_DEPTH} are read"


def _too_long(size: int, bound: int, what: str = "the arguments are") -> str:
    return f"{what} {size:,} characters; at most {bound:,} are read"


# -- Ollama: one JSON object per line -------------------------------------------------------------------------------
def decode_tool_arguments(line: bytes) -> bytes:
    """One line of an Ollama chat stream, with every tool call's arguments bounded, decoded and wrapped.

    Lines without tool calls, and lines that are not JSON, pass unchanged (the
    client reports what it cannot read).
    """
    if b'"tool_calls"' not in line:
        return line
    frame = _frame(line)
    message = frame.get("message") if isinstance(frame, dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list):
        return line
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and "arguments" in function:
            function["arguments"] = ollama_arguments(function["arguments"], function.get("name"))
    return json.dumps(frame).encode()


def ollama_arguments(raw: Any, name: Any = None) -> Any:
    """A call's arguments as langchain-ollama may read them: an object whose texts are all wrapped."""
    if isinstance(raw, str):
        if len(raw) > CALL_CHARS:
            return _wrapped(refused(_too_long(len(raw), CALL_CHARS)))
        try:
            decoded = json.loads(raw)
        except ValueError:
            decoded = None
        except RecursionError:
            return _wrapped(refused(_too_deep()))
        if not isinstance(decoded, dict):
            if len(raw) > CALL_TEXT_CHARS:  # it is not JSON: it is one text, bounded as one
                return _wrapped(refused(_too_long(len(raw), CALL_TEXT_CHARS, "the arguments (not a JSON object) are")))
            return _wrapped({UNPARSED_ARGUMENTS: raw})
        raw = decoded
    if not isinstance(raw, dict):
        return raw  # not an object at all: the client refuses it and the model is asked again, as before
    # Some models echo the function's name as an argument; langchain-ollama drops it, and so does this.
    raw = {key: value for key, value in raw.items() if not (key == "functionName" and value == name)}
    problem = arguments_problem(raw)
    return _wrapped(refused(problem) if problem else raw)


def _wrapped(arguments: dict[str, Any]) -> dict[str, Any]:
    return {key: {TEXT_KEY: value} if isinstance(value, str) else value for key, value in arguments.items()}


def _unwrapped(arguments: Any) -> Any:
    if not isinstance(arguments, dict):
        return arguments
    return {
        key: value[TEXT_KEY]
        if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(TEXT_KEY), str)
        else value
        for key, value in arguments.items()
    }


def _frame(line: bytes) -> Any:
    """The decoded line; one nested too deep for Python's parser is cut to ``FRAME_DEPTH`` first; None if not JSON."""
    try:
        return json.loads(line)
    except ValueError:
        return None
    except RecursionError:
        pass
    try:
        return json.loads(flattened(line, FRAME_DEPTH))
    except (ValueError, RecursionError):
        return None


def flattened(text: bytes, limit: int) -> bytes:
    """JSON ``text`` with every object or array nested deeper than ``limit`` replaced by ``null``."""
    out = bytearray()
    depth, skipping = 0, 0  # skipping: the depth of the container being left out (0: none)
    in_string = escaped = False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            if not skipping and depth > limit:
                skipping = depth
                out += b"null"
                continue
        elif byte in b"]}":
            depth -= 1
            if skipping and depth < skipping:
                skipping = 0
                continue
        if not skipping:
            out.append(byte)
    return bytes(out)


def unparsed_as_invalid(message: Any) -> Any:
    """``message`` (the model's reply) with its calls' arguments as the model sent them.

    Texts wrapped on the way (``TEXT_KEY``) are unwrapped; calls whose
    arguments could not be decoded become invalid tool calls, which the graph
    answers the same way on both protocols (the model is asked to send the
    call again with a JSON object).  Refused arguments stay a call of their
    own, which the toolkit answers with the reason.
    """
    calls = [{**call, "args": _unwrapped(call.get("args"))} for call in getattr(message, "tool_calls", None) or []]
    if not calls:
        return message
    from langchain_core.messages.tool import invalid_tool_call

    good, invalid = [], []
    for call in calls:
        raw = (call.get("args") or {}).get(UNPARSED_ARGUMENTS)
        if raw is None:
            good.append(call)
            continue
        raw = raw if isinstance(raw, str) else json.dumps(raw)
        invalid.append(invalid_tool_call(name=call["name"], args=raw, id=call.get("id"), error=None))
    return message.model_copy(
        update={"tool_calls": good, "invalid_tool_calls": [*message.invalid_tool_calls, *invalid]}
    )


# -- OpenAI: server-sent events -------------------------------------------------------------------------------------
@dataclass
class HeldArguments:
    """The pieces of one call's arguments received so far (kept up to ``CALL_CHARS``; all are counted)."""

    pieces: list[str] = field(default_factory=list)
    size: int = 0

    def add(self, piece: str) -> None:
        self.size += len(piece)
        if self.size <= CALL_CHARS:
            self.pieces.append(piece)

    def checked(self) -> str:
        """The arguments to pass on: as received, or ones standing for them when they are beyond the bounds."""
        if self.size > CALL_CHARS:
            return json.dumps(refused(_too_long(self.size, CALL_CHARS)))
        text = "".join(self.pieces)
        try:
            decoded = json.loads(text)
        except RecursionError:
            return json.dumps(refused(_too_deep()))
        except ValueError:
            return text  # not JSON (cut short, say): the client makes it an invalid call, as before
        problem = arguments_problem(decoded) if isinstance(decoded, dict) else None
        return json.dumps(refused(problem)) if problem else text


class ToolCallStreamRepair:
    """One OpenAI chat stream (server-sent events) with each tool call sent once, whole and bounded.

    The protocol sends a tool call's ``id`` and ``function.name`` in its first
    chunk only; clients concatenate what later chunks carry.  llama-cpp-python's
    server repeats both in every chunk of a constrained tool call (and the legacy
    ``function_call`` beside ``tool_calls``), so the client read the name as
    ``describe_layerdescribe_layer...``: repeats of what this stream already sent
    for the same call are dropped.  The arguments' pieces are held back and
    passed on whole (``HeldArguments.checked``) in the chunk that ends the
    choice (``finish_reason``), or before ``[DONE]`` or the end of the stream
    when none does.  Everything else passes unchanged.
    """

    def __init__(self) -> None:
        self._sent: dict[tuple[int, int], tuple[Any, Any]] = {}  # (choice, call index) -> (id, name)
        self._held: dict[tuple[int, int], HeldArguments] = {}
        self._envelope: dict[str, Any] = {}  # id, object, created, model of the stream's chunks

    def __call__(self, line: bytes) -> bytes:
        if not line.startswith(b"data:"):
            return line
        if line[5:].strip() == b"[DONE]":
            return self.end() + line
        if b'"tool_calls"' not in line and not self._held:
            return line
        try:
            frame = json.loads(line[5:])
        except (ValueError, RecursionError):
            return line
        if not isinstance(frame, dict):
            return line
        self._envelope = {key: frame[key] for key in ("id", "object", "created", "model") if key in frame}
        changed = False
        for choice in frame.get("choices") or []:
            if isinstance(choice, dict):
                changed |= self._repair(choice)
        return b"data: " + json.dumps(frame).encode() if changed else line

    def end(self) -> bytes:
        """Events passing on the arguments still held (the stream ends without a ``finish_reason``)."""
        events = b""
        for number in sorted({number for number, _ in self._held}):
            choice: dict[str, Any] = {"index": number, "delta": {}, "finish_reason": None}
            self._release(number, choice)
            events += b"data: " + json.dumps({**self._envelope, "choices": [choice]}).encode() + b"\n\n"
        return events

    def _repair(self, choice: dict[str, Any]) -> bool:
        number = choice.get("index", 0)
        delta = choice.get("delta")
        calls = delta.get("tool_calls") if isinstance(delta, dict) else None
        changed = False
        if isinstance(delta, dict) and isinstance(calls, list) and calls:
            if delta.pop("function_call", None) is not None:  # the legacy form of the same call
                changed = True
            for call in calls:
                if isinstance(call, dict):
                    changed |= self._drop_repeats(number, call)
                    changed |= self._hold(number, call)
        if choice.get("finish_reason") is not None:
            changed |= self._release(number, choice)
        return changed

    def _hold(self, number: int, call: dict[str, Any]) -> bool:
        function = call.get("function")
        piece = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(piece, str):
            return False
        self._held.setdefault((number, call.get("index", 0)), HeldArguments()).add(piece)
        function["arguments"] = ""
        return True

    def _release(self, number: int, choice: dict[str, Any]) -> bool:
        """Put the held arguments of ``choice``'s calls into it; whether there were any."""
        keys = [key for key in self._held if key[0] == number]
        if not keys:
            return False
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = choice["delta"] = {}
        calls = delta.get("tool_calls")
        if not isinstance(calls, list):
            calls = delta["tool_calls"] = []
        for key in keys:
            text = self._held.pop(key).checked()
            entry = next((c for c in calls if isinstance(c, dict) and c.get("index", 0) == key[1]), None)
            if entry is None:
                calls.append({"index": key[1], "function": {"arguments": text}})
            else:
                function = entry.get("function")
                if not isinstance(function, dict):
                    function = entry["function"] = {}
                function["arguments"] = text
        return True

    def _drop_repeats(self, choice: int, call: dict[str, Any]) -> bool:
        key = (choice, call.get("index", 0))
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        if key not in self._sent:
            self._sent[key] = (call.get("id"), function.get("name"))
            return False
        sent_id, sent_name = self._sent[key]
        changed = False
        if call.get("id") is not None and call.get("id") == sent_id:
            del call["id"]
            changed = True
        if function.get("name") is not None and function.get("name") == sent_name:
            del function["name"]
            changed = True
        return changed
