"""Bounds on every argument the model sends, so no call can exhaust memory or time.

The model is untrusted input: a 200,000-character place name, a megabyte
chart title or a million-item list must be refused before a tool sees it,
with an error the model can act on.  ``bounded`` rewrites a tool argument's
type so pydantic enforces, by default, a length on every string, a count on
every list and object, a finite range on every number, and clean text
(no NUL, no lone surrogate) everywhere, nested values included.  A signature
states a larger or tighter bound where the argument needs one, with the
aliases below (``Code``, ``Expression``...); the default never overrides it.
Qt-free.
"""

from __future__ import annotations

import math
import re
import types
import typing
from typing import Annotated, Any

from annotated_types import Ge, Gt, Interval, Le, Lt, MaxLen, MinLen

# The bounds on a whole tool call as it arrives are in ``core.call_bounds`` (the transports import no pydantic).
from geogpt_qgis.core.call_bounds import CODE_CHARS

# Defaults for arguments whose signature says nothing more.
TEXT_CHARS = 500  # names, ids, colours, fields, CRSs, URLs
NAME_CHARS = 200  # a place or layer name
LIST_ITEMS = 50
OBJECT_ITEMS = 100  # keys of an object argument (processing parameters)
NESTED_VALUES = 2_000  # every value inside an object argument, all levels together
NESTED_DEPTH = 8
NUMBER_LIMIT = 1e12  # |x|: beyond any coordinate, count or distance a tool takes

# Explicit bounds for the arguments that carry text to be parsed.
EXPRESSION_CHARS = 5_000  # a QGIS expression or CQL2 filter


Code = Annotated[str, MaxLen(CODE_CHARS)]
Sql = Annotated[str, MaxLen(CODE_CHARS)]
Expression = Annotated[str, MaxLen(EXPRESSION_CHARS)]
Name = Annotated[str, MaxLen(NAME_CHARS)]

_SURROGATE = re.compile("[\ud800-\udfff]")
_LENGTH = (MaxLen, MinLen, Interval)
_RANGE = (Ge, Gt, Le, Lt, Interval)


def check_text(value: str) -> str:
    """``value`` if it is clean text; a ``ValueError`` saying where it is not."""
    nul = value.find("\x00")
    if nul >= 0:
        raise ValueError(f"contains a NUL character (\\u0000) at position {nul}; send plain text")
    bad = _SURROGATE.search(value)
    if bad is not None:
        raise ValueError(
            f"contains a lone surrogate ({bad.group()!a}) at position {bad.start()}; send valid Unicode text"
        )
    return value


def check_nested(value: Any) -> Any:
    """An object or list argument's contents: clean, finite and bounded at every level."""
    budget = [NESTED_VALUES]

    def walk(item: Any, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"holds more than {NESTED_VALUES:,} values; send fewer")
        if depth > NESTED_DEPTH:
            raise ValueError(f"is nested more than {NESTED_DEPTH} levels deep")
        if isinstance(item, str):
            if len(item) > CODE_CHARS:
                raise ValueError(f"holds a text of {len(item):,} characters; at most {CODE_CHARS:,}")
            check_text(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"holds {item}, which is not a finite number")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > NUMBER_LIMIT:
            raise ValueError(f"holds the number {item:.3g}, beyond ±{NUMBER_LIMIT:.0e}")
        elif isinstance(item, dict):
            for key, nested in item.items():
                walk(key, depth + 1)
                walk(nested, depth + 1)
        elif isinstance(item, list | tuple):
            for nested in item:
                walk(nested, depth + 1)

    walk(value, 0)
    return value


def bounded(annotation: Any, given: tuple[Any, ...] = ()) -> Any:
    """``annotation`` with the default bounds added where ``given`` (its own constraints) sets none."""
    # pydantic only here: tool modules import the aliases above when the plugin starts, and must stay light.
    from pydantic import AfterValidator, Field

    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *extra = typing.get_args(annotation)
        return _annotated(bounded(base, (*given, *extra)), *extra)
    if origin is typing.Union or origin is types.UnionType:
        members = tuple(a if a is type(None) else bounded(a, given) for a in typing.get_args(annotation))
        return typing.Union[members]
    has_length = any(isinstance(g, _LENGTH) for g in given)
    has_range = any(isinstance(g, _RANGE) for g in given)
    if annotation is str:
        return _annotated(str, *([] if has_length else [MaxLen(TEXT_CHARS)]), AfterValidator(check_text))
    if annotation is list or origin is list:
        item = (typing.get_args(annotation) or (Any,))[0]
        items = types.GenericAlias(list, (bounded(item),))  # list[X] for an X known only at run time
        return _annotated(items, *([] if has_length else [MaxLen(LIST_ITEMS)]))
    if annotation is dict or origin is dict:
        return _annotated(annotation, *([] if has_length else [MaxLen(OBJECT_ITEMS)]), AfterValidator(check_nested))
    if annotation is Any:
        return Annotated[Any, AfterValidator(check_nested)]
    if annotation is bool:
        return annotation
    if annotation is float:
        limits = [] if has_range else [Ge(-NUMBER_LIMIT), Le(NUMBER_LIMIT)]
        return _annotated(float, Field(allow_inf_nan=False), *limits)
    if annotation is int:
        return _annotated(int, *([] if has_range else [Ge(-int(NUMBER_LIMIT)), Le(int(NUMBER_LIMIT))]))
    return annotation


def _annotated(base: Any, *metadata: Any) -> Any:
    return Annotated[(base, *metadata)] if metadata else base


def valid_unicode(value: Any) -> Any:
    """``value`` (text, or lists and dicts of it) with each lone surrogate replaced by U+FFFD.

    A model's reply can carry one (JSON's ``"\\udfff"`` decodes to it), and no
    UTF-8 encoder takes it: the run log, the conversation store and the next
    request to the model would all fail on it.  The reply is cleaned once, as it
    arrives, so the rest of the run only ever sees valid text.
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        return [valid_unicode(item) for item in value]
    if isinstance(value, dict):
        return {valid_unicode(key): valid_unicode(item) for key, item in value.items()}
    return value


def clean_reply(reply: Any) -> Any:
    """A model reply (an ``AIMessage``) whose text and tool calls are valid Unicode."""
    reply.content = valid_unicode(reply.content)
    for call in [*reply.tool_calls, *reply.invalid_tool_calls]:
        call.update(valid_unicode(dict(call)))
    return reply
