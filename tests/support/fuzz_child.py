"""One batch of the tool fuzzer, in its own process: generated calls through the real agent graph in QGIS.

``python -X faulthandler -m tests.support.fuzz_child --tools a,b --examples N --report R --progress P``

Hypothesis generates calls for each tool from the tool's own JSON schema
(``Toolkit.bounded_schemas``): valid ones, and invalid ones (wrong types,
huge and odd Unicode text, NaN, infinities and negative numbers, missing and
extra arguments), with names of real and non-existent layers, fields,
tables, collections and algorithms, and injection strings.  Each call runs
through the agent graph (approve node, gate, toolkit) under the "never"
approval policy, so nothing gated can run, with a stand-in model that makes
exactly that call.  Before each call its tool and arguments go to the
progress file, so a crash (this process dies, faulthandler prints the
stack) is reported with the call that caused it.  The report lists every
call that broke a rule: the run ended, it took over ``SLOW_SECONDS``, it
answered "failed unexpectedly", or it failed and yet changed the project,
the GeoPackage or the database.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import hashlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

SLOW_SECONDS = 5.0
HUNG_SECONDS = 60.0
SHOWN = 300  # characters of a call's arguments kept in reports

WEIRD = [
    "",
    " ",
    "\x00",
    "schools\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\u202eloohcs",  # right-to-left override
    "مدرسة نوردبي",
    "😀" * 50,
    "\n" * 500,
    "\t",
    "NaN",
    "null",
    "[",
    "{",
    "\\",
    "'",
    '"',
    "%s%s%s%n",
    "A" * 100_000,
    "é" * 20_001,
    " ".join(["school"] * 1_600),  # a model looping inside an argument (Python's parser: MemoryError)
    "[" * 1_000,  # json.loads: RecursionError
]
INJECTION = [
    "'; DROP TABLE schools; --",
    "1; DELETE FROM schools",
    "schools; DROP TABLE schools",
    "\"name\" = 'x' OR 1=1",
    "1=1) OR (1=1",
    "../../../../etc/passwd",
    "/etc/passwd",
    "file:///etc/passwd",
    "http://169.254.169.254/latest/meta-data/",
    "${jndi:ldap://127.0.0.1/x}",
    "{{7*7}}",
    "__import__('os').system('touch /tmp/pwned')",
    "<script>alert(1)</script>",
    "pg_sleep(30)",
    "SELECT pg_sleep(30)",
    "eval('1')",
    "layer_property('schools', 'name') || \"name\"",
]
EXPRESSIONS = [
    '"pupils" > 300',
    "\"type\" = 'primary'",
    "\"name\" LIKE '%Nordby%'",
    '"pupils" > ',
    "nonexistent_field = 1",
    "1/0",
    "$area > 1000",
    "overlay_intersects('districts')",
    "regexp_match(\"name\", '(a+)+$')",
    "array_foreach(generate_series(1, 100000000), @element)",
    "",
]
SQL = [
    "SELECT name, pupils FROM schools",
    "SELECT * FROM schools WHERE pupils > 300",
    "SELECT count(*) FROM roads",
    "SELECT * FROM nonexistent_table",
    "SELECT nme FROM schools",
    "SELEC name FROM schools",
    "DELETE FROM schools",
    "UPDATE schools SET pupils = 0",
    "DROP TABLE schools",
    "CREATE TABLE h5_fuzz_pwned (x int)",
    "SELECT pg_sleep(30)",
    "SELECT * FROM generate_series(1, 100000000)",
    "SELECT 1; SELECT 2",
    "COPY schools TO '/tmp/h5_fuzz_copy'",
    "SELECT geom FROM districts",
]
ALGORITHMS = [
    "native:buffer",
    "native:centroids",
    "native:clip",
    "native:countpointsinpolygon",
    "native:extractbyattribute",
    "native:extractbyexpression",
    "native:dissolve",
    "native:fixgeometries",
    "native:reprojectlayer",
    "native:joinattributesbylocation",
    "native:doesnotexist",
    "buffer",
    "qgis:nothing",
    "gdal:",
]
PARAMETER_NAMES = [
    "INPUT",
    "OVERLAY",
    "DISTANCE",
    "SEGMENTS",
    "FIELD",
    "EXPRESSION",
    "OUTPUT",
    "TARGET_CRS",
    "PREDICATE",
    "JOIN",
    "DISSOLVE",
    "NOPE",
]
RUNS = [  # algorithm calls that work on the demo town, to be mutated
    ("native:buffer", {"INPUT": "schools", "DISTANCE": 100}),
    ("native:buffer", {"INPUT": "roads", "DISTANCE": "50 m"}),
    ("native:centroids", {"INPUT": "districts"}),
    ("native:clip", {"INPUT": "schools", "OVERLAY": "districts"}),
    ("native:countpointsinpolygon", {"POLYGONS": "districts", "POINTS": "schools"}),
    ("native:extractbyattribute", {"INPUT": "schools", "FIELD": "type", "OPERATOR": 0, "VALUE": "primary"}),
    ("native:extractbyexpression", {"INPUT": "schools", "EXPRESSION": '"pupils" > 300'}),
    ("native:reprojectlayer", {"INPUT": "schools", "TARGET_CRS": "EPSG:4326"}),
    ("native:joinattributesbylocation", {"INPUT": "districts", "JOIN": "schools", "PREDICATE": [0]}),
]
REALISTIC_PARAMETERS = [parameters for _, parameters in RUNS]
CODE = [
    "print(len(project.mapLayers()))",
    "project.clear()",
    "import os; os.remove('x')",
    "while True: pass",
    "exit()",
    "x = (",
    "a\udfffb",
    "x = 1\n" * 5_000,
]
CHART_KINDS = ["bar", "line", "pie", "histogram", "scatter", "donut", "BAR", ""]
CRS = ["EPSG:4326", "EPSG:25832", "CRS84", "EPSG:999999", "nonsense"]


# -- strategies ------------------------------------------------------------------------------------
def strategies(vocabulary: dict[str, list[str]]) -> Any:
    """A function making the call strategy of one tool from its parameters schema."""
    from hypothesis import strategies as st

    def domain_for(key: str) -> list[str]:
        words = {
            "layer": vocabulary["layers"],
            "fields": vocabulary["fields"],
            "field": vocabulary["fields"],
            "x": vocabulary["fields"] + ["type,district", "a,b,c"],
            "y": vocabulary["fields"] + ["mean(pupils)", "sum(nothing)", "count"],
            "expression": EXPRESSIONS,
            "value": [*EXPRESSIONS, "'closed'", '"pupils" * 2'],
            "filter": ["beds > 100", "name = 'x'", "nme = 1", "beds >", "pupils > 300"],
            "algorithm": ALGORITHMS,
            # find_algorithm: words are searched, ids (right, renamed, wrong) described
            "query": ["count points in polygon", "buffer", "nearest neighbour", "clip", *ALGORITHMS, "Dissolve"],
            "sql": SQL,
            "data": vocabulary["layers"] + SQL[:6],
            "tables": vocabulary["tables"] + ["public.*", "nope.*", "pg_catalog.*", "*"],
            "schema_name": ["public", "geogpt_test", "pg_catalog", "nope"],
            "connection": ["h5_fuzz", "", "nope"],
            "collection": vocabulary["collections"],
            "collections": vocabulary["collections"],
            "properties": ["name", "beds", "pupils", "nope"],
            "server": ["Elvbury", "", "http://127.0.0.1:9", "https://example.com/"],
            "bbox_crs": CRS,
            "names": ["Nordby school", "Nordby schol", "Østervang", "Centre", "Søndre Park", "nowhere at all"],
            "code": CODE,
            "kind": CHART_KINDS,
            "color": ["red", "#1f78b4", "nocolour", "#zzz", "red,black", "Viridis", "viridian"],
            "method": ["single", "categorized", "quantile", "jenks", "pretty", "rules", "heatmap", "pseudocolor",
                       "paletted", "hillshade", "undo", "graduated"],
            "name": ["renamed", "", "   ", "schools"],
            "title": ["Pupils by type", "T" * 199],
            "output_name": ["fuzz_result", "", "schools", "../x"],
            # load_data: the demo's files (relative to the project), a missing one, a folder, a dead URL and template
            "source": ["sensors.csv", "elvbury.gpkg", "elvbury_dem.tif", "nowhere.gpkg", ".", "/etc/passwd",
                       "http://127.0.0.1:9/data.geojson", "http://127.0.0.1:9/{z}/{x}/{y}.png",
                       "h5_fuzz.public.schools"],
            "crs": CRS,
        }
        return words.get(key, [])

    def wrong_type() -> Any:
        return st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.lists(st.integers(), max_size=3),
            st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        )

    def text_for(key: str, spec: dict[str, Any], valid: bool) -> Any:
        limit = int(spec.get("maxLength", 500))
        words = domain_for(key)
        if valid:  # within the schema: mostly the words of the domain, or any text up to the bound
            known = st.sampled_from([w for w in words if len(w) <= limit] or [""])
            return st.one_of(
                known,
                known,
                known,
                st.text(max_size=min(limit, 60)),
                st.integers(0, limit).map(lambda n: "y" * n),
            )
        return st.one_of(
            st.sampled_from(words) if words else st.text(max_size=20),
            st.sampled_from(words) if words else st.text(max_size=20),
            st.sampled_from(WEIRD + INJECTION),
            st.text(max_size=40),
            st.integers(limit + 1, limit + 10).map(lambda n: "x" * n),
        )

    def number_for(spec: dict[str, Any], integer: bool) -> Any:
        edges = [0, -1, 1, 20, 50, 51, 1000, 2**31, -(2**63), 10**13]
        if integer:
            return st.one_of(st.sampled_from(edges), st.integers(-100, 10_000), st.integers())
        floats = [float("nan"), float("inf"), float("-inf"), -0.0, 0.5, 1.5, 1e300, -1e-300]
        return st.one_of(st.sampled_from(floats + edges), st.floats(-1e6, 1e6), st.floats())

    def value_for(key: str, spec: dict[str, Any], valid: bool = False) -> Any:
        """Values for one argument: ``valid`` ones keep to the schema, the others break it in every way."""
        variants = [v for v in spec.get("anyOf", []) if v.get("type") != "null"]
        if variants:
            spec = {**spec, **variants[0]}
        kind = spec.get("type")
        if kind == "string":
            good = text_for(key, spec, valid)
        elif kind == "integer":
            good = number_for(spec, True)
        elif kind == "number":
            good = number_for(spec, False)
        elif kind == "boolean":
            good = st.one_of(st.booleans(), st.sampled_from(["yes", "true", 0, 1]))
        elif kind == "array":
            item = value_for(key, spec.get("items", {}), valid)
            most = int(spec.get("maxItems", 50))
            good = (
                st.lists(item, max_size=min(most, 5))
                if valid
                else st.one_of(
                    st.lists(item, max_size=4),
                    st.lists(item, min_size=most + 1, max_size=most + 3),
                    st.just([]),
                    st.lists(st.one_of(item, wrong_type()), max_size=3),
                )
            )
        elif kind == "object":
            values = st.one_of(
                st.sampled_from(vocabulary["layers"]),
                st.sampled_from(WEIRD + INJECTION),
                number_for({}, False),
                number_for({}, True),
                st.booleans(),
                st.lists(st.sampled_from(vocabulary["layers"]), max_size=3),
                st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
            )
            realistic = st.sampled_from(REALISTIC_PARAMETERS)
            mutated = st.tuples(realistic, st.sampled_from(PARAMETER_NAMES), values).map(lambda t: {**t[0], t[1]: t[2]})
            good = st.one_of(
                realistic,
                mutated,
                st.dictionaries(st.sampled_from(PARAMETER_NAMES), values, max_size=6),
                st.dictionaries(st.text(max_size=10), values, max_size=3),
            )
        else:
            good = st.just(None)
        if valid and kind in ("integer", "number"):
            low, high = spec.get("minimum", -1e12), spec.get("maximum", 1e12)
            good = st.integers(int(low), int(high)) if kind == "integer" else st.floats(low, high)
        return good if valid else st.one_of(good, good, good, wrong_type())

    def call_for(parameters: dict[str, Any]) -> Any:
        """Calls from one tool's parameters schema: mostly broken ones, a third valid, a few not even objects."""
        properties = parameters.get("properties", {})
        required = set(parameters.get("required", []))

        @st.composite
        def draw_call(draw: Any, valid: bool) -> Any:
            args: dict[str, Any] = {}
            for key, spec in properties.items():
                present = key in required if valid else draw(st.integers(0, 9)) > (0 if key in required else 4)
                if present or (valid and draw(st.booleans())):
                    args[key] = draw(value_for(key, spec, valid))
            if not valid and draw(st.integers(0, 14)) == 0:
                args[draw(st.sampled_from(["colour", "layer_name", "\x00", "x" * 1000]))] = 1
            return args

        not_object = st.one_of(st.lists(st.integers(), max_size=3), st.text(max_size=20), st.none(), st.integers())
        valid, broken = draw_call(True), draw_call(False)
        if {"algorithm", "parameters"} <= set(properties):  # runs that work, and one value changed
            values = st.one_of(st.sampled_from(WEIRD + INJECTION), number_for({}, False), number_for({}, True))
            runs = st.tuples(st.sampled_from(RUNS), st.sampled_from(PARAMETER_NAMES), values, st.booleans())
            valid = st.one_of(
                valid,
                runs.map(lambda t: {"algorithm": t[0][0], "parameters": {**t[0][1], **({t[1]: t[2]} if t[3] else {})}}),
            )
        return st.one_of(broken, broken, valid, valid, valid, not_object)

    return call_for


