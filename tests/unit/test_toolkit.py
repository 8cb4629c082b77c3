"""Every way a tool call can go wrong comes back to the model as an actionable message."""

from __future__ import annotations

import asyncio

import pytest

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.cancel import RunCancelled
from geogpt_qgis.tools.base import ToolError


def set_layer_visibility(layer: str, visible: bool) -> str:
    """Show or hide a layer.

    Args:
        layer: Layer name or id.
        visible: True to show.
    """
    if layer == "missing":
        raise ToolError("no layer 'missing'; did you mean 'schools'?")
    if layer == "boom":
        raise ZeroDivisionError("division by zero")
    if layer == "stop":
        raise RunCancelled("stopped by the user")
    return f"{layer} visible={visible}"


def list_layers() -> str:
    """List layers."""
    return "x" * 10_000


@pytest.fixture
def toolkit() -> Toolkit:
    return Toolkit([set_layer_visibility, list_layers])


def run(toolkit: Toolkit, name: str, args: object):
    return asyncio.run(toolkit.run(name, args))


def test_a_valid_call_runs(toolkit):
    outcome = run(toolkit, "set_layer_visibility", {"layer": "schools", "visible": False})
    assert outcome.ok and outcome.text == "schools visible=False"


def test_schema_comes_from_signature_and_docstring(toolkit):
    tool = {t.name: t for t in toolkit.tools}["set_layer_visibility"]
    schema = tool.args_schema.model_json_schema()
    assert schema["required"] == ["layer", "visible"]
    assert schema["properties"]["layer"]["description"] == "Layer name or id."
    assert tool.description == "Show or hide a layer."


def test_unknown_tool_suggests_the_closest(toolkit):
    outcome = run(toolkit, "set_layer_visible", {})
    assert not outcome.ok
    assert "there is no tool 'set_layer_visible'" in outcome.text
    assert "Did you mean set_layer_visibility?" in outcome.text


def test_missing_wrong_and_unknown_arguments(toolkit):
    missing = run(toolkit, "set_layer_visibility", {"layer": "schools"})
    assert "missing required argument 'visible'" in missing.text
    wrong = run(toolkit, "set_layer_visibility", {"layer": "schools", "visible": "perhaps"})
    assert "'visible'" in wrong.text and "boolean" in wrong.text and "'perhaps'" in wrong.text
    extra = run(toolkit, "set_layer_visibility", {"layer": "schools", "visible": True, "colour": "red"})
    assert "has no argument 'colour'; valid arguments: layer, visible" in extra.text
    not_object = run(toolkit, "set_layer_visibility", ["schools"])
    assert "takes a JSON object of arguments" in not_object.text
    assert not (missing.ok or wrong.ok or extra.ok or not_object.ok)


def test_tool_errors_and_crashes_become_messages(toolkit):
    assert run(toolkit, "set_layer_visibility", {"layer": "missing", "visible": True}).text == (
        "Error: no layer 'missing'; did you mean 'schools'?"
    )
    crash = run(toolkit, "set_layer_visibility", {"layer": "boom", "visible": True})
    assert crash.text == "Error: set_layer_visibility failed unexpectedly: ZeroDivisionError: division by zero"


def test_stop_is_not_swallowed(toolkit):
    with pytest.raises(RunCancelled):
        run(toolkit, "set_layer_visibility", {"layer": "stop", "visible": True})


def test_results_are_bounded(toolkit):
    outcome = run(toolkit, "list_layers", {})
    assert outcome.ok and len(outcome.text) < 3700 and "more characters not shown" in outcome.text


def test_unparseable_arguments_name_the_parameters(toolkit):
    outcome = toolkit.malformed_call("set_layer_visibility", "Expecting value: line 1 column 11 (char 10)")
    assert "are not valid JSON (Expecting value: line 1 column 11 (char 10))" in outcome.text
    assert "its parameters are: layer, visible" in outcome.text


def count_features(layers: list[str], options: dict | None = None) -> str:
    """Count features.

    Args:
        layers: Layer names.
        options: Extra settings.
    """
    return f"{layers} {options}"


def test_json_sent_as_a_string_is_decoded_as_small_models_send_it():
    toolkit = Toolkit([count_features, set_layer_visibility])
    whole = run(toolkit, "count_features", '{"layers": ["schools"]}')
    assert whole.ok and whole.text == "['schools'] None"
    nested = run(toolkit, "count_features", {"layers": '["a", "b"]', "options": '{"x": 1}'})
    assert nested.ok and nested.text == "['a', 'b'] {'x': 1}"
    # A string parameter keeps a string that merely looks like JSON.
    kept = run(toolkit, "set_layer_visibility", {"layer": "[odd] name", "visible": True})
    assert kept.ok and kept.text == "[odd] name visible=True"
    broken = run(toolkit, "count_features", {"layers": "[schools"})
    assert not broken.ok and "'layers'" in broken.text


def test_a_missing_argument_is_named_with_what_it_takes(toolkit):
    missing = run(toolkit, "set_layer_visibility", {"visible": True})
    assert "missing required argument 'layer' (Layer name or id.)" in missing.text


def test_no_result_costs_more_than_a_thousand_tokens():
    from geogpt_qgis.core.tokens import estimate_tokens

    def read_table() -> str:
        """A wide table of short identifiers: many tokens per character."""
        return "\n".join("| " + " | ".join(f"a{i}_{j}" for j in range(12)) + " |" for i in range(400))

    outcome = run(Toolkit([read_table]), "read_table", {})
    assert outcome.ok and estimate_tokens(outcome.text) <= 1000
    assert "more characters not shown" in outcome.text
    assert estimate_tokens(outcome.text) > 800  # cut close to the budget, not far below it
