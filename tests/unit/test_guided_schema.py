"""The guided reply's schema and its reader: what a constrained model may write, and what the dock shows of it."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from geogpt_qgis.core.guided_schema import AnswerStream, Vocabulary, parse_reply, reply_schema, system_text
from tests.support.schemas import admits

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "describe_layer",
            "description": "Describe a layer.",
            "parameters": {"type": "object", "properties": {"layer": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_features",
            "description": "Read attribute values.",
            "parameters": {
                "type": "object",
                "properties": {"layer": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}}},
                "required": ["layer"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "load_data",
            "description": "Load a file.",
            "parameters": {
                "type": "object",
                "properties": {"source": {"type": "string"}, "layer": {"type": "string"}},
                "required": ["source"],
            },
        },
    },
]
NAMES = Vocabulary(layers=("schools", "roads"), fields=("name", "pupils"), algorithms=("native:buffer",))


def valid(reply: dict) -> bool:
    return admits(reply_schema(TOOLS, NAMES), reply)


def test_the_schema_admits_exactly_a_call_of_an_offered_tool_with_real_names_or_an_answer():
    assert valid({"tool": "describe_layer", "arguments": {"layer": "schools"}})
    assert valid({"tool": "read_features", "arguments": {"layer": "roads", "fields": ["name"]}})
    assert valid({"answer": "Two layers."})
    assert not valid({"tool": "describe_layer", "arguments": {"layer": "school"}})  # a made-up name
    assert not valid({"tool": "read_features", "arguments": {"layer": "roads", "fields": ["nme"]}})
    assert not valid({"tool": "read_features", "arguments": {"fields": ["name"]}})  # a required argument missing
    assert not valid({"tool": "describe_layers", "arguments": {}})  # a tool that does not exist
    assert not valid({"tool": "describe_layer", "arguments": {"expression": "1"}})  # another tool's argument
    assert not valid({"answer": "x", "tool": "describe_layer"})
    # load_data's layer names a layer inside the source, not one of the project: it stays free.
    assert valid({"tool": "load_data", "arguments": {"source": "a.gpkg", "layer": "anything"}})


def test_names_are_left_free_where_none_are_known():
    schema = reply_schema(TOOLS, Vocabulary())
    jsonschema.validate({"tool": "describe_layer", "arguments": {"layer": "whatever"}}, schema)


def test_the_system_text_lists_each_tool_once_and_marks_optional_arguments():
    text = system_text("You are GeoGPT.", TOOLS)
    assert text.startswith("You are GeoGPT.\n")
    assert "- describe_layer(layer?): Describe a layer." in text
    assert "- read_features(layer, fields?): Read attribute values." in text
    assert "schools" not in text  # names travel in the schema, so the prompt never changes with the project


@pytest.mark.parametrize("seed", range(20))
def test_an_answer_is_decoded_as_it_streams_whatever_the_chunks(seed):
    text = 'Line "one"\\ two\n\ttabbed – ünïcode 🗺️ end'
    reply = json.dumps({"answer": text})
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(reply)), 12))
    pieces = [reply[a:b] for a, b in zip([0, *cuts], [*cuts, len(reply)], strict=True)]
    stream = AnswerStream()
    shown = "".join(stream.feed(piece) for piece in pieces)
    assert shown == text and stream.is_answer
    assert parse_reply(stream.text).text == text


def test_a_call_is_collected_and_read_whole():
    stream = AnswerStream()
    reply = '{ "tool" : "describe_layer", "arguments": {"layer": "roads"}}'
    assert "".join(stream.feed(reply[i : i + 3]) for i in range(0, len(reply), 3)) == ""
    assert not stream.is_answer
    read = parse_reply(stream.text)
    assert (read.tool, read.arguments, read.problem) == ("describe_layer", {"layer": "roads"}, None)


def test_text_that_is_not_json_is_the_answer_as_written():
    stream = AnswerStream()
    assert stream.feed("  Hello") == "  Hello" and stream.feed(" there") == " there"
    assert parse_reply("Hello there").text == "Hello there"


def test_a_cut_off_or_shapeless_reply_says_what_is_wrong():
    cut = parse_reply('{"tool": "describe_layer", "arguments": {"layer": "sch')
    assert cut.tool == "describe_layer" and "not complete JSON" in (cut.problem or "")
    shapeless = parse_reply('{"foo": 1}')
    assert shapeless.tool is None and "neither" in (shapeless.problem or "") and "foo" in (shapeless.problem or "")
    deep = parse_reply("{" + '"a": [' * 5000 + "]" * 5000 + "}")
    assert deep.problem is not None


def test_the_first_reply_to_a_question_may_only_be_a_call():
    schema = reply_schema(TOOLS, NAMES, answer_allowed=False)
    jsonschema.validate({"tool": "describe_layer", "arguments": {}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answer": "31 schools."}, schema)


RUN = {
    "type": "function",
    "function": {
        "name": "run_algorithm",
        "description": "Run an algorithm.",
        "parameters": {
            "type": "object",
            "properties": {
                "algorithm": {"type": "string"},
                "parameters": {"type": "object"},
                "output_name": {"type": "string"},
            },
            "required": ["algorithm", "parameters"],
        },
    },
}
BUFFER = {
    "type": "object",
    "properties": {
        "INPUT": {"enum": ["rivers", "schools"]},
        "DISTANCE": {"type": "number"},
        "SEGMENTS": {"type": "number"},
    },
    "required": ["INPUT", "DISTANCE"],
    "additionalProperties": False,
}


def test_an_algorithm_of_known_parameters_must_be_called_with_them_the_others_stay_free():
    names = Vocabulary(
        layers=("rivers", "schools"),
        algorithms=("native:buffer", "native:centroids"),
        parameters={"native:buffer": BUFFER, "native:gone": BUFFER},  # an id the registry lacks gets no branch
    )
    schema = reply_schema([RUN], names)

    def ok(arguments: dict) -> bool:
        return admits(schema, {"tool": "run_algorithm", "arguments": arguments})

    assert ok({"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 500.5}})
    assert ok({"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 500}, "output_name": "b"})
    assert not ok({"algorithm": "native:buffer", "parameters": {"INPUT": "rivers"}})  # the distance left out
    assert not ok({"algorithm": "native:buffer", "parameters": {"INPUT": "<point layer>", "DISTANCE": 5}})
    assert not ok({"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 5, "DIST": 5}})
    assert ok({"algorithm": "native:centroids", "parameters": {"INPUT": "anything", "ALL_PARTS": True}})
    assert not ok({"algorithm": "native:gone", "parameters": {"INPUT": "rivers", "DISTANCE": 5}})
    branches = [o for o in schema["anyOf"] if o["properties"].get("tool", {}).get("const") == "run_algorithm"]
    assert len(branches) == 2
    assert branches[0]["properties"]["arguments"]["properties"]["algorithm"]["enum"] == ["native:centroids"]


def test_a_grounded_answer_writes_only_figures_that_were_read():
    """A small model's answer may quote what its tools read, never a number of its own."""
    from geogpt_qgis.core.guided_schema import figures_in

    read = ["How many schools?", "schools: Point, 31 features, EPSG:25832; pupils 46.6 on average; 107,000 people"]
    schema = reply_schema(TOOLS, NAMES, figures=figures_in(read))

    def answer(text: str) -> bool:
        return admits(schema, {"answer": text})

    assert answer("There are 31 schools.") and answer("31") and answer("No numbers at all")
    assert answer("EPSG:25832, 46.6 pupils, 107,000 people.")
    assert not answer("There are 10 schools.")  # made up
    assert not answer("There are 310 schools.")  # a figure read, continued into one that was not
    assert not answer("46.25832")  # two figures joined into a third
    assert not answer("31,5") and not answer("12.9%")
    assert not answer('He said "31".')  # one line, no quotes: the same to grammars over raw JSON text
    assert not answer("There are -31 schools.") and not answer("from 46.6-31")  # a sign nobody read
    assert not answer("fid (int31)") and not answer("x31")  # glued to a word (Gemma: "int6200239.1")
    assert answer("Schools: 31; pupils (46.6), 31st.") and answer("31-") and answer("(31)")
    assert figures_in(["change -4.5 m, 5-3"]) == ("-4.5", "5", "3")  # a minus read is the figure's
    assert admits(reply_schema(TOOLS, NAMES, figures=("-4.5",)), {"answer": "It fell by -4.5 m."})
    # Nothing read yet: an answer without any number; too much read: left free.
    assert not admits(reply_schema(TOOLS, NAMES, figures=()), {"answer": "3 layers"})
    assert figures_in([" ".join(str(n) for n in range(1000))]) is None
    # A number inside a word (a layer id) is not a figure: each one widens the choice a small model picks from.
    assert figures_in(["Layer 'schools' (id schools_c8bdbb54_d299_4810_88c3): 31 features, zone 32N"]) == ("31", "32")
    assert reply_schema(TOOLS, NAMES, figures=None)["anyOf"][-1]["properties"]["answer"] == {"type": "string"}


