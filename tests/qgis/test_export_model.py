"""An analysis exported as a Processing model and as a PyQGIS script, then run again by QGIS itself.

Three steps run through the real toolkit on the demo town, as the agent runs
them: buffer the rivers by 300 m, extract the schools that intersect the
buffer, compute a field on them.  The written ``.model3`` is loaded with
``QgsProcessingModelAlgorithm.fromFile`` and run with ``processing.run``: on
the same layers it makes the same layers (feature counts and attribute values
equal, buffer area equal), and unchanged on a copy of the schools with other
features it gives what shapely says it should.
"""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pytest
from shapely import wkb
from shapely.ops import unary_union

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.analysis_steps import Step, analysis_of
from geogpt_qgis.core.artifacts import LayerRef
from geogpt_qgis.tools.registry import build_families
from tests.support.runs import call_in_thread

BUFFER_M = 300.0
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("describe_layer", {"layer": "schools"}),  # only reads: not a step of the analysis
    (
        "run_algorithm",
        {
            "algorithm": "native:buffer",
            "parameters": {"INPUT": "rivers", "DISTANCE": BUFFER_M},
            "output_name": "rivers_300m",
        },
    ),
    (
        "run_algorithm",
        {
            "algorithm": "native:extractbylocation",
            "parameters": {"INPUT": "schools", "PREDICATE": ["intersect"], "INTERSECT": "rivers_300m"},
            "output_name": "schools_by_rivers",
        },
    ),
    ("select_features", {"layer": "schools", "expression": '"pupils" > 300'}),  # a model cannot hold it
    (
        "run_algorithm",
        {
            "algorithm": "native:fieldcalculator",
            "parameters": {
                "INPUT": "schools_by_rivers",
                "FIELD_NAME": "places",
                "FIELD_TYPE": 1,
                "FORMULA": '"pupils" * 2 + 1',
            },
            "output_name": "schools_places",
        },
    ),
]
RESULTS = ("rivers_300m", "schools_by_rivers", "schools_places")


@pytest.fixture
def analysis(tool_ctx) -> list[Step]:
    """The calls run through the toolkit on the demo town, as steps with their artifacts."""
    toolkit = Toolkit([tool for family in build_families(tool_ctx) for tool in family.tools()])
    steps = []
    for name, args in CALLS:
        outcome = call_in_thread(lambda name=name, args=args: asyncio.run(toolkit.run(name, args)))
        assert outcome.ok, f"{name}: {outcome.text}"
        steps.append(Step(name, args, outcome.artifact))
    return steps


def layer_named(project, name: str):
    found = project.mapLayersByName(name)
    assert len(found) == 1, f"{name}: {len(found)} layers"
    return found[0]


def rows(layer, fields: list[str]) -> list[tuple]:
    """The attribute values of ``fields`` of every feature, sorted (feature order is not part of the result)."""
    return sorted((tuple(str(f[name]) for name in fields) for f in layer.getFeatures()), key=repr)


def shapes(layer) -> list:
    return [wkb.loads(bytes(f.geometry().asWkb())) for f in layer.getFeatures()]


def run_model(model, inputs: dict[str, Any]) -> dict[str, Any]:
    import processing

    params = dict(inputs)
    params.update({d.name(): "TEMPORARY_OUTPUT" for d in model.destinationParameterDefinitions()})
    return processing.run(model, params)


def source_kind() -> Any:
    """Where a child's parameter comes from: ``Qgis.ProcessingModelChildParameterSource`` from QGIS 3.3x,
    ``QgsProcessingModelChildParameterSource.Source`` before (3.22)."""
    from qgis.core import Qgis, QgsProcessingModelChildParameterSource

    kind = getattr(Qgis, "ProcessingModelChildParameterSource", None)
    return kind if kind is not None else QgsProcessingModelChildParameterSource.Source


def outputs_by_layer(model, results: dict[str, Any]) -> dict[str, Any]:
    """The model's output layers by the name of the conversation's result layer they stand for."""
    return {d.name().split(":", 1)[-1]: results[d.name()] for d in model.destinationParameterDefinitions()}


