"""Every way a tool call can go wrong comes back to the model as an actionable message."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import pytest
from annotated_types import MaxLen

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core import secrets_scrub
from geogpt_qgis.core.artifacts import ToolArtifact, ToolResult
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


# -- bounds on every argument ------------------------------------------------------------------
def find(names: list[str], query: str = "", limit: int = 20, scale: float = 1.0, options: dict | None = None) -> str:
    """Find things.

    Args:
        names: Names.
        query: Free text.
        limit: Most results.
        scale: A factor.
        options: Extra settings.
    """
    return f"{len(names)} names, {len(query)} chars, {limit}, {scale}, {options}"


def run_code(code: Annotated[str, MaxLen(20_000)]) -> str:
    """Run code.

    Args:
        code: Python.
    """
    return f"{len(code)} chars"


@pytest.fixture
def bounded() -> Toolkit:
    return Toolkit([find, run_code])


def test_every_argument_has_a_bound_in_the_full_schema_but_not_in_the_prompt(bounded):
    full = {s["function"]["name"]: s["function"]["parameters"]["properties"] for s in bounded.bounded_schemas}
    assert full["find"]["names"]["maxItems"] == 50 and full["find"]["names"]["items"]["maxLength"] == 500
    assert full["find"]["query"]["maxLength"] == 500
    assert full["find"]["limit"]["maximum"] == 10**12 and full["find"]["scale"]["minimum"] == -1e12
    assert full["find"]["options"]["anyOf"][0]["maxProperties"] == 100
    assert full["run_code"]["code"]["maxLength"] == 20_000  # the signature's own bound wins over the default
    sent = json.dumps(bounded.schemas)
    assert not any(word in sent for word in ("maxLength", "maxItems", "maximum", "minimum", "maxProperties"))


def test_a_call_past_a_bound_is_told_the_size_and_the_bound_without_its_text_echoed(bounded):
    long = run(bounded, "find", {"names": ["x"], "query": "q" * 200_000})
    assert not long.ok and "query is 200,000 characters; at most 500" in long.text and len(long.text) < 300
    many = run(bounded, "find", {"names": ["x"] * 51})
    assert "names has 51 items; at most 50" in many.text
    item = run(bounded, "find", {"names": ["ok", "n" * 501]})
    assert "names[1] is 501 characters; at most 500" in item.text
    assert run(bounded, "run_code", {"code": "x" * 20_000}).ok
    assert "code is 20,001 characters; at most 20,000" in run(bounded, "run_code", {"code": "x" * 20_001}).text


@pytest.mark.parametrize(
    ("args", "told"),
    [
        ({"names": ["schools\x00"]}, "names[0] contains a NUL character (\\u0000) at position 7"),
        ({"names": ["a\udfffb"]}, "names[0] contains a lone surrogate ('\\udfff') at position 1"),
        ({"names": [], "scale": float("nan")}, "finite number"),
        ({"names": [], "scale": float("-inf")}, "finite number"),
        ({"names": [], "limit": 10**30}, "less than or equal to 1000000000000"),
        ({"names": [], "options": {"a": [[[[[[[[[["deep"]]]]]]]]]]}}, "nested more than 8 levels deep"),
        ({"names": [], "options": {"a": "z\x00"}}, "options contains a NUL character"),
        ({"names": [], "options": {"a": float("nan")}}, "options holds nan, which is not a finite number"),
        ({"names": [], "options": {"a": list(range(3000))}}, "options holds more than 2,000 values"),
    ],
)
def test_unclean_text_odd_numbers_and_deep_objects_are_refused_clearly(bounded, args, told):
    outcome = run(bounded, "find", args)
    assert not outcome.ok and told in outcome.text, outcome.text
    assert "failed unexpectedly" not in outcome.text


def test_odd_calls_never_echo_a_megabyte_back(bounded):
    huge_key = run(bounded, "find", {"names": [], "k" * 1_000_000: 1})
    assert "has no argument" in huge_key.text and len(huge_key.text) < 400
    unknown = run(bounded, "f" * 1_000_000, {})
    assert "there is no tool" in unknown.text and len(unknown.text) < 400
    not_object = run(bounded, "find", ["x"] * 100_000)
    assert "a list of 100,000 items" in not_object.text
    nested_json = run(bounded, "find", {"names": "[" * 100_000})  # beyond the JSON parser's recursion
    assert not nested_json.ok and len(nested_json.text) < 400


def test_a_reply_with_lone_surrogates_is_made_valid_unicode():
    from langchain_core.messages import AIMessage

    from geogpt_qgis.core.bounds import clean_reply

    reply = clean_reply(
        AIMessage(content="ok\ud800", tool_calls=[{"name": "run_code", "args": {"code": "a\udfffb"}, "id": "1"}])
    )
    assert reply.content == "ok\ufffd" and reply.tool_calls[0]["args"] == {"code": "a\ufffdb"}
    json.dumps(reply.tool_calls, ensure_ascii=False).encode()  # encodes now


class Gated:
    """A gated tool whose preview breaks, as a bug in one would."""

    def preview_act(self, what: str) -> None:
        raise RuntimeError("the preview broke")

    def act(self, what: str) -> str:
        """Do something risky.

        Args:
            what: What to do.
        """
        return "done"

    act.approval_preview = preview_act  # type: ignore[attr-defined]


def test_a_preview_that_raises_gives_the_error_to_answer_the_call_with():
    from geogpt_qgis.agent.toolkit import ToolOutcome

    toolkit = Toolkit([Gated().act])
    outcome = asyncio.run(toolkit.approval_request("c1", "act", {"what": "x"}))
    assert isinstance(outcome, ToolOutcome) and not outcome.ok
    assert outcome.text == "Error: act could not be checked before approval: RuntimeError: the preview broke"


def describe_table(table: str) -> ToolResult:
    """Describe a table.

    Args:
        table: Table name.
    """
    return ToolResult(f"{table}: 3 columns", ToolArtifact(tables=(f"{table} (postgresql://u:{SECRET}@db/x)",)))


SECRET = "s3cr3t-artifact-password"


def test_a_result_carries_its_artifact_out_of_the_toolkit_scrubbed_and_as_langchain_hands_it_on():
    from langchain_core.messages import ToolMessage

    secrets_scrub.register(SECRET)
    try:
        toolkit = Toolkit([describe_table, list_layers])
        outcome = run(toolkit, "describe_table", {"table": "schools"})
        assert outcome.ok and outcome.text == "schools: 3 columns"  # the model's text is unchanged
        (table,) = outcome.artifact.tables
        assert table.label.startswith("schools (postgresql://u:") and SECRET not in table.label
        assert run(toolkit, "list_layers", {}).artifact.empty  # plain text: nothing used or made
        assert run(toolkit, "describe_table", {}).artifact.empty  # an error: nothing either
        # The tool as LangChain runs it: content and artifact apart (response_format="content_and_artifact").
        tool = {t.name: t for t in toolkit.tools}["describe_table"]
        message = tool.invoke({"type": "tool_call", "id": "c1", "name": "describe_table", "args": {"table": "roads"}})
        assert isinstance(message, ToolMessage) and message.content == "roads: 3 columns"
        assert message.artifact.tables[0].label.startswith("roads (")
    finally:
        secrets_scrub.forget_all()


# -- the mistakes small models make (issue 35), answered with what to send instead -------------------------------
def describe_layer(layer: str = "", at: str = "") -> str:
    """Describe a layer: fields, CRS, count. No layer: list them.

    Args:
        at: Raster values at points.
    """
    return f"described {layer or 'all'}"


def set_layer(layer: str, visible: bool = True) -> str:
    """Show or hide a layer."""
    return f"{layer} visible={visible}"


def run_algorithm(algorithm: str, parameters: dict, output_name: str = "") -> str:
    """Run a processing algorithm.

    Args:
        parameters: Values by parameter name; layers by name.
    """
    return f"{algorithm} {parameters} {output_name}"


@pytest.fixture
def small_model_tools() -> Toolkit:
    return Toolkit([describe_layer, set_layer, run_algorithm])


def test_a_tool_named_after_what_the_model_wants_gets_the_tool_that_does_it(small_model_tools):
    # As written, 'get_layers' is closest to set_layer; said with describe it is describe_layer, which lists them.
    told = run(small_model_tools, "get_layers", {}).text
    assert "there is no tool 'get_layers'. Did you mean describe_layer? (Describe a layer: fields, CRS, count." in told
    assert "No layer: list them.)" in told and "set_layer?" not in told and "set_layer or" not in told
    plural = run(small_model_tools, "describe_layers", {"layer": "roads"}).text
    assert "Did you mean describe_layer? (Describe a layer" in plural
    # Several close tools: named without descriptions (no single one to describe).
    several = run(small_model_tools, "set_layers", {}).text
    assert "Did you mean set_layer or describe_layer? Available tools:" in several


def test_another_tools_arguments_name_the_tool_that_takes_them(small_model_tools):
    arguments = {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100}}
    told = run(small_model_tools, "describe_layer", arguments).text
    assert told == (
        "Error: describe_layer has no argument 'algorithm', 'parameters'; valid arguments: layer, at. "
        "run_algorithm takes them."
    )
    # A key every tool lacks gets no tool named.
    alone = run(small_model_tools, "describe_layer", {"layer": "roads", "verbose": True}).text
    assert alone == "Error: describe_layer has no argument 'verbose'; valid arguments: layer, at."


def test_arguments_spread_over_the_top_level_are_given_back_nested(small_model_tools):
    told = run(small_model_tools, "run_algorithm", {"algorithm": "native:buffer", "INPUT": "rivers", "DISTANCE": 100})
    assert (
        "run_algorithm has no argument 'INPUT', 'DISTANCE'; valid arguments: algorithm, parameters, output_name."
        in (told.text)
    )
    start = told.text.index("Did you mean ") + len("Did you mean ")
    suggested, _ = json.JSONDecoder().raw_decode(told.text[start:])
    assert suggested == {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 100}}
    assert run(small_model_tools, "run_algorithm", suggested).ok  # the suggestion is a call that runs
    # Two required arguments missing: no guess, the missing ones with what they hold ('layer' names no one tool).
    missing = run(small_model_tools, "run_algorithm", {"layer": "rivers"}).text
    assert "Did you mean" not in missing
    assert missing.endswith("Missing: 'algorithm'; 'parameters': Values by parameter name; layers by name.")


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ("{'layer': 'schools'}", 'JSON needs double quotes: {"layer": "schools"}'),
        ('{"layer": "roa', "it is cut off before its end"),
        ('{"layer": "roads"', "it is cut off before its end"),
        ("{'layer': 'scho", "JSON needs double quotes"),
        ('{"layer" "schools"}', "Expecting ':' delimiter at character 10"),
        ("layer=schools", 'a JSON object starts with "{"'),
        ('["schools"]', "it is an array, not an object"),
        # Python's literal syntax is read as data only: nothing in it runs.
        ("{'layer': __import__('os').getcwd()}", "JSON needs double quotes"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_told_what_is_wrong(small_model_tools, sent, said):
    # As the graph hands them on (Ollama's string arguments, OpenAI's streamed ones): "received '...'".
    malformed = small_model_tools.malformed_call("describe_layer", f"received {sent!r}").text
    assert malformed == (
        f"Error: the arguments of your describe_layer call are not valid JSON (received {sent!r}): {said}. "
        "Call it again with a JSON object; its parameters are: layer, at."
    )
    # Sent as a string where an object belongs, the toolkit says the same (JSON that is not an object is decoded).
    as_text = run(small_model_tools, "describe_layer", sent).text
    shown = repr(json.loads(sent)) if sent.startswith("[") else f"{sent!r} ({said})"
    assert as_text == f"Error: describe_layer takes a JSON object of arguments (layer, at), not {shown}."


def test_a_quoted_text_cut_short_by_the_graph_is_not_called_cut_off(small_model_tools):
    cut = small_model_tools.malformed_call("describe_layer", 'received \'{"layer": "' + "x" * 60 + "…'").text
    assert "cut off" not in cut and cut.endswith("its parameters are: layer, at.")
    reason = small_model_tools.malformed_call("describe_layer", "Expecting value: line 1 column 11 (char 10)").text
    assert "(Expecting value: line 1 column 11 (char 10)). Call it again" in reason
