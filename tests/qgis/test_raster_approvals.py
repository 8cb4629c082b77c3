"""A raster calculator call that names a class label where its code goes is refused before the user is asked:
no approval card for a call bound to fail; the error reaches the model as the tool's answer.  The same call
with the code still asks (it writes a file: that needs approval)."""

from __future__ import annotations

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.core.approval import POLICY_ASK
from geogpt_qgis.core.events import ApprovalRequested
from tests.support.model_server import ToolCall, Turn


@pytest.fixture
def config(model_server) -> ModelConfig:
    return ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=30)


def calculator(formula: str, output: str) -> dict:
    parameters = {"INPUT_A": "landcover", "BAND_A": 1, "FORMULA": formula, "OUTPUT": output}
    return {"algorithm": "gdal:rastercalculator", "parameters": parameters, "output_name": "forest"}


@pytest.mark.parametrize("formula", ['A=="Forest"', "A==Forest", "(A == forest) * 1"])
def test_a_class_label_in_the_formula_is_refused_without_a_card(
    formula, demo_project, worker, recorder, config, model_server, tmp_path
):
    output = tmp_path / "out" / "forest.tif"
    call = ToolCall("run_algorithm", calculator(formula, str(output)))
    model_server.script([Turn(tool_calls=[call]), Turn(text="Noted.")])
    before = sorted(demo_project.mapLayers())
    run_id = worker.submit("Where is the forest?", config, POLICY_ASK)
    finished = recorder.wait(run_id, 60)
    assert finished.status == "finished", finished.error
    assert recorder.of(run_id, ApprovalRequested) == []
    (result,) = recorder.tool_results(run_id)
    assert not result.ok
    told = model_server.chat_requests()[-1].tool_messages()[-1]["content"]
    assert "FORMULA: 'forest' is a class label of 'landcover', not a value; its code is 3" in told, told
    assert sorted(demo_project.mapLayers()) == before
    assert not output.parent.exists()  # nothing written, not even its folder


def test_the_same_call_with_the_code_still_asks(demo_project, worker, recorder, config, model_server, tmp_path):
    call = ToolCall("run_algorithm", calculator("A==3", str(tmp_path / "out" / "forest.tif")))
    model_server.script([Turn(tool_calls=[call]), Turn(text="Done.")])
    before = sorted(demo_project.mapLayers())
    run_id = worker.submit("Where is the forest?", config, POLICY_ASK)
    finished = recorder.wait(run_id, 60)
    assert finished.status == "paused", [r.result for r in recorder.tool_results(run_id)]
    (asked,) = recorder.of(run_id, ApprovalRequested)
    assert "gdal:rastercalculator" in asked.request["action"] and "forest.tif" in asked.request["details"]
    assert sorted(demo_project.mapLayers()) == before
    assert len(model_server.chat_requests()) == 1  # the model waits for the user
