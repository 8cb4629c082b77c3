"""Turn tool functions into model-facing tools, and run the model's calls safely.

Every way a call can go wrong (unknown tool, arguments that are not JSON,
missing or mistyped arguments, a mistake the tool detects, an unexpected
exception) becomes an error message for the model, worded so it can correct
itself.  Only Stop (``RunCancelled``) escapes.
"""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import functools
import json
import logging
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field, ValidationError, create_model

from geogpt_qgis.agent.aliases import ALIASES, routed
from geogpt_qgis.core.approval import (
    ApprovalRequest,
    Decision,
    approval_preview,
    current_approval,
    current_decision,
)
from geogpt_qgis.core.artifacts import EMPTY, ToolArtifact, content_and_artifact
from geogpt_qgis.core.bounds import bounded, check_text
from geogpt_qgis.core.call_bounds import REFUSED_ARGUMENTS
from geogpt_qgis.core.cancel import RunCancelled
from geogpt_qgis.core.fuzzy import closest_names, similarity
from geogpt_qgis.core.provenance import ToolCall, current_call
from geogpt_qgis.core.secrets_scrub import scrub, scrub_value
from geogpt_qgis.core.targets import Target, broken_contract
from geogpt_qgis.core.text import bound_tokens
from geogpt_qgis.core.tokens import estimate_tokens
from geogpt_qgis.core.undo_scope import with_undo_notes
from geogpt_qgis.tools.base import ToolError, ToolFunction

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

log = logging.getLogger(__name__)

# Called (on a worker thread) after each call that added layers: the tool's name, its arguments, its artifact.
AfterCall = Callable[[str, Mapping[str, Any], ToolArtifact], None]


@dataclass(frozen=True)
class ToolOutcome:
    """What a call produced: the text the model will read, whether it worked, and what it used and made.

    Every result and error leaves the toolkit as one of these, so this is where
    secrets are scrubbed (``core.secrets_scrub``): a server error echoing the
    API key, a connection string with its password, never reach the model,
    nor the dock, the run log or the store through the artifact.
    """

    ok: bool
    text: str
    artifact: ToolArtifact = EMPTY

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", scrub(self.text))
        if not self.artifact.empty:
            object.__setattr__(self, "artifact", ToolArtifact.from_dict(scrub_value(self.artifact.to_dict())))


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(False, f"Error: {text}")