def test_export_model_wires_the_three_steps_as_they_ran_and_lists_what_it_cannot_hold(analysis, demo_project, tmp_path):
    from qgis.core import QgsProcessingModelAlgorithm

    from geogpt_qgis.tools.processing.model_export import export_model

    path = tmp_path / "rivers.model3"
    report = export_model(analysis_of(analysis), path, demo_project)
    assert report.steps == 3
    assert report.inputs == ("rivers", "schools")
    assert report.outputs == RESULTS
    assert len(report.outside) == 1 and report.outside[0].startswith("select_features(")

    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(path))
    assert [d.name() for d in model.parameterDefinitions() if not d.isDestination()] == ["rivers", "schools"]
    assert [d.description() for d in model.parameterDefinitions() if not d.isDestination()] == ["rivers", "schools"]
    assert sorted(outputs_by_layer(model, {d.name(): 0 for d in model.destinationParameterDefinitions()})) == sorted(
        RESULTS
    )
    children = model.childAlgorithms()
    assert sorted(child.algorithmId() for child in children.values()) == sorted(
        ["native:buffer", "native:extractbylocation", "native:fieldcalculator"]
    )
    by_algorithm = {child.algorithmId(): child for child in children.values()}
    buffer_id = by_algorithm["native:buffer"].childId()
    intersect = by_algorithm["native:extractbylocation"].parameterSources()["INTERSECT"][0]
    assert intersect.source() == source_kind().ChildOutput
    assert (intersect.outputChildId(), intersect.outputName()) == (buffer_id, "OUTPUT")
    distance = by_algorithm["native:buffer"].parameterSources()["DISTANCE"][0]
    assert distance.source() == source_kind().StaticValue
    assert float(distance.staticValue()) == BUFFER_M
    rivers = by_algorithm["native:buffer"].parameterSources()["INPUT"][0]
    assert (rivers.source(), rivers.parameterName()) == (
        source_kind().ModelParameter,
        "rivers",
    )
    # The Graphical Modeler would accept it as it is: every child's parameters are set.
    assert model.validate()[0], model.validate()[1]
    help_text = model.helpContent()["ALG_DESC"]
    assert "select_features(" in help_text and "describe_layer" not in help_text


def test_export_model_run_on_the_same_layers_makes_the_same_result_layers(analysis, demo_project, tmp_path):
    from qgis.core import QgsProcessingModelAlgorithm

    from geogpt_qgis.tools.processing.model_export import export_model

    path = tmp_path / "again.model3"
    export_model(analysis_of(analysis), path, demo_project)
    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(path))
    inputs = {"rivers": layer_named(demo_project, "rivers"), "schools": layer_named(demo_project, "schools")}
    made = outputs_by_layer(model, run_model(model, inputs))
    for name in RESULTS:
        theirs, ours = layer_named(demo_project, name), made[name]
        assert ours.featureCount() == theirs.featureCount() > 0, name
        fields = [f for f in ours.fields().names() if f != "fid"]
        assert rows(ours, fields) == rows(theirs, fields), name
    # The buffer drawn as finely as the conversation's (the runner's arcs, not QGIS's 5 segments): area in m²
    # (layer units, EPSG:25832), measured by shapely on both; an independent 300 m buffer of the rivers agrees.
    ours_area = unary_union(shapes(made["rivers_300m"])).area
    theirs_area = unary_union(shapes(layer_named(demo_project, "rivers_300m"))).area
    assert ours_area == pytest.approx(theirs_area, rel=1e-9)
    expected = unary_union([s.buffer(BUFFER_M, quad_segs=64) for s in shapes(inputs["rivers"])]).area
    assert ours_area == pytest.approx(expected, rel=1e-3)
    places = {f["name"]: f["places"] for f in made["schools_places"].getFeatures()}
    assert places == {f["name"]: f["pupils"] * 2 + 1 for f in made["schools_by_rivers"].getFeatures()}


@pytest.fixture
def other_schools(demo_project, tmp_path) -> Path:
    """A copy of the schools with other features: every second one, moved 200 m north (same fields)."""
    import processing

    path = tmp_path / "other_schools.gpkg"
    processing.run(
        "native:geometrybyexpression",
        {
            "INPUT": processing.run(
                "native:extractbyexpression",
                {"INPUT": layer_named(demo_project, "schools"), "EXPRESSION": '"fid" % 2 = 0', "OUTPUT": "memory:"},
            )["OUTPUT"],
            "OUTPUT_GEOMETRY": 2,
            "EXPRESSION": "translate($geometry, 0, 200)",
            "OUTPUT": str(path),
        },
    )
    return path