# -- what must not change -----------------------------------------------------------------------------
def project_state(project: Any) -> list[tuple[Any, ...]]:
    """Layers with their names, counts, selection, visibility, style, labels and place in the tree (main thread)."""
    from qgis.core import QgsVectorLayer

    root = project.layerTreeRoot()
    tree = [(node.layerId(), node.parent().name() if node.parent() is not None else "") for node in root.findLayers()]
    rows = []
    for layer in project.mapLayers().values():
        node = root.findLayer(layer.id())
        vector = isinstance(layer, QgsVectorLayer)
        renderer = layer.renderer() if vector else None
        rows.append(
            (
                layer.id(),
                layer.name(),
                layer.featureCount() if vector else -1,
                layer.selectedFeatureCount() if vector else -1,
                node.itemVisibilityChecked() if node is not None else None,
                round(layer.opacity(), 4),
                renderer.dump() if renderer is not None else "",
                layer.subsetString() if vector else "",
                layer.labelsEnabled() if vector else None,
                next((place for place in enumerate(tree) if place[1][0] == layer.id()), None),
            )
        )
    return sorted(rows)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


DEMO_TABLES = ["schools", "hospitals", "landuse", "rivers", "parks", "districts", "roads"]


def database_state() -> str:
    """A hash of every demo table's rows (the fuzzer's SQL and places target these)."""
    from tests.support.postgis import connect

    with connect() as pg, pg.cursor() as cursor:
        parts = []
        for table in DEMO_TABLES:
            cursor.execute(
                f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t"
            )
            parts.append(f"{table}:{cursor.fetchone()}")
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'h5_fuzz%'")
        parts.append(f"fuzz tables:{cursor.fetchone()[0]}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def shown(args: Any) -> str:
    text = ascii(args)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text):,} characters)"


