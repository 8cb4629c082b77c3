"""Merged tools' old names still work: the toolkit routes them, never sends them (agent/aliases.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from geogpt_qgis.agent.aliases import ALIASES
from geogpt_qgis.agent.toolkit import Toolkit


def describe_layer(layer: str = "", at: str = "") -> str:
    """Describe a layer. No layer: list them."""
    return f"describe_layer(layer={layer!r}, at={at!r})"


def find_algorithm(query: str) -> str:
    """Search algorithms, or describe one."""
    return f"find_algorithm(query={query!r})"


def describe_table(tables: list[str] | None = None, connection: str = "") -> str:
    """Describe tables. No tables: list them."""
    return f"describe_table(tables={tables!r}, connection={connection!r})"


@pytest.fixture
def toolkit() -> Toolkit:
    return Toolkit([describe_layer, find_algorithm, describe_table])


def run(toolkit: Toolkit, name: str, args: object):
    return asyncio.run(toolkit.run(name, args))


@pytest.mark.parametrize(
    ("old", "args", "runs"),
    [
        ("list_layers", {}, "describe_layer(layer='', at='')"),
        ("list_layers", None, "describe_layer(layer='', at='')"),
        ("list_layers", "", "describe_layer(layer='', at='')"),
        ("list_layers", "{}", "describe_layer(layer='', at='')"),
        ("search_algorithms", {"query": "count points in polygon"}, "find_algorithm(query='count points in polygon')"),
        ("describe_algorithm", {"algorithm": "native:buffer"}, "find_algorithm(query='native:buffer')"),
        ("describe_algorithm", json.dumps({"algorithm": "buffer"}), "find_algorithm(query='buffer')"),
        ("list_tables", {}, "describe_table(tables=None, connection='')"),
        ("list_tables", {"connection": "elvbury"}, "describe_table(tables=None, connection='elvbury')"),
        (
            "list_tables",
            {"connection": "elvbury", "schema_name": " geogpt_test "},
            "describe_table(tables=['geogpt_test.*'], connection='elvbury')",
        ),
        ("list_tables", {"schema_name": ""}, "describe_table(tables=None, connection='')"),
    ],
)
def test_an_old_name_runs_the_tool_that_took_it_over(toolkit, old, args, runs):
    outcome = run(toolkit, old, args)
    assert outcome.ok, outcome.text
    assert outcome.text == runs


def test_old_names_are_never_sent_to_the_model(toolkit):
    sent = {schema["function"]["name"] for schema in toolkit.schemas}
    assert sent == {"describe_layer", "find_algorithm", "describe_table"}
    assert not sent & set(ALIASES)
    assert toolkit.names == ["describe_layer", "find_algorithm", "describe_table"]


def test_mistakes_in_an_old_call_are_told_in_the_new_tools_terms(toolkit):
    extra = run(toolkit, "describe_algorithm", {"algorithm": "native:buffer", "verbose": True})
    assert not extra.ok and extra.text == "Error: find_algorithm has no argument 'verbose'; valid arguments: query."
    missing = run(toolkit, "search_algorithms", {})
    assert not missing.ok and "invalid arguments for find_algorithm: missing required argument 'query'" in missing.text
    wrong = run(toolkit, "list_tables", {"schema_name": 5})
    assert not wrong.ok and "describe_table has no argument 'schema_name'" in wrong.text
    not_object = run(toolkit, "list_layers", ["schools"])
    assert not not_object.ok and "describe_layer takes a JSON object of arguments" in not_object.text
    malformed = toolkit.malformed_call("list_tables", "Expecting value")
    assert "your describe_table call are not valid JSON" in malformed.text
    assert "its parameters are: tables, connection" in malformed.text


def test_a_name_close_to_an_old_one_suggests_the_new_tool(toolkit):
    outcome = run(toolkit, "list_layer", {})
    assert not outcome.ok and "there is no tool 'list_layer'. Did you mean describe_layer?" in outcome.text
    assert "Available tools: describe_layer, find_algorithm, describe_table." in outcome.text


def test_an_old_name_is_routed_only_where_its_new_tool_is_offered():
    only_layers = Toolkit([describe_layer])
    assert run(only_layers, "list_layers", {}).ok
    outcome = run(only_layers, "search_algorithms", {"query": "buffer"})
    assert not outcome.ok and "there is no tool 'search_algorithms'" in outcome.text

    def list_layers() -> str:
        """A tool that really has the old name wins over the alias."""
        return "the real list_layers"

    both = Toolkit([describe_layer, list_layers])
    assert run(both, "list_layers", {}).text == "the real list_layers"


def set_layer(layer: str, visible: bool | None = None, remove: bool = False) -> str:
    """Show or hide, or remove a layer."""
    return f"set_layer(layer={layer!r}, visible={visible!r}, remove={remove!r})"


def test_remove_layer_runs_set_layer_with_remove_and_is_never_sent():
    """It was its own tool; set_layer(remove=true) took it over (its approval preview: tests/qgis)."""
    toolkit = Toolkit([set_layer])
    assert [schema["function"]["name"] for schema in toolkit.schemas] == ["set_layer"]
    for args in ({"layer": "parks"}, json.dumps({"layer": "parks"}), {"layer": "parks", "remove": False}):
        outcome = run(toolkit, "remove_layer", args)
        assert outcome.ok and outcome.text == "set_layer(layer='parks', visible=None, remove=True)"
    missing = run(toolkit, "remove_layer", {})
    assert not missing.ok and "invalid arguments for set_layer: missing required argument 'layer'" in missing.text
    extra = run(toolkit, "remove_layer", {"layer": "parks", "approved": True})
    assert not extra.ok and "set_layer has no argument 'approved'" in extra.text
    close = run(toolkit, "remove_layers", {"layer": "parks"})
    assert not close.ok and "Did you mean set_layer?" in close.text