def test_export_model_runs_unchanged_on_another_layer_with_the_same_fields(
    analysis, demo_project, other_schools, tmp_path
):
    from qgis.core import QgsProcessingModelAlgorithm, QgsVectorLayer

    from geogpt_qgis.tools.processing.model_export import export_model

    path = tmp_path / "other.model3"
    export_model(analysis_of(analysis), path, demo_project)
    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(path))
    schools = QgsVectorLayer(str(other_schools), "other_schools", "ogr")
    assert schools.isValid() and schools.featureCount() == 15  # 31 schools, every second one
    rivers = layer_named(demo_project, "rivers")
    made = outputs_by_layer(model, run_model(model, {"rivers": rivers, "schools": schools}))
    # Independently: the moved schools within 300 m of a river (shapely, metres in EPSG:25832).
    lines = unary_union(shapes(rivers))
    near = {
        f["name"] for f in schools.getFeatures() if wkb.loads(bytes(f.geometry().asWkb())).distance(lines) <= BUFFER_M
    }
    got = {f["name"]: (f["pupils"], f["places"]) for f in made["schools_places"].getFeatures()}
    assert near and set(got) == near
    assert near != {f["name"] for f in layer_named(demo_project, "schools_places").getFeatures()}
    assert all(places == pupils * 2 + 1 for pupils, places in got.values())


def test_export_model_as_a_pyqgis_script_runs_the_same_steps(analysis, demo_project, other_schools, tmp_path):
    from qgis.core import QgsVectorLayer

    from geogpt_qgis.tools.processing.script_export import export_script

    path = tmp_path / "analysis.py"
    report = export_script(analysis_of(analysis), path, demo_project)
    text = path.read_text(encoding="utf-8")
    assert report.outside[0] in text  # listed in the header, not dropped
    assert text.count("processing.run(") == 3
    assert "RIVERS = 'rivers'" in text and "SCHOOLS = 'schools'" in text
    theirs = {name: layer_named(demo_project, name) for name in RESULTS}
    before = set(demo_project.mapLayers())
    try:
        made = runpy.run_path(str(path))["results"]
        for name in RESULTS:
            fields = [f for f in made[name].fields().names() if f != "fid"]
            assert made[name].featureCount() == theirs[name].featureCount() > 0, name
            assert rows(made[name], fields) == rows(theirs[name], fields), name
        assert {layer.name() for i, layer in demo_project.mapLayers().items() if i not in before} == set(RESULTS)
        # The input is a variable at the top: pointed at the other schools, the script runs on them.
        edited = tmp_path / "other.py"
        edited.write_text(text.replace("SCHOOLS = 'schools'", f"SCHOOLS = {str(other_schools)!r}"), encoding="utf-8")
        other = runpy.run_path(str(edited))["results"]
        copy = QgsVectorLayer(str(other_schools), "copy", "ogr")
        got = {f["name"] for f in other["schools_places"].getFeatures()}
        assert got and got <= {f["name"] for f in copy.getFeatures()}
        assert got != {f["name"] for f in theirs["schools_places"].getFeatures()}
    finally:
        demo_project.removeMapLayers([i for i in demo_project.mapLayers() if i not in before])


def test_export_model_reprojects_a_layer_in_degrees_before_a_distance_as_the_run_did(tool_ctx, demo_project, tmp_path):
    """The runner reprojects a layer in degrees to its UTM zone before a distance in metres; so does the model."""
    import processing
    from qgis.core import QgsCoordinateReferenceSystem, QgsProcessingModelAlgorithm

    from geogpt_qgis.tools.processing.model_export import export_model
    from geogpt_qgis.tools.processing.script_export import export_script

    rivers = layer_named(demo_project, "rivers")
    wgs84 = processing.run(
        "native:reprojectlayer",
        {"INPUT": rivers, "TARGET_CRS": QgsCoordinateReferenceSystem("EPSG:4326"), "OUTPUT": "memory:"},
    )["OUTPUT"]
    wgs84.setName("rivers_wgs84")
    demo_project.addMapLayer(wgs84)
    toolkit = Toolkit([tool for family in build_families(tool_ctx) for tool in family.tools()])
    args = {
        "algorithm": "native:buffer",
        "parameters": {"INPUT": "rivers_wgs84", "DISTANCE": BUFFER_M},
        "output_name": "wgs84_300m",
    }
    outcome = call_in_thread(lambda: asyncio.run(toolkit.run("run_algorithm", args)))
    assert outcome.ok, outcome.text
    analysis = analysis_of([Step("run_algorithm", args, outcome.artifact)])

    path = tmp_path / "degrees.model3"
    report = export_model(analysis, path, demo_project)
    assert report.inputs == ("rivers_wgs84",) and report.outputs == ("wgs84_300m",)
    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(path))
    assert sorted(c.algorithmId() for c in model.childAlgorithms().values()) == [
        "native:buffer",
        "native:reprojectlayer",
    ]
    assert model.validate()[0], model.validate()[1]
    made = outputs_by_layer(model, run_model(model, {"rivers_wgs84": wgs84}))["wgs84_300m"]
    theirs = layer_named(demo_project, "wgs84_300m")
    assert made.crs() == theirs.crs() and not made.crs().isGeographic()
    assert made.featureCount() == theirs.featureCount() == rivers.featureCount()
    # Areas in m² of the result's UTM CRS (shapely): the same buffer as the run's, and as 300 m around the rivers
    # in the demo's own metric CRS (EPSG:25832, shapely buffer), within 0.1%.
    ours_area = unary_union(shapes(made)).area
    assert ours_area == pytest.approx(unary_union(shapes(theirs)).area, rel=1e-9)
    expected = unary_union([s.buffer(BUFFER_M, quad_segs=64) for s in shapes(rivers)]).area
    assert ours_area == pytest.approx(expected, rel=1e-3)

    script = tmp_path / "degrees.py"
    export_script(analysis, script, demo_project)
    text = script.read_text(encoding="utf-8")
    assert text.count("processing.run(") == 2 and "'native:reprojectlayer'" in text
    compile(text, str(script), "exec")