# -- the stand-in model ---------------------------------------------------------------------------------
def make_model() -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class OneCallModel(BaseChatModel):
        """Makes the call it is given, then answers once the tool result is back."""

        pending: Any = None

        @property
        def _llm_type(self) -> str:
            return "fuzz"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            if isinstance(messages[-1], ToolMessage) or self.pending is None:
                message = AIMessage(content="done")
            else:
                name, args = self.pending
                message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "fuzz_1"}])
            return ChatResult(generations=[ChatGeneration(message=message)])

    return OneCallModel()


def crash_in(tool: str) -> None:
    """Make ``tool`` die as a QGIS segmentation fault would (to check the fuzzer reports it)."""
    import functools

    from geogpt_qgis.tools.help.family import CapabilityTools
    from geogpt_qgis.tools.registry import FAMILY_TYPES

    for family in (*FAMILY_TYPES, CapabilityTools):
        original = getattr(family, tool, None)
        if original is not None:

            @functools.wraps(original)
            def dying(*args: Any, **kwargs: Any) -> str:
                faulthandler._sigsegv()
                return ""

            setattr(family, tool, dying)


# -- the batch -------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", required=True)
    parser.add_argument("--examples", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report", required=True)
    parser.add_argument("--progress", required=True)
    parser.add_argument("--ogc-url", default="")
    parser.add_argument("--postgis", action="store_true")
    parser.add_argument("--crash-in", default="", help="self-test: this tool kills the process when called")
    options = parser.parse_args()
    faulthandler.enable(all_threads=True)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from qgis.core import QgsApplication

    app = QgsApplication([], False)
    app.initQgis()
    from geogpt_qgis.tools.processing.catalog import ensure_processing

    ensure_processing()
    from contextlib import ExitStack

    from tests.support.postgis import saved_connection

    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="h5_fuzz_") as folder:
        if options.postgis:
            stack.enter_context(saved_connection("h5_fuzz"))
        report = run_batch(options, Path(folder))
    Path(options.report).write_text(json.dumps(report, ensure_ascii=True))
    app.exitQgis()
    return 0


