"""Old tool names that still work: each is routed to the tool that took it over, its arguments adapted.

Tools were merged to keep the prompt budget (issue 23): ``list_layers`` into
``describe_layer``, ``search_algorithms`` and ``describe_algorithm`` into
``find_algorithm``, ``list_tables`` into ``describe_table``, ``remove_layer``
into ``set_layer`` (``remove=true``, still approved by the user).  Stored
conversations, recipes, MCP clients and small models trained on older
transcripts still call the old names, so the toolkit answers them here.  The
aliases are never sent in the schemas (they would cost tokens in every call);
a call by an old name runs the new tool, and its errors name the new tool,
which is the one to use from then on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Adapter = Callable[[dict[str, Any]], dict[str, Any]]


def _renamed(**names: str) -> Adapter:
    """Arguments with the keys in ``names`` renamed (old -> new); any other key is passed on as it is."""
    return lambda args: {names.get(key, key): value for key, value in args.items()}


def _tables(args: dict[str, Any]) -> dict[str, Any]:
    """``list_tables(connection, schema_name)`` as ``describe_table(connection, tables=["schema.*"])``."""
    adapted = {key: value for key, value in args.items() if key != "schema_name"}
    schema = args.get("schema_name")
    if isinstance(schema, str) and schema.strip():
        adapted["tables"] = [f"{schema.strip()}.*"]
    elif schema not in (None, ""):
        adapted["schema_name"] = schema  # not text: the new tool reports it as an unknown argument
    return adapted


def _removal(args: dict[str, Any]) -> dict[str, Any]:
    """``remove_layer(layer)`` as ``set_layer(layer, remove=true)``: the same approval card, the same result."""
    return {**args, "remove": True}


# old name -> (the tool that does it now, how its arguments change)
ALIASES: dict[str, tuple[str, Adapter]] = {
    "list_layers": ("describe_layer", _renamed()),
    "search_algorithms": ("find_algorithm", _renamed()),
    "describe_algorithm": ("find_algorithm", _renamed(algorithm="query")),
    "list_tables": ("describe_table", _tables),
    "remove_layer": ("set_layer", _removal),
}


def routed(name: str, args: Any, known: Callable[[str], bool]) -> tuple[str, Any]:
    """``(name, args)`` for the tool that answers a call: an alias whose new tool is ``known`` is routed.

    A real tool of that name wins (nothing is routed then), and arguments that
    are not a JSON object are left for the new tool's own error.
    """
    alias = ALIASES.get(name)
    if alias is None or known(name) or not known(alias[0]):
        return name, args
    tool, adapt = alias
    decoded = _decoded(args)
    return tool, adapt(decoded) if isinstance(decoded, dict) else args


def _decoded(args: Any) -> Any:
    """Arguments as a dict where they are one (also sent as a JSON string, or nothing at all)."""
    if args is None or (isinstance(args, str) and not args.strip()):
        return {}
    if isinstance(args, str) and args.strip().startswith("{"):
        try:
            return json.loads(args)
        except (ValueError, RecursionError):
            return args
    return args