def test_a_list_of_names_is_bounded_by_how_many_names_there_are():
    """SmolLM2 held to a list of field names repeated one until its reply was cut off (invalid JSON)."""
    assert valid({"tool": "read_features", "arguments": {"layer": "roads", "fields": ["name", "pupils"]}})
    assert not valid({"tool": "read_features", "arguments": {"layer": "roads", "fields": ["name"] * 3}})


def test_a_line_break_written_raw_inside_a_string_is_read_not_refused():
    """Seen with SmolLM2 on llama-cpp-python: the grammar let a raw line break into a string of the call."""
    reply = parse_reply('{"tool": "read_features", "arguments": {"layer": "hospitals", "expression": "a\nb"}}')
    assert reply.problem is None and reply.tool == "read_features"
    assert reply.arguments == {"layer": "hospitals", "expression": "a\nb"}


def test_the_lines_a_small_models_answer_may_quote_are_those_that_state_a_figure():
    from geogpt_qgis.core.guided_schema import EVIDENCE_CHARS, MAX_EVIDENCE_LINES, evidence_lines

    read = ["native:buffer finished.\nOUTPUT: added layer 'b': Polygon, 2 features\n\n|---|---|", "  2 features  x\n"]
    assert evidence_lines(read) == ("OUTPUT: added layer 'b': Polygon, 2 features", "2 features x")
    assert evidence_lines(["x" * EVIDENCE_CHARS + " 1"]) == ()  # too long to offer whole
    assert evidence_lines(["\n".join(f"row {n}" for n in range(MAX_EVIDENCE_LINES + 1))]) == ()  # a big table


