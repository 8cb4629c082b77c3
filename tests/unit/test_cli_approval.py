"""The terminal's approval prompt (``ask --approval ask``): what it prints and what each answer decides."""

from __future__ import annotations

import io

from geogpt_qgis.cli_approval import TerminalApprover, is_terminal, preview, visible
from geogpt_qgis.core.approval import APPROVE, REJECT, ApprovalRequest, Decision
from geogpt_qgis.core.targets import LAYER, Target


def removal(call_id: str = "call-1") -> ApprovalRequest:
    return ApprovalRequest(
        action="Remove layer 'parks' from the project",
        details="The layer 'parks' (polygons, 12 features) leaves the project.",
        targets=[Target(LAYER, "parks", "parks_1a", "ogr: elvbury.gpkg|layername=parks", ops=("remove",))],
        notes=["its data source stays"],
        tool="set_layer",
        call_id=call_id,
        args={"layer": "parks", "remove": True},
        effects=["change_project"],
    )


def code(source: str) -> ApprovalRequest:
    return ApprovalRequest(
        action="Run Python code",
        details=source,
        language="python",
        editable="code",
        tool="run_pyqgis",
        call_id="call-9",
        args={"code": source},
        effects=["run_code"],
    )


def answered(request: ApprovalRequest, *lines: str) -> tuple[dict, str, TerminalApprover]:
    out = io.StringIO()
    approver = TerminalApprover(io.StringIO("".join(f"{line}\n" for line in lines)), out)
    return approver.decide(request), out.getvalue(), approver


def test_the_preview_shows_what_the_card_shows():
    shown = preview(removal())
    assert shown.startswith("Approval needed: Remove layer 'parks' from the project\n")
    assert "  tool: set_layer\n" in shown
    assert "  which: changes the project\n" in shown
    assert "  affects: layer 'parks' (ogr: elvbury.gpkg|layername=parks): remove\n" in shown
    assert "  note: its data source stays\n" in shown
    assert "  layer: parks\n" in shown and "  remove: True\n" in shown
    assert "  | The layer 'parks' (polygons, 12 features) leaves the project.\n" in shown


def test_code_is_shown_whole_with_hidden_characters_spelled_out():
    source = "x = 1\nprint('ok')\x1b[2K\x1b[1A\u202e# looks harmless\nos.remove(path)\r"
    shown = preview(code(source))
    assert "\x1b" not in shown and "\u202e" not in shown and "\r" not in shown
    assert "  | print('ok')\\x1b[2K\\x1b[1A\\u202e# looks harmless\n" in shown
    assert "  | os.remove(path)\\x0d\n" in shown
    assert "  --- code ---\n" in shown
    # The editable argument (the code) is not repeated among the short facts.
    assert "  code:" not in shown
    assert visible("tab\there") == "tab\there"


def test_y_approves_the_call_that_waits():
    decision, said, _ = answered(removal("call-7"), "y")
    assert decision == {"action": APPROVE, "trust": False, "always": False, "call_id": "call-7"}
    assert Decision.from_value(decision).approved
    assert "[a]lways for set_layer" in said and said.endswith("Approved.\n")


def test_n_refuses_with_the_reason_that_follows():
    decision, said, _ = answered(removal(), "n  the parks stay")
    assert decision == {"action": REJECT, "reason": "the parks stay", "call_id": "call-1"}
    assert said.endswith("Refused; the assistant is told why.\n")
    assert answered(removal(), "No")[0] == {"action": REJECT, "reason": "", "call_id": "call-1"}


def test_always_is_the_cards_always_for_this_tool():
    decision, _, _ = answered(removal(), "always")
    assert decision == {"action": APPROVE, "trust": False, "always": True, "call_id": "call-1"}
    assert Decision.from_value(decision).always
    assert answered(removal(), "A")[0]["always"] is True


def test_anything_else_asks_again():
    decision, said, _ = answered(removal(), "", "maybe", "yes")
    assert decision["action"] == APPROVE
    assert said.count("Run it?") == 3
    assert said.count("Please answer y, n or always.") == 2


def test_always_is_not_offered_for_code():
    decision, said, _ = answered(code("print(1)"), "a", "n")
    assert decision["action"] == REJECT
    assert "[a]lways" not in said
    assert "'always' is not offered for code: answer y or n." in said


def test_end_of_input_refuses_this_step_and_every_later_one_without_asking():
    decision, said, approver = answered(removal(), "")
    assert decision["action"] == REJECT  # an empty line asked again, then the input ended
    assert "No answer (input ended): refused." in said
    out = io.StringIO()
    approver.out = out
    again = approver.decide(removal("call-2"))
    assert again == {"action": REJECT, "reason": "no one answered", "call_id": "call-2"}
    assert "Run it?" not in out.getvalue() and "input ended" in out.getvalue()


def test_only_a_terminal_counts_as_one():
    assert is_terminal(io.StringIO()) is False
    closed = io.StringIO()
    closed.close()
    assert is_terminal(closed) is False