def run_batch(options: argparse.Namespace, folder: Path) -> dict[str, Any]:
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from langchain_core.messages import HumanMessage, ToolMessage
    from qgis.core import QgsProject

    from geogpt_qgis.agent.graph import build_graph
    from geogpt_qgis.agent.toolkit import Toolkit
    from geogpt_qgis.core.approval import POLICY_NEVER
    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
    from geogpt_qgis.tools.base import ToolContext
    from geogpt_qgis.tools.registry import active_families, build_families
    from tests.support.demo import GPKG, copy_demo
    from tests.support.runs import call_in_thread

    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {options.ogc_url}" if options.ogc_url else "")
    # Time limits as a user might set them: a query that runs into one still answers within SLOW_SECONDS.
    for setting in ("sql_timeout", "ogc_timeout", "code_timeout"):
        PlgOptionsManager.set_value(setting, 3.0)
    project_path = copy_demo(folder / "demo")
    gpkg = project_path.parent / GPKG.name
    project = QgsProject.instance()

    def reopen() -> None:
        project.clear()
        if not project.read(str(project_path)):
            raise RuntimeError(project.error())

    reopen()
    if options.crash_in:
        crash_in(options.crash_in)
    ctx = ToolContext(project=project, bridge=MainThreadBridge(), iface=None)
    families = active_families(build_families(ctx))
    toolkit = Toolkit([tool for family in families for tool in family.tools()])
    wanted = options.tools.split(",")
    missing = [name for name in wanted if name not in toolkit.names]
    if missing:
        return {"error": f"tools not available in the child: {missing}", "calls": {}, "failures": []}
    model = make_model()
    graph = build_graph(model, toolkit, "You are fuzzed.", max_steps=3, context_tokens=32_768)
    layers = sorted({layer.name() for layer in project.mapLayers().values()})
    fields = sorted(
        {f.name() for layer in project.mapLayers().values() if hasattr(layer, "fields") for f in layer.fields()}
    )
    vocabulary = {
        "layers": [*layers, "schols", "nonexistent_layer", "place_nordby"],
        "fields": [*fields, "nme", "no_such_field"],
        "tables": [
            "public.schools",
            "schools",
            "roads",
            "public.nope",
            "pg_catalog.pg_authid",
            "information_schema.tables",
        ],
        "collections": ["schools", "hospitals", "parks_file", "districts", "nope", "schols"],
    }
    call_for = strategies(vocabulary)
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in toolkit.bounded_schemas}
    # Nothing may write to the database under the "never" policy: one baseline for the whole batch.
    database_before = database_state() if options.postgis else ""
    calls: Counter[str] = Counter()
    worked: Counter[str] = Counter()
    errors: dict[str, Counter[str]] = {}
    seconds: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    progress = open(options.progress, "a", encoding="ascii", buffering=1)  # noqa: SIM115 - kept open for the batch

    def invoke(name: str, args: Any) -> tuple[bool, str]:
        if not isinstance(args, dict):  # the graph's messages only carry objects: straight to the toolkit
            outcome = asyncio.run(toolkit.run(name, args))
            return outcome.ok, outcome.text
        model.pending = (name, args)
        state = asyncio.run(
            graph.ainvoke(
                {"messages": [HumanMessage("fuzz")], "approval_policy": POLICY_NEVER}, {"recursion_limit": 20}
            )
        )
        answers = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        if len(answers) != 1:
            return False, f"expected one tool answer, got {len(answers)}"
        return answers[0].status != "error", str(answers[0].content)

    def one_call(name: str, args: Any) -> None:
        if not any(layer.name() == "schools" for layer in project.mapLayers().values()):
            reopen()  # a successful rename or removal would starve the later calls
        before = (project_state(project), file_hash(gpkg), database_before)
        progress.write(json.dumps({"tool": name, "args": shown(args)}) + "\n")
        started = time.monotonic()
        problem = ""
        try:
            ok, text = call_in_thread(invoke, name, args, timeout=HUNG_SECONDS)
        except AssertionError as exc:  # call_in_thread's timeout: the call hangs; nothing more can run
            failures.append({"tool": name, "args": shown(args), "problem": f"hung: {exc}"})
            Path(options.report).write_text(json.dumps(summary(), ensure_ascii=True))
            os._exit(3)
        except BaseException as exc:  # noqa: BLE001 - whatever ended the run is the finding
            ok, text, problem = False, "", f"the run ended: {type(exc).__name__}: {str(exc)[:300]}"
        took = time.monotonic() - started
        calls[name] += 1
        seconds[name] += took
        worked[name] += ok
        errors.setdefault(name, Counter())[text[:60]] += not ok
        if not problem and took > SLOW_SECONDS:
            problem = f"took {took:.1f} s"
        if not problem and "failed unexpectedly" in text:
            problem = f"answered: {text[:400]}"
        if not problem and not ok:
            after = (project_state(project), file_hash(gpkg), database_state() if options.postgis else "")
            changed = [
                what for what, a, b in zip(("project", "GeoPackage", "database"), before, after, strict=True) if a != b
            ]
            if changed:
                problem = f"failed ({text[:200]}) yet changed the {', '.join(changed)}"
        if problem:
            failures.append({"tool": name, "args": shown(args), "problem": problem})

    def summary() -> dict[str, Any]:
        return {
            "calls": dict(calls),
            "worked": dict(worked),
            "seconds": {k: round(v, 2) for k, v in seconds.items()},
            "common_errors": {k: [text for text, _ in v.most_common(4)] for k, v in errors.items()},
            "failures": failures,
        }

    def fuzzer(name: str) -> Any:
        @seed(options.seed)
        @settings(
            max_examples=options.examples,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(args=call_for(schemas[name]))
        def fuzz(args: Any) -> None:
            one_call(name, args)

        return fuzz

    for name in wanted:
        fuzzer(name)()
    if options.postgis and database_state() != database_before:
        failures.append({"tool": ",".join(wanted), "args": "", "problem": "the batch changed the database"})
    progress.close()
    from qgis.core import QgsSettings

    for setting in ("ogc_servers", "sql_timeout", "ogc_timeout", "code_timeout"):  # back to the defaults
        QgsSettings().remove(f"{PlgOptionsManager.GROUP}/{setting}")
    project.clear()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
