"""The dock's "Export as model…": under an answer (its steps) and in the conversation's menu (every step).

The real dock against the scripted model server; the file dialog is replaced
by the path it would return (``ask_path``), everything else is what a click does.
"""

from __future__ import annotations

from qgis.core import QgsProcessingModelAlgorithm
from qgis.PyQt.QtWidgets import QLabel

from geogpt_qgis.gui import model_export_actions
from tests.support.dock import type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import wait_until

RESULTS = ("rivers_200m", "schools_by_rivers", "schools_places")
FIRST = [
    Turn(
        tool_calls=[
            ToolCall(
                "run_algorithm",
                {
                    "algorithm": "native:buffer",
                    "parameters": {"INPUT": "rivers", "DISTANCE": 200},
                    "output_name": RESULTS[0],
                },
            )
        ]
    ),
    Turn(
        tool_calls=[
            ToolCall(
                "run_algorithm",
                {
                    "algorithm": "native:extractbylocation",
                    "parameters": {"INPUT": "schools", "PREDICATE": ["intersect"], "INTERSECT": RESULTS[0]},
                    "output_name": RESULTS[1],
                },
            )
        ]
    ),
    Turn(tool_calls=[ToolCall("set_layer", {"layer": "parks", "visible": False})]),
    Turn(
        tool_calls=[
            ToolCall(
                "run_algorithm",
                {
                    "algorithm": "native:fieldcalculator",
                    "parameters": {
                        "INPUT": RESULTS[1],
                        "FIELD_NAME": "places",
                        "FIELD_TYPE": 1,
                        "FORMULA": '"pupils" - 5',
                    },
                    "output_name": RESULTS[2],
                },
            )
        ]
    ),
    Turn(text="12 schools are within 200 m of a river."),
]
SECOND = [
    Turn(
        tool_calls=[
            ToolCall(
                "run_algorithm",
                {"algorithm": "native:dissolve", "parameters": {"INPUT": RESULTS[2]}, "output_name": "school_area"},
            )
        ]
    ),
    Turn(text="Dissolved."),
]


def ask_and_wait(panel, question: str) -> None:
    done = len(panel.statuses)
    type_and_send(panel, question)
    wait_until(lambda: len(panel.statuses) > done, 120)
    assert panel.statuses[-1] == "finished"


def notices(panel) -> list[str]:
    return [w.text() for w in panel.chat.items() if isinstance(w, QLabel)]


def rows(layer, fields: list[str]) -> list[tuple]:
    return sorted((tuple(str(f[name]) for name in fields) for f in layer.getFeatures()), key=repr)


def test_export_model_from_an_answer_and_from_the_whole_conversation(
    panel, model_server, demo_project, tmp_path, monkeypatch
):
    import processing

    model_server.script(
        [*FIRST, *SECOND, Turn(tool_calls=[ToolCall("describe_layer", {"layer": "schools"})]), Turn(text="31.")]
    )
    ask_and_wait(panel, "Which schools are within 200 m of a river?")
    button = panel.model_export.button
    assert button is not None and button.isEnabled()
    assert model_export_actions._newest_answer_actions(panel.chat.items()) is not None
    assert panel.chat.items()[-1] is button.parentWidget()  # a line of its own under the answer

    picked = tmp_path / "answer"  # no extension typed: the model's is added
    monkeypatch.setattr(model_export_actions, "ask_path", lambda _parent: str(picked))
    button.click()
    written = tmp_path / "answer.model3"
    assert written.is_file()
    said = notices(panel)[-1]
    assert f"Saved the Processing model {written}: 3 step(s)." in said
    assert "set_layer(" in said  # what the model cannot hold is said, not dropped

    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(written))
    inputs = {name: demo_project.mapLayersByName(name)[0] for name in ("rivers", "schools")}
    params = {**inputs, **{d.name(): "TEMPORARY_OUTPUT" for d in model.destinationParameterDefinitions()}}
    results = processing.run(model, params)
    made = {d.name().split(":", 1)[-1]: results[d.name()] for d in model.destinationParameterDefinitions()}
    for name in RESULTS:
        theirs = demo_project.mapLayersByName(name)[0]
        fields = [f for f in made[name].fields().names() if f != "fid"]
        assert made[name].featureCount() == theirs.featureCount() > 0, name
        assert rows(made[name], fields) == rows(theirs, fields), name

    # A second question in the same conversation: its answer exports its one step; the menu exports all four.
    ask_and_wait(panel, "Dissolve them")
    second = panel.model_export.button
    assert second is not button and second.isEnabled()
    monkeypatch.setattr(model_export_actions, "ask_path", lambda _parent: str(tmp_path / "dissolve.py"))
    second.click()
    script = (tmp_path / "dissolve.py").read_text(encoding="utf-8")
    assert script.count("processing.run(") == 1 and "SCHOOLS_PLACES = 'schools_places'" in script

    whole = tmp_path / "whole.model3"
    monkeypatch.setattr(model_export_actions, "ask_path", lambda _parent: str(whole))
    action = next(a for a in panel.conversation_bar.menu.actions() if a.text() == "Export analysis as model…")
    action.trigger()
    wait_until(whole.exists, 120)
    model = QgsProcessingModelAlgorithm()
    assert model.fromFile(str(whole))
    assert sorted(c.algorithmId() for c in model.childAlgorithms().values()) == sorted(
        ["native:buffer", "native:extractbylocation", "native:fieldcalculator", "native:dissolve"]
    )
    dissolve = next(c for c in model.childAlgorithms().values() if c.algorithmId() == "native:dissolve")
    source = dissolve.parameterSources()["INPUT"][0]
    calculator = next(c for c in model.childAlgorithms().values() if c.algorithmId() == "native:fieldcalculator")
    assert (source.outputChildId(), source.outputName()) == (calculator.childId(), "OUTPUT")  # across the turns
    assert "set_layer(" in model.helpContent()["ALG_DESC"]

    # An answer that ran no algorithm: nothing to export, and the button says why.
    ask_and_wait(panel, "How many schools?")
    assert not panel.model_export.button.isEnabled()
    assert panel.model_export.button.toolTip() == "No processing algorithm ran for this answer"
