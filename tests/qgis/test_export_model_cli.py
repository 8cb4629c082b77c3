"""``python -m geogpt_qgis ask ... --export-model PATH``: the run's analysis as a model QGIS runs again.

The real command in a subprocess against the scripted model server: the model
asks for a buffer, an extraction and a field computed on it, and a layer
shown; the command writes the model, says what it left out, and the model run
on the demo layers makes the layers the command saved.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from qgis.core import QgsProcessingModelAlgorithm, QgsProject, QgsVectorLayer

from tests.support.demo import copy_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import ask

RESULTS = ("rivers_250m", "schools_by_rivers", "schools_places")
STEPS = [
    ToolCall(
        "run_algorithm",
        {"algorithm": "native:buffer", "parameters": {"INPUT": "rivers", "DISTANCE": 250}, "output_name": RESULTS[0]},
    ),
    ToolCall(
        "run_algorithm",
        {
            "algorithm": "native:extractbylocation",
            "parameters": {"INPUT": "schools", "PREDICATE": ["intersect"], "INTERSECT": RESULTS[0]},
            "output_name": RESULTS[1],
        },
    ),
    ToolCall("set_layer", {"layer": "parks", "visible": False}),
    ToolCall(
        "run_algorithm",
        {
            "algorithm": "native:fieldcalculator",
            "parameters": {"INPUT": RESULTS[1], "FIELD_NAME": "places", "FIELD_TYPE": 1, "FORMULA": '"pupils" + 10'},
            "output_name": RESULTS[2],
        },
    ),
]


@pytest.fixture(autouse=True)
def user_data(tmp_path, monkeypatch) -> Path:
    """The command reads a QGIS profile under its own data folder, never the user's real one."""
    data = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("QGIS_CUSTOM_CONFIG_PATH", raising=False)
    return data


def ask_with_export(server, project: Path, *extra: str):
    server.script([*(Turn(tool_calls=[call]) for call in STEPS), Turn(text="Done.")])
    return ask(
        "Which schools are within 250 m of a river?",
        "--project",
        str(project),
        "--base-url",
        server.url,
        "--model",
        "qwen3:8b",
        *extra,
    )


def rows(layer, fields: list[str]) -> list[tuple]:
    return sorted((tuple(str(f[name]) for name in fields) for f in layer.getFeatures()), key=repr)


def test_export_model_from_the_cli_writes_the_runs_model_which_remakes_its_layers(model_server, tmp_path, qgis_app):
    import processing

    project_file = copy_demo(tmp_path / "demo")
    model_file, saved_file = tmp_path / "out" / "schools.model3", tmp_path / "saved.qgz"
    done = ask_with_export(model_server, project_file, "--export-model", str(model_file), "--save", str(saved_file))
    assert done.returncode == 0, done.stderr
    assert f"Wrote the Processing model {model_file}: 3 step(s) from rivers, schools" in done.stderr
    assert "Not in it (redo these by hand):" in done.stderr and "set_layer(" in done.stderr

    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(model_file))
    assert "set_layer(" in model.helpContent()["ALG_DESC"]
    saved = QgsProject()
    assert saved.read(str(saved_file))
    try:
        source = {name: saved.mapLayersByName(name)[0] for name in ("rivers", "schools", *RESULTS)}
        params = {"rivers": source["rivers"], "schools": source["schools"]}
        params.update({d.name(): "TEMPORARY_OUTPUT" for d in model.destinationParameterDefinitions()})
        results = processing.run(model, params)
        made = {d.name().split(":", 1)[-1]: results[d.name()] for d in model.destinationParameterDefinitions()}
        assert sorted(made) == sorted(RESULTS)
        for name in RESULTS:
            theirs = source[name]
            assert isinstance(theirs, QgsVectorLayer) and theirs.isValid(), name
            fields = [f for f in made[name].fields().names() if f != "fid"]
            assert made[name].featureCount() == theirs.featureCount() > 0, name
            assert rows(made[name], fields) == rows(theirs, fields), name
    finally:
        saved.clear()


def test_export_model_from_the_cli_as_a_script_and_a_run_without_algorithms_fails_clearly(model_server, tmp_path):
    project_file = copy_demo(tmp_path / "demo")
    script = tmp_path / "schools.py"
    done = ask_with_export(model_server, project_file, "--export-model", str(script))
    assert done.returncode == 0, done.stderr
    text = script.read_text(encoding="utf-8")
    assert text.count("processing.run(") == 3 and "# - set_layer(" in text
    compile(text, str(script), "exec")  # valid Python

    model_server.script(
        [Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "visible": False})]), Turn(text="Ok.")]
    )
    nothing = tmp_path / "nothing.model3"
    failed = ask(
        "Hide the parks",
        "--project",
        str(project_file),
        "--base-url",
        model_server.url,
        "--model",
        "qwen3:8b",
        "--export-model",
        str(nothing),
    )
    assert failed.returncode == 1
    assert "error: could not export the model: no processing algorithm ran" in failed.stderr
    assert "set_layer(" in failed.stderr
    assert not nothing.exists()