def test_export_model_opens_in_the_graphical_modeler(analysis, demo_project, tmp_path, qgis_iface, monkeypatch):
    """QGIS's own Modeler dialog draws it: an arrow for each wire (two inputs, two steps into the next, three
    outputs), and finds nothing to fix."""
    from processing.modeler.ModelerDialog import ModelerDialog
    from qgis.core import QgsProcessingModelAlgorithm
    from qgis.PyQt.QtCore import QSize
    from qgis.PyQt.QtWidgets import QGraphicsPathItem

    from geogpt_qgis.tools.processing.model_export import export_model

    # The 3.22 Modeler asks QGIS's window for its toolbar icon size; pytest-qgis's stand-in needs the argument.
    monkeypatch.setattr(qgis_iface, "iconSize", lambda *_args, **_kwargs: QSize(24, 24), raising=False)
    path = tmp_path / "drawn.model3"
    export_model(analysis_of(analysis), path, demo_project)
    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(path))
    dialog = ModelerDialog.create()
    try:
        dialog.setModel(model)
        arrows = [item for item in dialog.view().scene().items() if isinstance(item, QGraphicsPathItem)]
        assert len(arrows) == 2 + 2 + 3
        assert dialog.model().validate()[0]
        assert sorted(dialog.model().childAlgorithms()) == sorted(model.childAlgorithms())
    finally:
        dialog.deleteLater()


def test_export_model_script_keeps_hostile_layer_names_and_calls_as_data(demo_project, tmp_path):
    """Layer names and call text from the conversation are values and comments in the script, never code."""
    import ast

    from geogpt_qgis.core.artifacts import AlgorithmRun, ToolArtifact
    from geogpt_qgis.tools.processing.analysis_plan import plan_analysis
    from geogpt_qgis.tools.processing.script_export import script_text

    hostile = 'Höhe²"""\nimport os; os.system("boom")  # '
    steps = [
        Step(
            "run_algorithm",
            {},
            ToolArtifact(
                layers=(LayerRef(hostile, "h1"),),
                algorithm=AlgorithmRun("native:buffer", {"INPUT": "h1", "DISTANCE": "50"}),
                added=(LayerRef(hostile + "_buffer\n__import__('os')", "b1"),),
            ),
        ),
        Step("run_pyqgis", {"code": '"""\nimport shutil; shutil.rmtree("/")\n'}),
    ]
    text = script_text(plan_analysis(analysis_of(steps), demo_project))
    tree = ast.parse(text)
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "Import", "ImportFrom", "Assign", "For"}
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    called = {ast.unparse(call.func) for call in calls}
    assert called == {
        "processing.run",
        "results.items",
        "layer.setName",
        "QgsProject.instance().addMapLayer",
        "QgsProject.instance",
    }
    inputs = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()
    }
    assert inputs == {"HOHE2_IMPORT_OS_OS_SYSTEM_BOOM": hostile}  # the name kept whole as a value
    assert "rmtree" in text and all(line.startswith("#") for line in text.splitlines() if "rmtree" in line)
