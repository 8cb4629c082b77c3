"""Turn tool functions into model-facing tools, and run the model's calls safely.

Every way a call can go wrong (unknown tool, arguments that are not JSON,
missing or mistyped arguments, a mistake the tool detects, an unexpected
exception) becomes an error message for the model, worded so it can correct
itself.  Only Stop (``RunCancelled``) escapes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.tools import StructuredTool
from pydantic import ValidationError

from geogpt_qgis.core.approval import ApprovalRequest, Decision, current_decision
from geogpt_qgis.core.cancel import RunCancelled
from geogpt_qgis.core.fuzzy import closest_names
from geogpt_qgis.core.text import bound_tokens
from geogpt_qgis.core.tokens import estimate_tokens
from geogpt_qgis.tools.base import ToolError, ToolFunction

if TYPE_CHECKING:
    from collections.abc import Sequence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    """What a call produced: the text the model will read, and whether it worked."""

    ok: bool
    text: str


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(False, f"Error: {text}")


class Toolkit:
    """The tools of one run, by name."""

    def __init__(self, functions: Sequence[ToolFunction]) -> None:
        self._tools: dict[str, StructuredTool] = {}
        for function in functions:
            tool = StructuredTool.from_function(function, parse_docstring=True)
            self._tools[tool.name] = tool

    @property
    def tools(self) -> list[StructuredTool]:
        return list(self._tools.values())

    @functools.cached_property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools as the model is sent them: OpenAI function format, with nothing that tells it nothing."""
        return [compact_schema(_sent_schema(t)) for t in self.tools]

    @functools.cached_property
    def schema_tokens(self) -> int:
        """What the tool schemas cost in every prompt."""
        return estimate_tokens(json.dumps(self.schemas, ensure_ascii=False))

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def _parameters(self, tool: StructuredTool) -> list[str]:
        schema = tool.args_schema
        return list(getattr(schema, "model_fields", {}))

    def unknown_tool(self, name: str) -> ToolOutcome:
        close = closest_names(name, self._tools)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        return _error(f"there is no tool {name!r}.{hint} Available tools: {', '.join(self._tools)}.")

    def malformed_call(self, name: str, problem: str) -> ToolOutcome:
        """For a call whose arguments could not even be parsed as JSON."""
        tool = self._tools.get(name)
        if tool is None:
            return self.unknown_tool(name)
        params = ", ".join(self._parameters(tool)) or "none"
        return _error(
            f"the arguments of your {name} call are not valid JSON ({_first_line(problem)}). "
            f"Call it again with a JSON object; its parameters are: {params}."
        )

    def check_arguments(self, name: str, args: Any) -> dict[str, Any] | ToolOutcome:
        """Validated keyword arguments for ``name``, or the error to send back."""
        tool = self._tools.get(name)
        if tool is None:
            return self.unknown_tool(name)
        params = self._parameters(tool)
        args = _decoded(args)
        if not isinstance(args, dict):
            return _error(f"{name} takes a JSON object of arguments ({', '.join(params) or 'none'}), not {args!r}.")
        unknown = [key for key in args if key not in params]
        if unknown:
            valid = ", ".join(params) if params else "it takes no arguments"
            return _error(f"{name} has no argument {', '.join(repr(k) for k in unknown)}; valid arguments: {valid}.")
        schema = tool.args_schema
        fields = getattr(schema, "model_fields", {})
        args = {
            key: _decoded(value) if _wants_structure(fields[key].annotation) else value for key, value in args.items()
        }
        try:
            validated = schema.model_validate(args)  # type: ignore[union-attr]
        except ValidationError as exc:
            return _error(f"invalid arguments for {name}: {_describe_validation(exc, fields)}.")
        return {key: getattr(validated, key) for key in params}

    async def approval_request(self, call_id: str, name: str, args: Any) -> ApprovalRequest | None:
        """What a call would do, if its tool is gated and this call needs the user's approval.

        Calls with invalid arguments, or whose preview finds a mistake, need no
        approval: running them only returns the error to the model.
        """
        tool = self._tools.get(name)
        function = tool.func if tool is not None else None
        preview_name = getattr(function, "approval_preview", None)
        if preview_name is None:
            return None
        checked = self.check_arguments(name, args)
        if isinstance(checked, ToolOutcome):
            return None
        preview = getattr(function.__self__, preview_name)  # type: ignore[union-attr]
        try:
            request = await asyncio.to_thread(preview, **checked)
        except (RunCancelled, asyncio.CancelledError):
            raise
        except ToolError:
            return None
        if request is not None:
            request.tool, request.call_id, request.args = name, call_id, dict(checked)
        return request

    async def run(self, name: str, args: Any, decision: Decision | None = None) -> ToolOutcome:
        """Run one call on a worker thread; ``RunCancelled`` propagates, everything else is reported.

        ``decision`` is the user's answer for a gated call; the tool can see it
        (``approval_granted``) and refuses to act without it.
        """
        checked = self.check_arguments(name, args)
        if isinstance(checked, ToolOutcome):
            return checked
        function = self._tools[name].func
        if function is None:
            return _error(f"{name} cannot be run")
        token = current_decision.set(decision)
        try:
            text = await asyncio.to_thread(function, **checked)
        except (RunCancelled, asyncio.CancelledError):
            raise
        except ToolError as exc:
            return _error(str(exc))
        except Exception as exc:
            log.exception("tool %s failed", name)
            return _error(f"{name} failed unexpectedly: {type(exc).__name__}: {exc}")
        finally:
            current_decision.reset(token)
        return ToolOutcome(True, bound_tokens(str(text)))


def _sent_schema(tool: StructuredTool) -> dict[str, Any]:
    """A tool's schema as the providers send it (OpenAI function format)."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without what costs tokens and tells the model nothing.

    Every model call pays for every schema, so an optional ``list | None``
    is sent as the list type (``anyOf`` with ``null`` costs ~20 tokens), empty
    defaults (``null``, ``""``, ``false``) are dropped (not being required says
    the same), and ``additionalProperties: true`` is dropped (JSON Schema's
    default).
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
        properties[name] = spec
    parameters["properties"] = properties
    function["parameters"] = parameters
    return {**schema, "function": function}


def _says_nothing(default: Any) -> bool:
    return default is None or default is False or default == ""


def _decoded(value: Any) -> Any:
    """A JSON object or array sent as a string (small models often do) decoded; anything else as it was."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
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
        else:
            kinds.add(origin or current)
    return str not in kinds and bool(kinds & {list, dict, tuple})


def _describe_validation(exc: ValidationError, fields: dict[str, Any] | None = None) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        if error.get("type") == "missing":
            field = (fields or {}).get(where)
            about = f" ({field.description.strip()})" if field is not None and field.description else ""
            parts.append(f"missing required argument {where!r}{about}")
        else:
            parts.append(f"{where!r}: {error.get('msg', 'invalid')} (got {error.get('input')!r})")
    return "; ".join(parts)


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    interesting = [line for line in lines if "Error" in line or "error" in line]
    return (interesting or lines or [text])[-1].strip()[:200]
