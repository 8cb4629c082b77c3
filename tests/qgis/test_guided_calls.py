"""Guided tool calls through the whole agent: replies constrained by one JSON schema, on both protocols.

The real graph and worker, the real ChatOllama/ChatOpenAI clients over HTTP to
the scripted model server (which replies with the JSON a constrained model
writes), real tools on the demo project.  What is checked is what crosses the
wire (no ``tools``; the schema with the project's real names) and that a
guided call goes down the native path (tool steps, approvals, errors).
"""

from __future__ import annotations

import json

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.events import Notice, TextDelta
from geogpt_qgis.core.guided_schema import EXPRESSION_IN_JSON_TEXT
from tests.support.model_server import Turn
from tests.support.schemas import admits

PROVIDERS = ["ollama", "openai"]


def make_config(server, provider: str = "ollama", **overrides) -> ModelConfig:
    base = server.url if provider == "ollama" else server.url + "/v1"
    values = {"provider": provider, "base_url": base, "model": "qwen3:8b", "timeout": 60.0, "tool_calls": "guided"}
    values.update(overrides)
    return ModelConfig(**values)


def call(tool: str, **arguments) -> Turn:
    return Turn(text=json.dumps({"tool": tool, "arguments": arguments}))


def answer(text: str) -> Turn:
    return Turn(text=json.dumps({"answer": text}))


def schema_sent(request, provider: str) -> dict:
    if provider == "ollama":
        return request.body["format"]
    response_format = request.body["response_format"]
    return response_format["json_schema"]["schema"] if "json_schema" in response_format else response_format["schema"]


