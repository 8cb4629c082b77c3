"""The PyQGIS code tool on real QGIS: live project, lasting namespace, captured output, errors, limits and Stop."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.agent.conversation import Conversation
from geogpt_qgis.core.approval import APPROVE, POLICY_TRUST, Decision, current_decision
from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.core.cancel import CancelToken, RunCancelled, current_cancel_token, current_conversation
from geogpt_qgis.core.events import ToolStarted
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.code.family import CodeTools
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import RunRecorder, call_in_thread, wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def code(tool_ctx) -> CodeTools:
    return CodeTools(tool_ctx)


def run_approved(code: CodeTools, source: str, conversation: str = "one") -> ToolResult:
    """Call run_pyqgis as the agent does after the user approved it, in conversation ``conversation``."""

    def approved() -> ToolResult:
        current_decision.set(Decision(APPROVE))
        current_conversation.set(conversation)
        return code.run_pyqgis(source)

    return call_in_thread(approved)


def test_the_code_sees_the_live_project_and_iface(code, demo_project, qgis_iface):
    text = run_approved(
        code,
        "names = sorted(l.name() for l in project.mapLayers().values())\n"
        "print(len(names), names[0])\n"
        "print(iface is not None, project is QgsProject.instance())\n"
        "layer = project.mapLayersByName('schools')[0]\n"
        'layer.selectByExpression("\\"type\\" = \'primary\'")\n'
        "layer.selectedFeatureCount()",
    )
    assert text.text == "Output:\n9 districts\nTrue True\n\nValue: 16"
    assert demo_project.mapLayersByName("schools")[0].selectedFeatureCount() == 16
    assert text.artifact.empty  # it added nothing


def test_layers_the_code_adds_are_in_its_artifact(code, demo_project):
    result = run_approved(code, "project.addMapLayer(QgsVectorLayer('Point?crs=EPSG:25832', 'wells', 'memory'))")
    (added,) = result.artifact.added
    assert added.name == "wells" and demo_project.mapLayer(added.layer_id).name() == "wells"


def test_the_namespace_lasts_for_the_conversation_only(code, demo_project):
    assert run_approved(code, "total = 41").text == "The code ran; it printed nothing."
    assert run_approved(code, "total + 1").text == "Value: 42"
    with pytest.raises(ToolError) as raised:
        run_approved(code, "total + 1", conversation="another")
    assert "NameError: name 'total' is not defined" in str(raised.value)


def test_stdout_and_stderr_are_captured_and_trimmed(code, demo_project, capsys):
    text = run_approved(code, "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)").text
    assert text == "Output:\nto stdout\nto stderr\n"
    assert capsys.readouterr().out == ""  # nothing leaked to the console
    long = run_approved(code, "for i in range(20000):\n    print('line', i)").text
    assert len(long) < 3200
    assert long.startswith("Output:\nline 0\n") and long.rstrip().endswith("line 19999")
    assert "characters not shown" in long


def test_exceptions_come_back_as_text_the_model_can_act_on(code, demo_project):
    with pytest.raises(ToolError) as raised:
        run_approved(code, "print('before')\nlayer = project.mapLayersByName('school')[0]")
    message = str(raised.value)
    assert message.startswith("Output:\nbefore\n")
    assert "The code failed:" in message
    assert 'File "<geogpt>", line 2' in message
    assert "IndexError: list index out of range" in message
    assert "code/runner.py" not in message and "code/family.py" not in message  # only the snippet's own frames
    with pytest.raises(ToolError, match=r"the code does not parse: .* \(line 1\)"):
        run_approved(code, "print('unclosed'")


def test_the_code_time_limit_ends_an_endless_loop(code, demo_project):
    PlgOptionsManager.set_value("code_timeout", 1.0)
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"The code was stopped after 1 s \(the code time limit\)"):
        run_approved(code, "n = 0\nwhile True:\n    n += 1")
    assert time.monotonic() - started < 5
    assert run_approved(code, "n > 1000").text == "Value: True"  # the namespace kept what the loop did


def press_later(seconds: float, action: Callable[[], None]) -> list[float]:
    """Press a button from the Qt event loop, as a click would (the snippet keeps the loop turning)."""
    from qgis.PyQt.QtCore import QTimer

    pressed: list[float] = []

    def press() -> None:
        pressed.append(time.monotonic())
        action()

    QTimer.singleShot(int(seconds * 1000), press)
    return pressed


def test_stop_ends_an_endless_loop_quickly_and_qgis_stays_responsive(code, demo_project):
    from qgis.PyQt.QtCore import QTimer

    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(20)
    token = CancelToken()
    outcome: dict[str, BaseException] = {}

    def approved() -> None:
        current_decision.set(Decision(APPROVE))
        current_conversation.set("stop")
        current_cancel_token.set(token)
        try:
            code.run_pyqgis("while True:\n    pass")
        except BaseException as exc:  # noqa: BLE001 - examined below
            outcome["error"] = exc

    pressed = press_later(0.8, token.cancel)
    thread = threading.Thread(target=approved)
    thread.start()
    try:
        wait_until(lambda: not thread.is_alive(), 10)
        ended = time.monotonic()
    finally:
        timer.stop()
    assert isinstance(outcome.get("error"), RunCancelled)
    assert pressed and ended - pressed[0] < 1.0
    # The Qt event loop kept turning while the snippet looped on the main thread.
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 10 and max(gaps) < 0.3, max(gaps)
    # The snippet itself was interrupted: the main thread is free again.
    assert run_approved(code, "1 + 1", conversation="stop").text == "Value: 2"


def test_stop_during_approved_code_ends_the_run(tool_ctx, demo_project, tmp_path, model_server):
    model_server.script([Turn(tool_calls=[ToolCall("run_pyqgis", {"code": "while True:\n    pass"})]), Turn("x")])
    worker = Conversation(tool_ctx, store_path=tmp_path / "store.sqlite")
    recorder = RunRecorder(worker)
    config = ModelConfig(model="qwen3:8b", base_url=model_server.url, timeout=30)
    try:
        pressed: list[list[float]] = []

        def stop_once_running(run_id: int, event: object) -> None:
            # Stop is a click: an event the snippet's own event pumping delivers.
            if isinstance(event, ToolStarted) and not pressed:
                pressed.append(press_later(0.5, lambda: worker.cancel(run_id)))

        worker.event.connect(stop_once_running)
        run = worker.submit("loop forever", config, POLICY_TRUST)
        assert recorder.wait(run, 20).status == "cancelled"
        assert recorder.finished_at[run] - pressed[0][0] < 1.0
        # The conversation goes on: the next message gets an answer.
        model_server.script([Turn(text="Ready.")])
        later = worker.submit("still there?", config)
        assert recorder.wait(later, 30).status == "finished"
        assert recorder.text(later) == "Ready."
    finally:
        worker.shutdown()


def test_exit_in_the_code_does_not_close_qgis(code, demo_project):
    with pytest.raises(ToolError, match=r"The code was ended by exit\(\); QGIS keeps running"):
        run_approved(code, "print('bye')\nimport sys\nsys.exit(3)")
    assert run_approved(code, "'still here'").text == "Value: 'still here'"


def test_the_approval_card_lists_layers_and_files_the_code_names(code, demo_project):
    request = call_in_thread(code.preview_run_pyqgis, "project.mapLayersByName('rivers')\nopen('/tmp/out.csv', 'w')")
    assert request.notes == ["file /tmp/out.csv"]  # the layer is a target, not a note
    (rivers,) = demo_project.mapLayersByName("rivers")
    assert [(t.kind, t.ident, t.ops) for t in request.targets] == [("layer", rivers.id(), ("named in the code",))]
    assert request.language == "python" and request.editable == "code"
    with pytest.raises(ToolError, match="does not parse"):
        call_in_thread(code.preview_run_pyqgis, "def broken(:")


def test_bandit_finds_nothing_in_the_code_tool() -> None:
    """The plugin repository scans uploads with Bandit and refuses exec/eval: no finding at any severity."""
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "bandit",
            "-q",
            "-f",
            "json",
            "geogpt_qgis/tools/code/runner.py",
            "geogpt_qgis/tools/code/family.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    report: dict[str, Any] = json.loads(found.stdout)
    assert report["errors"] == []
    assert [(r["test_id"], r["issue_text"]) for r in report["results"]] == []
    assert found.returncode == 0