@pytest.mark.parametrize("seed", range(4))
def test_an_answer_after_its_quoted_lines_streams_alone_and_the_lines_are_read_whole(seed: int):
    from geogpt_qgis.core.guided_schema import EVIDENCE_HEAD, quoted

    lines = ['Layer "schools": 31 features ] {"answer": "no"}', "Fields (5; values from all 31 features):"]
    text = "There are **31** schools.\nSee the first line."
    reply = json.dumps({"evidence": lines, "answer": text})
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(reply)), 15))
    stream = AnswerStream()
    shown = "".join(stream.feed(reply[a:b]) for a, b in zip([0, *cuts], [*cuts, len(reply)], strict=True))
    assert shown == text and stream.is_answer  # the quoted lines' brackets and quotes did not end them early
    read = parse_reply(stream.text)
    assert (read.text, read.evidence) == (text, tuple(lines))
    assert quoted(read.evidence + read.evidence) == f"\n\n{EVIDENCE_HEAD}\n> {lines[0]}\n>\n> {lines[1]}"
    assert quoted(()) == ""


def test_an_answer_quotes_one_line_and_opens_with_a_figure_of_that_line():
    """SmolLM2-135M, held to every figure read, quoted "... 2 features ..." and answered 14 from another line."""
    from geogpt_qgis.core.guided_schema import figures_in

    lines = ("schools: 31 features", "Extent: 560226.8, 6200239.1")
    schema = reply_schema(TOOLS, NAMES, figures=figures_in(["How many over 400?", *lines]), evidence=lines)

    def answer(quote: list[str], text: str) -> bool:
        return admits(schema, {"evidence": quote, "answer": text})

    assert answer([lines[0]], "31 schools.") and answer([lines[0]], "31") and answer([lines[0]], "31, all 31.")
    assert answer([lines[1]], "560226.8 is the west edge.")
    for wrong in ("There are 31 schools.", "Yes.", "", "3 schools", "310", "31.5", "560226.8"):
        assert not answer([lines[0]], wrong)  # a figure first, and only one that line shows
    assert not answer([lines[0]], "31 schools, more than 400.")  # the question's figure is not the line's
    assert not answer([lines[1]], "31")
    assert not answer(list(lines), "31")  # one line quoted
    assert not answer([], "31") and not admits(schema, {"answer": "31"})  # the line comes first
    # Without lines to quote (nothing with a figure was read), an answer without a figure stays possible.
    assert admits(reply_schema(TOOLS, NAMES, figures=()), {"answer": "Nothing was found."})