def branch(schema: dict, tool: str) -> dict:
    for option in schema["anyOf"]:
        if option["properties"].get("tool", {}).get("const") == tool:
            return option["properties"]["arguments"]
    raise AssertionError(f"no branch for {tool}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_guided_call_runs_the_tool_and_the_answer_streams_as_text(
    provider, model_server, worker, recorder, demo_project
):
    text = 'There are **31 schools** in "schools".\nSee the table.'
    model_server.script([call("describe_layer", layer="schools"), answer(text)])
    run = worker.submit("How many schools are there?", make_config(model_server, provider))
    finished = recorder.wait(run)
    assert finished.status == "finished", finished.error
    assert recorder.tool_names(run) == ["describe_layer"]
    assert "31 features" in recorder.tool_results(run)[0].result
    # The answer reaches the dock as its text, decoded from the JSON string as it streamed, never the JSON.
    assert recorder.text(run) == text
    assert len(recorder.of(run, TextDelta)) >= 5

    first, second = model_server.chat_requests()
    assert not first.body.get("tools")  # no tools offered natively
    schema = schema_sent(first, provider)
    layers = set(branch(schema, "describe_layer")["properties"]["layer"]["enum"])
    assert layers == {layer.name() for layer in demo_project.mapLayers().values()}
    assert "native:buffer" in branch(schema, "run_algorithm")["properties"]["algorithm"]["enum"]
    # The first reply to a question must look at the data (a call); the answer is offered once a tool ran.
    assert {"answer"} not in [set(option["properties"]) for option in schema["anyOf"]]
    assert {"answer"} in [set(option["properties"]) for option in schema_sent(second, provider)["anyOf"]]
    system = first.body["messages"][0]
    assert system["role"] == "system" and '{"tool": "<name>", "arguments": {...}}' in system["content"]
    assert "- describe_layer(layer?, at?):" in system["content"]
    # The call and its result go back as text the model can read: its own JSON, then the result as user text.
    roles = [m["role"] for m in second.body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert json.loads(second.body["messages"][2]["content"]) == {
        "tool": "describe_layer",
        "arguments": {"layer": "schools"},
    }
    assert second.body["messages"][3]["content"].startswith("Result of describe_layer:\n")
    # The system text is the same in every call of the conversation (the server's cache of it stays valid).
    assert second.body["messages"][0] == system


def test_a_layer_added_by_a_step_is_a_name_the_next_reply_may_use(model_server, worker, recorder, demo_project):
    model_server.script(
        [
            call("run_algorithm", algorithm="native:centroids", parameters={"INPUT": "parks"}, output_name="park_dots"),
            answer("Done."),
        ]
    )
    run = worker.submit("Make centroids of the parks.", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    assert demo_project.mapLayersByName("park_dots")
    first, second = model_server.chat_requests()
    assert "park_dots" not in branch(schema_sent(first, "ollama"), "describe_layer")["properties"]["layer"]["enum"]
    assert "park_dots" in branch(schema_sent(second, "ollama"), "describe_layer")["properties"]["layer"]["enum"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_cut_off_inside_a_call_goes_back_to_the_model_as_an_invalid_call(
    provider, model_server, worker, recorder
):
    model_server.script([Turn(text='{"tool": "describe_layer", "arguments": {"layer": "sch'), answer("Sorry.")])
    run = worker.submit("Describe the schools", make_config(model_server, provider))
    assert recorder.wait(run).status == "finished"
    (result,) = recorder.tool_results(run)
    assert not result.ok and "not valid JSON" in result.result and "describe_layer" in result.result
    assert "layer" in result.result  # its parameters are named, so the model can write the call again


def test_a_guided_edit_waits_for_approval_like_a_native_one(model_server, worker, recorder, demo_project):
    model_server.script([call("set_layer", layer="parks", remove=True), answer("Removed.")])
    run = worker.submit("remove the parks layer", make_config(model_server))
    assert recorder.wait(run).status == "paused"
    assert demo_project.mapLayersByName("parks")  # nothing ran before the user decided


def test_a_server_that_reads_the_other_dialect_is_asked_again_in_it(model_server, worker, recorder):
    # llama-cpp-python's server refuses response_format of type json_schema (it reads json_object + schema).
    refusal = "Input should be 'text' or 'json_object' (body.response_format.type)"
    model_server.script([Turn(status=500, error=refusal), answer("Nine layers.")])
    run = worker.submit("How many layers?", make_config(model_server, "openai"))
    assert recorder.wait(run).status == "finished"
    assert recorder.text(run) == "Nine layers."
    first, second = model_server.chat_requests()
    assert first.body["response_format"]["type"] == "json_schema"
    assert (
        second.body["response_format"]["type"] == "json_object" and "anyOf" in second.body["response_format"]["schema"]
    )
    # That server matches patterns against the JSON text: there, an expression is held to JSON without braces.
    first_select = branch(first.body["response_format"]["json_schema"]["schema"], "select_features")
    second_select = branch(second.body["response_format"]["schema"], "select_features")
    assert "pattern" not in first_select["properties"]["expression"]
    assert second_select["properties"]["expression"]["pattern"] == EXPRESSION_IN_JSON_TEXT


@pytest.mark.parametrize("provider", PROVIDERS)
def test_auto_falls_back_to_guided_when_the_server_refuses_native_calls(provider, model_server, worker, recorder):
    refusal = "registry.ollama.ai/library/gemma3:270m does not support tools"
    model_server.script([Turn(status=400, error=refusal), call("describe_layer", layer="roads"), answer("Roads.")])
    config = make_config(model_server, provider, tool_calls="auto")
    run = worker.submit("What fields do roads have?", config)
    assert recorder.wait(run).status == "finished"
    assert recorder.tool_names(run) == ["describe_layer"]
    assert any("guided tool calls" in n.text for n in recorder.of(run, Notice))
    requests = model_server.chat_requests()
    assert requests[0].body.get("tools") and not requests[1].body.get("tools")
    # Remembered for this server and model: the next question is guided from its first call.
    model_server.script([answer("Still roads.")])
    run = worker.submit("and now?", config)
    assert recorder.wait(run).status == "finished"
    assert not model_server.chat_requests()[-1].body.get("tools")


def test_native_mode_never_falls_back(model_server, worker, recorder):
    model_server.script([Turn(status=400, error="model does not support tools")])
    run = worker.submit("What fields do roads have?", make_config(model_server, tool_calls="native"))
    finished = recorder.wait(run)
    assert finished.status == "failed" and "cannot call tools" in finished.error
    assert len(model_server.chat_requests()) == 1


def test_auto_is_guided_for_an_ollama_model_without_tool_support(model_server, worker, recorder):
    model_server.capabilities = ("completion",)
    model_server.script([answer("Hello.")])
    run = worker.submit("hi", make_config(model_server, tool_calls="auto"))
    assert recorder.wait(run).status == "finished"
    assert recorder.text(run) == "Hello."
    body = model_server.chat_requests()[0].body
    assert not body.get("tools") and "anyOf" in body["format"]


def test_compact_tools_not_sent_are_admitted_once_describe_capabilities_listed_them(model_server, worker, recorder):
    model_server.script([call("describe_capabilities"), answer("I can also chart.")])
    run = worker.submit("what else can you do?", make_config(model_server, tool_profile="compact"))
    assert recorder.wait(run).status == "finished"
    first, second = model_server.chat_requests()
    tools_in = [
        {o["properties"]["tool"]["const"] for o in schema_sent(r, "ollama")["anyOf"] if "tool" in o["properties"]}
        for r in (first, second)
    ]
    assert len(tools_in[0]) <= 8 and "run_pyqgis" not in tools_in[0]
    assert "run_pyqgis" in tools_in[1] and tools_in[0] - {"describe_capabilities"} < tools_in[1]  # once is enough
    # The system text (the prompt the server caches) is the same in both: only the schema beside it grew.
    assert first.body["messages"][0] == second.body["messages"][0]


def test_the_last_step_before_the_cap_may_only_be_the_answer(model_server, worker, recorder):
    model_server.script([call("describe_layer", layer="roads"), answer("Roads have 5 fields.")])
    run = worker.submit("What fields do roads have?", make_config(model_server, max_steps=2))
    assert recorder.wait(run).status == "finished"
    assert recorder.text(run) == "Roads have 5 fields."
    first, second = model_server.chat_requests()
    assert len(schema_sent(first, "ollama")["anyOf"]) > 1
    (only,) = schema_sent(second, "ollama")["anyOf"]  # a call now would never run: the step cap is reached
    assert set(only["properties"]) == {"answer"}


def test_a_help_tool_is_offered_once_per_question(model_server, worker, recorder):
    model_server.script([call("find_examples", question="count schools"), answer("31.")])
    run = worker.submit("How many schools?", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    first, second = model_server.chat_requests()

    def tools_in(request) -> set[str]:
        options = schema_sent(request, "ollama")["anyOf"]
        return {o["properties"]["tool"]["const"] for o in options if "tool" in o["properties"]}

    assert {"find_examples", "describe_capabilities"} <= tools_in(first)
    assert "find_examples" not in tools_in(second) and "describe_capabilities" in tools_in(second)
    assert "describe_layer" in tools_in(second)


def test_each_question_carries_worked_examples_filled_in_with_its_own_names(model_server, worker, recorder):
    model_server.script([call("describe_layer", layer="rivers"), answer("Done."), answer("Still done.")])
    config = make_config(model_server)
    first_run = worker.submit("Buffer the rivers by 500 m.", config)
    assert recorder.wait(first_run).status == "finished"
    second_run = worker.submit("What fields does the hospitals layer have?", config)
    assert recorder.wait(second_run).status == "finished"
    first, second, third = model_server.chat_requests()
    asked = first.body["messages"][-1]["content"]
    # After the question, in the reply's own JSON form, with the layer the question named.
    question_at, examples_at = asked.index("Buffer the rivers by 500 m."), asked.index("Solved like this before")
    assert question_at < examples_at
    written = [json.loads(line) for line in asked[examples_at:].splitlines() if line.startswith("{")]
    buffer = next(c for c in written if c["arguments"].get("algorithm") == "native:buffer")
    assert buffer == {
        "tool": "run_algorithm",
        "arguments": {
            "algorithm": "native:buffer",
            "parameters": {"INPUT": "rivers", "DISTANCE": "<distance>"},  # in the layer's units: the call's to say
            "output_name": "rivers_buffer",
        },
    }
    later = third.body["messages"][-1]["content"]
    assert '{"tool": "describe_layer", "arguments": {"layer": "hospitals"}}' in later
    # The earlier question is sent again exactly as before: the server's cache of the conversation stays valid.
    assert third.body["messages"][1] == first.body["messages"][1]
    assert [m["content"] for m in third.body["messages"][:4]] == [m["content"] for m in second.body["messages"]]


def test_a_call_repeated_after_its_result_is_not_run_again_the_answer_is_asked_for(model_server, worker, recorder):
    model_server.script(
        [
            call("describe_layer", layer="hospitals"),
            call("describe_layer", layer="hospitals"),  # the same call again, its result already read
            answer("The hospitals have name, beds and emergency."),
        ]
    )
    run = worker.submit("What fields does the hospitals layer have?", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    assert recorder.tool_names(run) == ["describe_layer"]  # run once
    assert recorder.text(run) == "The hospitals have name, beds and emergency."
    _first, second, third = model_server.chat_requests()
    # The repeat was answered by asking the same prompt again for an answer only.
    assert third.body["messages"] == second.body["messages"]
    assert [set(option["properties"]) for option in schema_sent(third, "ollama")["anyOf"]] == [{"answer"}]


def test_a_call_repeated_after_an_error_runs_again(model_server, worker, recorder):
    model_server.script(
        [
            call("describe_layer", layer="hospitals", at="1,2"),
            call("describe_layer", layer="hospitals", at="1,2"),
            answer("It failed twice."),
        ]
    )
    run = worker.submit("Sample the hospitals at 1,2", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    assert recorder.tool_names(run) == ["describe_layer", "describe_layer"]
    assert not any(r.ok for r in recorder.tool_results(run))


def test_an_algorithm_a_worked_example_runs_must_be_called_with_its_parameters(model_server, worker, recorder):
    model_server.script([call("describe_layer", layer="rivers"), answer("Not done.")])
    run = worker.submit("Buffer the rivers by 500 m.", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    first = model_server.chat_requests()[0]
    options = [o["properties"]["arguments"] for o in schema_sent(first, "ollama")["anyOf"] if "tool" in o["properties"]]
    buffer = next(o for o in options if o["properties"].get("algorithm") == {"const": "native:buffer"})
    assert buffer["properties"]["parameters"]["required"] == ["INPUT", "DISTANCE"]
    assert "rivers" in buffer["properties"]["parameters"]["properties"]["INPUT"]["enum"]
    general = next(o for o in options if "enum" in o["properties"].get("algorithm", {}))
    assert "native:buffer" not in general["properties"]["algorithm"]["enum"]
    assert "native:centroids" in general["properties"]["algorithm"]["enum"]


def test_an_algorithm_run_again_on_the_layer_it_just_made_is_not_run_the_answer_is_asked_for(
    model_server, worker, recorder, demo_project
):
    """SmolLM2-135M counted the schools in the districts, then in the layer of counts, then in that one's."""
    counts = {"POLYGONS": "districts", "POINTS": "schools", "FIELD": "n"}
    again = {**counts, "POLYGONS": "counts"}  # the layer the first call made, the rest the same
    model_server.script(
        [
            call("run_algorithm", algorithm="native:countpointsinpolygon", parameters=counts, output_name="counts"),
            call("run_algorithm", algorithm="native:countpointsinpolygon", parameters=again, output_name="counts2"),
            answer("Counted."),
            call("run_algorithm", algorithm="native:countpointsinpolygon", parameters=counts, output_name="parks_n"),
            answer("Counted again."),
        ]
    )
    run = worker.submit("Count the schools in each district.", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    assert recorder.tool_names(run) == ["run_algorithm"]  # run once: no layer of counts of counts
    assert recorder.text(run) == "Counted."
    assert [layer.name() for layer in demo_project.mapLayersByName("counts")] and not demo_project.mapLayersByName(
        "counts2"
    )
    # Another input is another run: the same algorithm on the hospitals (a new question) runs.
    other = {**counts, "POINTS": "hospitals"}
    model_server.script(
        [
            call("run_algorithm", algorithm="native:countpointsinpolygon", parameters=other, output_name="beds_n"),
            answer("Counted the hospitals."),
        ]
    )
    run = worker.submit("And the hospitals?", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    assert recorder.tool_names(run) == ["run_algorithm"] and demo_project.mapLayersByName("beds_n")


def test_a_small_models_answer_quotes_a_line_it_rests_on_and_opens_with_a_figure_of_it(model_server, worker, recorder):
    """Compact profile: the answer picks a line of what was read (shown under it), then opens with a figure of it."""
    line = "Layer 'schools' (id"  # the first line of describe_layer's result starts so
    # A server that ignores the schema "quotes" a line nothing read: it is not shown as read.
    quoting = Turn(text=json.dumps({"evidence": ["Made up: 12 schools"], "answer": "31."}))
    model_server.script([call("describe_layer", layer="schools"), quoting])
    run = worker.submit("How many schools are there?", make_config(model_server, tool_profile="compact"))
    assert recorder.wait(run).status == "finished" and recorder.text(run) == "31."
    first, second = model_server.chat_requests()[:2]
    schema = schema_sent(second, "ollama")
    replies = [o for o in schema["anyOf"] if "answer" in o["properties"]]  # one per line offered
    assert all(list(o["properties"]) == o["required"] == ["evidence", "answer"] for o in replies)
    offered = [o["properties"]["evidence"]["items"]["enum"] for o in replies]
    assert all(len(lines) == 1 for lines in offered)
    first_line = next(lines[0] for lines in offered if lines[0].startswith(line))
    assert "31 features" in first_line and all(any(c.isdigit() for c in lines[0]) for lines in offered)
    assert not any(lines[0].startswith("Provider:") for lines in offered)  # no figure in it: not offered
    assert admits(schema, {"evidence": [first_line], "answer": "31 schools."})
    assert not admits(schema, {"evidence": [first_line], "answer": "There are 31 schools."})  # a figure first
    assert not admits(schema, {"evidence": [first_line], "answer": "Yes."})  # no figure read
    assert not admits(schema, {"evidence": ["31 schools"], "answer": "31"})  # a line that was not read
    assert "evidence" not in json.dumps(schema_sent(first, "ollama"))  # nothing read yet: nothing to quote

    # Through the whole agent: the answer streams, the quoted line is shown under it, once.
    quoting = Turn(text=json.dumps({"evidence": [first_line, first_line], "answer": "31."}))
    model_server.script([call("describe_layer", layer="schools"), quoting])
    run = worker.submit("How many schools are there?", make_config(model_server, tool_profile="compact"))
    assert recorder.wait(run).status == "finished"
    text = recorder.text(run)
    assert text.startswith("31.\n\nRead from the results:\n> Layer 'schools'") and text.count(first_line) == 1
    assert "".join(e.text for e in recorder.of(run, TextDelta)) == text


def test_a_value_the_question_names_unquoted_is_filled_into_the_example_with_its_field(model_server, worker, recorder):
    """The values are read from the layers the question names (their first rows, off the main thread)."""
    model_server.script([call("describe_layer", layer="schools"), answer("Done.")])
    run = worker.submit("How many primary schools are there? Select them.", make_config(model_server))
    assert recorder.wait(run).status == "finished"
    asked = model_server.chat_requests()[0].body["messages"][-1]["content"]
    examples = asked[asked.index("Solved like this before") :]
    selects = [json.loads(line) for line in examples.splitlines() if line.startswith('{"tool": "select_features"')]
    assert {"tool": "select_features", "arguments": {"layer": "schools", "expression": "\"type\" = 'primary'"}} in (
        selects
    ), examples
    assert "<field>" not in examples and "<value>" not in examples