class Toolkit:
    """The tools of one run, by name.

    ``offered`` names the tools whose schemas the model is sent (``None``:
    all; ``agent.profiles``: the compact profile sends a few).  The toolkit
    still knows and runs every tool: a call to one it did not send is checked,
    approved and run like any other, so the tools ``describe_capabilities``
    names stay usable.  ``after_call`` sees every call that added layers, once,
    whichever family made them (``tools.provenance`` records where they came from).
    ``before_call`` runs on a worker thread before each call (``tools.result_copies``
    finishes storing the results of the calls before it).
    """

    def __init__(
        self,
        functions: Sequence[ToolFunction],
        offered: Collection[str] | None = None,
        after_call: AfterCall | None = None,
        before_call: Callable[[], object] | None = None,
    ) -> None:
        self._offered = None if offered is None else frozenset(offered)
        self._after_call = after_call
        self._before_call = before_call
        self._tools: dict[str, StructuredTool] = {}
        for function in functions:
            tool = StructuredTool.from_function(function, parse_docstring=True, response_format="content_and_artifact")
            tool.args_schema = _bounded_model(tool.args_schema)
            # The schema came from the tool method itself; the tool answers (text, artifact) as LangChain wants.
            tool.func = _content_and_artifact(function)
            self._tools[tool.name] = tool

    @property
    def tools(self) -> list[StructuredTool]:
        return list(self._tools.values())

    @functools.cached_property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools as the model is sent them: OpenAI function format, with nothing that tells it nothing."""
        return [compact_schema(_sent_schema(self._tools[name])) for name in self.offered]

    @functools.cached_property
    def unsent_schemas(self) -> list[dict[str, Any]]:
        """The tools the model is not sent (a compact profile), as ``schemas`` would send them."""
        return [compact_schema(_sent_schema(tool)) for name, tool in self._tools.items() if name not in self.offered]

    @property
    def offered(self) -> list[str]:
        """The names of the tools the model is sent, in order (the others run too when called)."""
        return [name for name in self._tools if self._offered is None or name in self._offered]

    @functools.cached_property
    def bounded_schemas(self) -> list[dict[str, Any]]:
        """The tools' full schemas, with every bound the toolkit enforces (the model is sent them without)."""
        return [_sent_schema(t) for t in self.tools]

    @functools.cached_property
    def schema_tokens(self) -> int:
        """What the tool schemas cost in every prompt."""
        return estimate_tokens(json.dumps(self.schemas, ensure_ascii=False))

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def _routed(self, name: str, args: Any) -> tuple[str, Any]:
        """An old tool name (``agent.aliases``: merged tools) as the tool that answers it now."""
        return routed(name, args, self._tools.__contains__)

    def _parameters(self, tool: StructuredTool) -> list[str]:
        schema = tool.args_schema
        return list(getattr(schema, "model_fields", {}))

    def unknown_tool(self, name: str) -> ToolOutcome:
        # Close to an old name ("list_layer"): the tool that answers it now is the one to suggest.
        known = {**{old: new for old, (new, _) in ALIASES.items() if new in self._tools}, **{n: n for n in self._tools}}
        close = closest_names(_reading_verb_as_describe(name, known), known) if len(name) <= _SHOWN_CHARS else []
        close = list(dict.fromkeys(known[n] for n in close))
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        if len(close) == 1:  # what it does, so that the model can call it from this message alone
            hint += f" ({_summary(self._tools[close[0]].description)})"
        return _error(f"there is no tool {_shown(name)}.{hint} Available tools: {', '.join(self._tools)}.")

    def malformed_call(self, name: str, problem: str) -> ToolOutcome:
        """For a call whose arguments could not even be parsed as JSON."""
        name, _ = self._routed(name, None)
        tool = self._tools.get(name)
        if tool is None:
            return self.unknown_tool(name)
        params = ", ".join(self._parameters(tool)) or "none"
        sent = _received(problem)
        mistake = f": {json_mistake(sent)}" if sent is not None else ""
        return _error(
            f"the arguments of your {name} call are not valid JSON ({_first_line(problem)}){mistake}. "
            f"Call it again with a JSON object; its parameters are: {params}."
        )

    def check_arguments(self, name: str, args: Any) -> dict[str, Any] | ToolOutcome:
        """Validated keyword arguments for ``name``, or the error to send back."""
        name, args = self._routed(name, args)
        tool = self._tools.get(name)
        if tool is None:
            return self.unknown_tool(name)
        params = self._parameters(tool)
        args = _decoded(args)
        refused = args.get(REFUSED_ARGUMENTS) if isinstance(args, dict) else None
        if isinstance(refused, str):  # too long or deep to be read as they arrived (``agent.call_arguments``)
            return _error(f"your {name} call was not run: {refused}. Call it again with shorter arguments.")
        if not isinstance(args, dict):
            mistake = f" ({json_mistake(args)})" if isinstance(args, str) and len(args) <= _SHOWN_CHARS else ""
            return _error(
                f"{name} takes a JSON object of arguments ({', '.join(params) or 'none'}), not {_shown(args)}{mistake}."
            )
        schema = tool.args_schema
        fields = getattr(schema, "model_fields", {})
        unknown = [key for key in args if key not in params]
        if unknown:
            return _error(self._unknown_arguments(name, args, fields))
        args = {
            key: _decoded(value) if _wants_structure(fields[key].annotation) else value for key, value in args.items()
        }
        try:
            validated = schema.model_validate(args)  # type: ignore[union-attr]
        except ValidationError as exc:
            return _error(f"invalid arguments for {name}: {_describe_validation(exc, fields)}.")
        return {key: getattr(validated, key) for key in params}

    def _unknown_arguments(self, name: str, args: dict[str, Any], fields: dict[str, Any]) -> str:
        """``name has no argument 'x'; valid arguments: ...``, with the tool that takes them or what is missing.

        Small models call one tool with another's arguments (describe_layer with
        run_algorithm's ``algorithm`` and ``parameters``), or spread what belongs
        in one object argument over the top level (run_algorithm's ``INPUT``):
        the message says which tool takes them, or gives the call with them
        nested where they validate, or which required arguments are missing.
        """
        params = self._parameters(self._tools[name])
        unknown = [key for key in args if key not in params]
        valid = ", ".join(params) if params else "it takes no arguments"
        named = ", ".join(_shown(k) for k in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        text = f"{name} has no argument {named}; valid arguments: {valid}."
        others = [
            other
            for other, tool in self._tools.items()
            if other != name and set(unknown) <= set(self._parameters(tool))
        ]
        if len(others) == 1:  # only where they point to one tool ('layer' is everybody's)
            return f"{text} {others[0]} takes {'it' if len(unknown) == 1 else 'them'}."
        missing = [key for key in params if key not in args and fields[key].is_required()]
        if len(missing) == 1:
            nested = {**{k: v for k, v in args.items() if k in params}, missing[0]: {k: args[k] for k in unknown}}
            try:
                self._tools[name].args_schema.model_validate(nested)  # type: ignore[union-attr]
            except ValidationError:
                pass
            else:
                shown = json.dumps(nested, ensure_ascii=False, default=str)
                if len(shown) <= 2 * _SHOWN_CHARS:
                    return f"{text} Did you mean {shown}?"
        if missing:
            about = [
                f"{k!r}" + (f": {_summary(fields[k].description)}" if fields[k].description else "") for k in missing
            ]
            text += " Missing: " + "; ".join(about[:3])
            text += "" if text.endswith((".", ")")) else "."
        return text

    async def approval_request(self, call_id: str, name: str, args: Any) -> ApprovalRequest | ToolOutcome | None:
        """What a call would do, if its tool is gated and this call needs the user's approval.

        Calls with invalid arguments, or whose preview finds a mistake, need no
        approval: running them only returns the error to the model.  A preview
        that fails unexpectedly gives the error (a ``ToolOutcome``) to answer
        the call with, without running it.
        """
        name, args = self._routed(name, args)
        tool = self._tools.get(name)
        preview = approval_preview(tool.func) if tool is not None and tool.func is not None else None
        if preview is None:
            return None
        checked = self.check_arguments(name, args)
        if isinstance(checked, ToolOutcome):
            return None
        try:
            request = await asyncio.to_thread(preview, **checked)
        except (RunCancelled, asyncio.CancelledError):
            raise
        except ToolError:
            return None
        except Exception as exc:
            # A preview that breaks must not end the run: the call is answered with the error, never run.
            log.exception("the approval preview of %s failed", name)
            return _error(f"{name} could not be checked before approval: {type(exc).__name__}: {_clipped(exc)}")
        if request is not None:
            # The preview is shown, stored with the paused run and logged: no secrets in it either.
            request.action, request.details = scrub(request.action), scrub(request.details)
            # What Undo run cannot take back is said here, once for every tool, from the effects.
            request.notes = with_undo_notes([scrub(item) for item in request.notes], request.effects)
            request.targets = [Target.from_value(scrub_value(t.to_dict())) for t in request.targets]
            request.tool, request.call_id, request.args = name, call_id, scrub_value(dict(checked))
        return request

    async def broken_contract(self, name: str, args: Any, approved: ApprovalRequest) -> str | None:
        """Why ``args`` may not run under the approval of ``approved`` (``None``: it may).

        The call is previewed again, now: it must resolve to exactly the targets
        the user approved (``core.targets``), or to none if none were shown.
        """
        now = await self.approval_request(approved.call_id, name, args)
        if isinstance(now, ToolOutcome):
            return now.text.removeprefix("Error: ")
        problem = broken_contract(approved.targets, now.targets if now is not None else [])
        if problem is None and now is not None:
            wider = [kind for kind in now.effects if kind not in approved.effects]
            if wider:
                problem = f"it would now also do more ({', '.join(wider)})"
        return problem

    async def run(
        self, name: str, args: Any, decision: Decision | None = None, approved: ApprovalRequest | None = None
    ) -> ToolOutcome:
        """Run one call on a worker thread; ``RunCancelled`` propagates, everything else is reported.

        ``decision`` is the user's answer for a gated call; the tool can see it
        (``approval_granted``) and refuses to act without it.  ``approved`` is
        the request the user approved: the call runs only if it still resolves
        to exactly its targets (unless the user edited the call's text: then
        what they wrote is what they approved), and the tool sees it
        (``approved_targets``) to act on those targets by id, not by name.
        """
        name, args = self._routed(name, args)
        checked = self.check_arguments(name, args)
        if isinstance(checked, ToolOutcome):
            return checked
        function = self._tools[name].func
        if function is None:
            return _error(f"{name} cannot be run")
        if approved is not None and decision is not None and decision.approved and decision.edited is None:
            problem = await self.broken_contract(name, args, approved)
            if problem is not None:
                return ToolOutcome(False, contract_message(name, problem))
        # An edited call is bound to what the user wrote, not to the targets of the text they replaced.
        binding = approved if decision is not None and decision.approved and decision.edited is None else None
        if self._before_call is not None:  # an earlier call's results are stored before anything reads them
            await asyncio.to_thread(self._before_call)
        # The call as its results' provenance names it: the store writes the record with each stored table.
        call_token = current_call.set(ToolCall(name, dict(checked), dt.datetime.now(dt.UTC)))
        try:
            return await self._run_checked(name, function, checked, decision, binding)
        finally:
            current_call.reset(call_token)

    async def _run_checked(
        self,
        name: str,
        function: Callable[..., Any],
        checked: dict[str, Any],
        decision: Decision | None,
        binding: ApprovalRequest | None,
    ) -> ToolOutcome:
        token = current_decision.set(decision)
        approval_token = current_approval.set(binding)
        try:
            text, artifact = await asyncio.to_thread(function, **checked)
        except (RunCancelled, asyncio.CancelledError):
            raise
        except ToolError as exc:
            return _error(str(exc))
        except Exception as exc:
            log.exception("tool %s failed", name)
            return _error(f"{name} failed unexpectedly: {type(exc).__name__}: {_clipped(exc)}")
        finally:
            current_approval.reset(approval_token)
            current_decision.reset(token)
        if self._after_call is not None and artifact.added:
            await self._after(self._after_call, name, checked, artifact)
        return ToolOutcome(True, bound_tokens(text), artifact)

    @staticmethod
    async def _after(after_call: AfterCall, name: str, checked: dict[str, Any], artifact: ToolArtifact) -> None:
        """``after_call`` for a call that added layers (their provenance): its failure is logged, the call stands."""
        try:
            await asyncio.to_thread(after_call, name, checked, artifact)
        except asyncio.CancelledError:
            raise
        except RunCancelled:  # stopped right after the call: the run ends at its next step, with this result
            log.debug("stopped before the provenance of %s was recorded", name)
        except Exception:
            log.exception("could not record the provenance of the layers %s added", name)


def contract_message(name: str, problem: str) -> str:
    """What the model reads when an approved call no longer resolves to what the user approved."""
    return (
        f"Not run: what this call would change is no longer what the user approved: {problem}. Nothing was "
        f"changed. If the change is still wanted, call {name} again: the user will be asked about it as it is now."
    )


def _content_and_artifact(function: ToolFunction) -> Any:
    """``function`` answering ``(text, artifact)`` always, also where it returns plain text."""

    @functools.wraps(function)
    def call(**kwargs: Any) -> tuple[str, ToolArtifact]:
        return content_and_artifact(function(**kwargs))

    return call


def _bounded_model(schema: Any) -> type[BaseModel]:
    """A tool's argument model with the default bounds (``core.bounds``) on every argument."""
    fields: dict[str, Any] = {}
    for name, field in schema.model_fields.items():
        annotation = bounded(field.annotation, tuple(field.metadata))
        if field.metadata:
            annotation = Annotated[(annotation, *field.metadata)]
        spec = Field(description=field.description)
        if not field.is_required():
            spec = Field(field.default, description=field.description)
        fields[name] = (annotation, spec)
    return create_model(schema.__name__, __doc__=schema.__doc__, **fields)


def _sent_schema(tool: StructuredTool) -> dict[str, Any]:
    """A tool's schema as the providers send it (OpenAI function format)."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without what costs tokens and tells the model nothing.

    Every model call pays for every schema, so an optional ``list | None``
    is sent as the list type (``anyOf`` with ``null`` costs ~20 tokens), empty
    defaults (``null``, ``""``, ``false``) are dropped (not being required says
    the same), ``additionalProperties: true`` is dropped (JSON Schema's
    default), and so are the toolkit's default bounds (``maxLength``...): they
    are enforced all the same, and a call past one gets an error that states it.
    """
    function = dict(schema["function"])
    parameters = dict(function.get("parameters") or {})
    properties = {}
    for name, spec in (parameters.get("properties") or {}).items():
        spec = dict(spec)
        variants = [v for v in spec.get("anyOf", ()) if v.get("type") != "null"]
        if "anyOf" in spec and len(variants) == 1:
            del spec["anyOf"]
            spec.update(variants[0])
        if "default" in spec and _says_nothing(spec["default"]):
            del spec["default"]
        if spec.get("additionalProperties") is True:
            del spec["additionalProperties"]
        properties[name] = _unbounded(spec)
    parameters["properties"] = properties
    function["parameters"] = parameters
    return {**schema, "function": function}


_BOUND_KEYWORDS = frozenset({"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minimum", "maximum"})


def _unbounded(spec: Any) -> Any:
    """``spec`` without bound keywords, at every level (items, variants)."""
    if isinstance(spec, dict):
        return {k: _unbounded(v) for k, v in spec.items() if k not in _BOUND_KEYWORDS}
    if isinstance(spec, list):
        return [_unbounded(v) for v in spec]
    return spec


def _says_nothing(default: Any) -> bool:
    return default is None or default is False or default == ""


def _decoded(value: Any) -> Any:
    """A JSON object or array sent as a string (small models often do) decoded; anything else as it was."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested beyond the parser
            return value
    return value


def _wants_structure(annotation: Any) -> bool:
    """Whether a parameter takes a list or dict and never a plain string (``list[str] | None`` does)."""
    members = [annotation]
    kinds = set()
    while members:
        current = members.pop()
        origin = typing.get_origin(current)
        if origin is typing.Union or origin is types.UnionType:
            members += [a for a in typing.get_args(current) if a is not type(None)]
        elif origin is Annotated:
            members.append(typing.get_args(current)[0])
        else:
            kinds.add(origin or current)
    return str not in kinds and bool(kinds & {list, dict, tuple})


def _describe_validation(exc: ValidationError, fields: dict[str, Any] | None = None) -> str:
    parts = []
    for error in exc.errors(include_url=False)[:5]:
        where = _location(error.get("loc", ()))
        kind, given, limits = error.get("type"), error.get("input"), error.get("ctx") or {}
        if kind == "missing":
            field = (fields or {}).get(where)
            about = f" ({field.description.strip()})" if field is not None and field.description else ""
            parts.append(f"missing required argument {where!r}{about}")
        elif kind in ("string_too_long", "too_long") and isinstance(given, str):
            parts.append(f"{where} is {len(given):,} characters; at most {limits.get('max_length', 0):,}")
        elif kind == "string_unicode" and isinstance(given, str):  # a lone surrogate: say where
            parts.append(f"{where} {_unclean(given)}")
        elif kind in ("too_long", "too_short"):
            size = limits.get("actual_length", len(given) if hasattr(given, "__len__") else "?")
            bound = limits.get("max_length") if kind == "too_long" else limits.get("min_length")
            word = "at most" if kind == "too_long" else "at least"
            parts.append(f"{where} has {size:,} items; {word} {bound:,}")
        elif kind == "value_error":
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"{where} {message}")
        else:
            parts.append(f"{where!r}: {error.get('msg', 'invalid')} (got {_shown(given)})")
    return "; ".join(parts)


def _unclean(text: str) -> str:
    try:
        check_text(text)
    except ValueError as exc:
        return str(exc)
    return "is not valid Unicode text"


def _location(loc: Sequence[Any]) -> str:
    """``names[3]`` for pydantic's ``("names", 3)``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "arguments"


# The most of a value the model sent that an error repeats back to it.
_SHOWN_CHARS = 80


def _shown(value: Any) -> str:
    """``repr(value)``, cut short: an error must never echo a megabyte back into the conversation."""
    if isinstance(value, str) and len(value) > _SHOWN_CHARS:
        return f"{value[:_SHOWN_CHARS]!r}... ({len(value):,} characters)"
    if isinstance(value, list | dict | tuple) and len(value) > 20:
        return f"a {type(value).__name__} of {len(value):,} items"
    text = repr(value)
    return text if len(text) <= 2 * _SHOWN_CHARS else f"{text[: 2 * _SHOWN_CHARS]}..."


def _clipped(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 500 else f"{text[:500]}... ({len(text):,} characters)"


_READING_VERBS = ("get", "list", "show", "fetch", "read", "query", "retrieve", "inspect")


def _reading_verb_as_describe(name: str, known: Any) -> str:
    """``describe_layers`` for ``get_layers``, when that is closer to a tool than the name itself.

    Small models name a tool after what they want (get_layers, show_fields);
    said with ``describe`` it finds describe_layer, where the name as written
    finds set_layer first.
    """
    verb, _, rest = name.partition("_")
    if verb.lower() not in _READING_VERBS or not rest:
        return name
    described = f"describe_{rest}"
    best = max((similarity(name, k) for k in known), default=0.0)
    return described if max((similarity(described, k) for k in known), default=0.0) > best else name


def _summary(description: str) -> str:
    """A tool's or argument's description, cut to what fits in an error message."""
    text = " ".join(description.split())
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


_SUMMARY_CHARS = 120


def _received(problem: str) -> str | None:
    """What the model sent, when ``problem`` quotes it whole (``received '...'``, as the graph words it)."""
    if not problem.startswith("received "):
        return None
    try:
        sent = ast.literal_eval(problem.removeprefix("received ").strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    # The graph cuts a long text to 80 characters and an ellipsis: not whole, so not judged.
    return sent if isinstance(sent, str) and not sent.endswith("…") else None


def json_mistake(text: str) -> str:
    """What is wrong with arguments that should be a JSON object, in a few words, with the fix where it is sure.

    The mistakes small models make: single quotes (Python's dict syntax; the
    object is then given back in JSON), a call cut off before its end, a bare
    value, ``key=value``.
    """
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except ValueError as exc:
        error: json.JSONDecodeError | None = exc if isinstance(exc, json.JSONDecodeError) else None
    except RecursionError:
        return "it is nested too deep"
    else:
        if isinstance(value, dict):  # valid, but it reached here as text
            return "send the object itself, not as text"
        return f"it is {_JSON_KINDS.get(type(value), 'a number')}, not an object"
    if not stripped.startswith("{"):
        return 'a JSON object starts with "{"'
    if "'" in stripped and len(stripped) <= _LITERAL_CHARS:
        try:
            python = ast.literal_eval(stripped)  # a literal only: nothing is run
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            python = None
        if isinstance(python, dict):
            fixed = json.dumps(python, ensure_ascii=False, default=str)
            return (
                f"JSON needs double quotes: {fixed}" if len(fixed) <= 2 * _SHOWN_CHARS else "JSON needs double quotes"
            )
    if error is not None and (error.pos >= len(stripped) or error.msg.startswith("Unterminated string")):
        return "it is cut off before its end"
    if "'" in stripped:
        return "JSON needs double quotes"
    return f"{error.msg} at character {error.pos + 1}" if error is not None else "it is not JSON"


_LITERAL_CHARS = 2000
_JSON_KINDS = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    interesting = [line for line in lines if "Error" in line or "error" in line]
    return (interesting or lines or [text])[-1].strip()[:200]