def test_beyond_the_lines_one_answer_can_be_tied_to_it_quotes_two_and_writes_any_figure_read():
    from geogpt_qgis.core.guided_schema import MAX_LINKED, figures_in

    lines = tuple(f"row {n}: {n * 7} people" for n in range(MAX_LINKED + 1))
    schema = reply_schema(TOOLS, NAMES, figures=figures_in(list(lines)), evidence=lines)
    assert len(schema["anyOf"]) == len(TOOLS) + 1  # one answer branch, not one per line
    assert admits(schema, {"evidence": [lines[3], lines[5]], "answer": "Row 5 has 35 people."})
    assert not admits(schema, {"evidence": [lines[3]], "answer": "Row 5 has 999 people."})


def test_a_long_line_is_offered_up_to_a_clause_and_marked_as_cut():
    """run_algorithm's line runs on with its fields past EVIDENCE_CHARS: its count was offered in no line."""
    from geogpt_qgis.core.guided_schema import CUT_MARK, EVIDENCE_CHARS, evidence_lines

    fields = ", ".join(f"field_{n} (string)" for n in range(20))
    line = f"OUTPUT: added layer 'big_schools': Point, 17 features, EPSG:25832, fields: {fields}"
    (offered,) = evidence_lines([f"native:extractbyattribute finished.\n{line}"])
    assert len(offered) <= EVIDENCE_CHARS and offered.endswith(f"(string){CUT_MARK}")
    assert line.startswith(offered.removesuffix(CUT_MARK) + ", ")  # the line's own start, cut after a clause
    assert evidence_lines(["x" * EVIDENCE_CHARS + " 1, y"]) == ()  # no clause ends early enough


def test_no_fixed_string_of_the_schema_holds_a_quote_or_a_backslash():
    """llama-cpp-python's converter escaped the quote of a quoted line wrongly: its server failed, then crashed."""
    from geogpt_qgis.core.guided_schema import evidence_lines

    read = ['All 1 feature of \'hospitals\' where "beds" = maximum("beds"):\n| Elvbury General Hospital | 420 |']
    assert evidence_lines(read) == ("All 1 feature of 'hospitals' where ...", "| Elvbury General Hospital | 420 |")
    assert evidence_lines(["C:\\data 12 files"]) == ()  # nothing before the backslash to offer
    # Offered up to the word before the quote, marked as cut: Gemma, offered no line, answered "select_features".
    selected = "Selected 16 of 31 features in 'schools' where \"type\" = 'primary'."
    assert evidence_lines([selected]) == ("Selected 16 of 31 features in 'schools' where ...",)
    quoted_name = Vocabulary(layers=("schools", 'the "best" roads'), fields=("name",))
    layer = reply_schema(TOOLS, quoted_name)["anyOf"][0]["properties"]["arguments"]["properties"]["layer"]
    assert layer == {"type": "string"}  # left free: the tool still says which layers exist
    assert reply_schema(TOOLS, NAMES)["anyOf"][0]["properties"]["arguments"]["properties"]["layer"]["enum"]


def test_an_expression_is_held_to_json_text_without_braces_for_a_server_that_matches_the_json_text():
    """SmolLM2 "closed" its call inside the expression and ran on: "\"type\" = 'primary' }}\n\nThe answer is 1"."""
    import re

    select = {
        "type": "function",
        "function": {
            "name": "select_features",
            "parameters": {
                "type": "object",
                "properties": {"layer": {"type": "string"}, "expression": {"type": "string"}},
                "required": ["layer", "expression"],
            },
        },
    }

    def expression(raw: bool) -> dict:
        return reply_schema([select], NAMES, raw_patterns=raw)["anyOf"][0]["properties"]["arguments"]["properties"][
            "expression"
        ]

    assert "pattern" not in expression(False)  # other servers match the decoded string: left free
    pattern = re.compile(expression(True)["pattern"])
    as_written = [json.dumps(e)[1:-1] for e in ("\"type\" = 'primary'", '"pupils" > 400 AND "name" LIKE \'%\\\\%\'')]
    assert all(pattern.fullmatch(text) for text in as_written)
    assert not pattern.fullmatch(json.dumps("\"type\" = 'primary' }}\n\nThe answer")[1:-1])
    assert not pattern.fullmatch('"type" = 1')  # a bare quote would end the JSON string
