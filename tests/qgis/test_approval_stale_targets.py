"""A waiting approval whose layer leaves the project says so, whatever the step would change (issue 32).

The card reads the request's typed targets (layer ids), never its text: an
edit of features, a field update or an algorithm run on a layer warn as a
removal does, as soon as that layer (by id) leaves the project, before or
while the card waits; a layer of the same name added back is another layer.
Real previews from the tools, the real dock and model client; GDAL reads the
GeoPackage to check that approving the stale step anyway changed nothing.
"""

from __future__ import annotations

from qgis.core import QgsVectorLayer
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtTest import QTest
from qgis.PyQt.QtWidgets import QLabel

from geogpt_qgis.gui.approval_card import ApprovalCard
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.edits import EditTools
from tests.qgis.test_mcp_approvals import call_in_background, cards, chat, serve_with  # noqa: F401 - fixtures
from tests.qgis.test_mcp_http import texts
from tests.support.dock import items_of, type_and_send
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import call_in_thread, wait_until

PRIMARY = "\"type\" = 'primary'"
GONE = "is no longer in the project: this step can no longer run as asked."


def stored_count(path: str, table: str) -> int:
    """Features of ``table`` in the GeoPackage, read by GDAL (not through QGIS's layers or edit buffers)."""
    from osgeo import ogr

    source = ogr.Open(path)
    count = source.GetLayerByName(table).GetFeatureCount()
    source = None
    return count


def remove(project, name: str) -> str:
    (layer,) = project.mapLayersByName(name)
    source = layer.source()
    project.removeMapLayer(layer.id())
    return source


def test_an_edit_card_warns_when_its_layer_is_removed_while_it_waits_and_approving_changes_nothing(
    panel, model_server, demo_project
):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("edit_features", {"layer": "schools", "expression": PRIMARY, "delete": True})]),
            Turn(text="The schools layer is gone, so nothing was deleted."),
        ]
    )
    (schools,) = demo_project.mapLayersByName("schools")
    path = schools.source().split("|")[0]
    before = stored_count(path, "schools")
    type_and_send(panel, "delete the primary schools")
    wait_until(lambda: bool(panel.statuses), 120)
    assert panel.statuses == ["paused"], panel.statuses
    card = panel.runs.awaiting
    assert isinstance(card, ApprovalCard) and card.layer_ids() == {schools.id(): "schools"}
    assert card.warning is None and card.approve_button.isDefault()
    remove(demo_project, "parks")  # another layer: the step is as asked
    assert card.warning is None and not card.findChildren(QLabel, "geogptTargetGone")
    remove(demo_project, "schools")
    assert card.warning is not None and card.warning.text() == f"'schools' {GONE}"
    assert card.drop_button.text() == "Discard this step" and card.drop_button.isDefault()
    assert not card.approve_button.isDefault()
    QTest.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)  # approved anyway: the contract holds
    wait_until(lambda: panel.statuses[-1:] == ["finished"], 120)
    told = model_server.chat_requests()[-1].tool_messages()[-1]["content"]
    assert told.startswith("Not run: what this call would change is no longer what the user approved")
    assert stored_count(path, "schools") == before
    assert [c for c in items_of(panel, ApprovalCard) if c.warning is not None] == [card]


def test_every_kind_of_change_on_a_layer_warns_by_id_and_a_decided_card_stops_watching(demo_project, tool_ctx):
    edits, processing = EditTools(tool_ctx), ProcessingTools(tool_ctx)
    update = call_in_thread(edits.preview_edit_features, "schools", PRIMARY, field="name", value="'closed'")
    truncate = call_in_thread(processing.preview_run_algorithm, "native:truncatetable", {"INPUT": "parks"})
    assert update is not None and truncate is not None  # both ask: they change data in place
    assert [t.ops for t in update.targets] == [("update name",)] and [t.ops for t in truncate.targets] == [("use",)]
    cards = [ApprovalCard(request.to_dict()) for request in (update, truncate)]
    decided = ApprovalCard(update.to_dict())
    for card in (*cards, decided):
        card.watch_project(demo_project)
        assert card.warning is None
    decided.close_with("Approved")
    source = remove(demo_project, "schools")
    # The same file and name added back is another layer (another id): the step was asked for the one that left.
    demo_project.addMapLayer(QgsVectorLayer(source, "schools", "ogr"))
    assert cards[0].warning is not None and cards[0].warning.text() == f"'schools' {GONE}"
    assert cards[1].warning is None  # its layer is still there
    assert decided.warning is None  # decided before the layer left: nothing to warn about
    remove(demo_project, "parks")
    assert cards[1].warning is not None and cards[1].warning.text() == f"'parks' {GONE}"
    fresh = ApprovalCard(truncate.to_dict())  # a card shown (or restored) after its layer left warns at once
    fresh.watch_project(demo_project)
    assert fresh.warning is not None and fresh.drop_button.isDefault()
    for card in (*cards, decided, fresh):
        card.close_with("Dropped")
        card.deleteLater()


def test_code_labels_and_unsafe_selections_name_their_layer_so_their_cards_warn_too(demo_project, tool_ctx):
    from geogpt_qgis.tools.code.family import CodeTools
    from geogpt_qgis.tools.maps.labels import LabelPart
    from geogpt_qgis.tools.project.family import ProjectTools

    code, labels, project = CodeTools(tool_ctx), LabelPart(tool_ctx), ProjectTools(tool_ctx)
    ids = {name: demo_project.mapLayersByName(name)[0].id() for name in ("rivers", "parks", "schools", "roads")}
    requests = {
        "rivers": call_in_thread(code.preview_run_pyqgis, "layer = project.mapLayersByName('rivers')[0]"),
        "parks": call_in_thread(labels.preview_label_layer, "parks", "env('OPENAI_API_KEY')"),
        "schools": call_in_thread(project.preview_select_features, "schools", "env('HOME') = 'x'"),
        "roads": call_in_thread(project.preview_read_features, "roads", expression="env('HOME') = 'x'"),
    }
    for name, request in requests.items():
        assert request is not None and [(t.kind, t.ident) for t in request.targets] == [("layer", ids[name])], name
    # A layer the code does not name, or a name that is no layer, is no target (the call fails on its own).
    assert call_in_thread(code.preview_run_pyqgis, "print(1)").targets == []
    assert call_in_thread(labels.preview_label_layer, "nowhere", "env('HOME')").targets == []
    cards = {name: ApprovalCard(request.to_dict()) for name, request in requests.items()}
    for card in cards.values():
        card.watch_project(demo_project)
    for name in requests:
        remove(demo_project, name)
        assert cards[name].warning is not None and cards[name].warning.text() == f"'{name}' {GONE}"
    for card in cards.values():
        card.close_with("Dropped")
        card.deleteLater()


def test_an_mcp_clients_card_warns_too_and_its_rejection_reaches_the_client(chat, serve_with, tool_ctx):  # noqa: F811
    from geogpt_qgis.gui.mcp_approvals import DockApprovals

    server = serve_with(DockApprovals(lambda: chat, "ask"))
    outcome: dict = {}
    arguments = {"layer": "schools", "expression": PRIMARY, "field": "name", "value": "'closed'"}
    thread = call_in_background(server.url, "edit_features", arguments, outcome)
    wait_until(lambda: len(cards(chat)) == 1, 120)
    card = cards(chat)[0]
    assert card.warning is None
    remove(tool_ctx.project, "schools")
    assert card.warning is not None and card.warning.text() == f"'schools' {GONE}"
    card.reject_button.click()
    wait_until(lambda: not thread.is_alive(), 120)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].is_error and "rejected" in texts(outcome["result"])


def test_a_url_a_call_would_request_is_a_typed_target(demo_project, tool_ctx):
    from geogpt_qgis.core.targets import URL, Target, broken_contract
    from geogpt_qgis.tools.maps.loading import DataLoading

    url = "http://127.0.0.1:9/data/wells.geojson"  # never requested: previews only read
    request = call_in_thread(DataLoading(tool_ctx).preview_load_data, url)
    assert request is not None and request.targets == [Target(URL, url, url, "127.0.0.1:9", "", ("request",))]
    download = {"URL": "http://user:pw@downloads.example.org/a.csv", "OUTPUT": "TEMPORARY_OUTPUT"}
    request = call_in_thread(ProcessingTools(tool_ctx).preview_run_algorithm, "native:filedownloader", download)
    assert request is not None
    (target,) = [t for t in request.targets if t.kind == URL]
    assert (target.ident, target.source, target.ops) == (download["URL"], "downloads.example.org", ("request",))
    other = {**download, "URL": "http://downloads.example.org/b.csv"}
    now = call_in_thread(ProcessingTools(tool_ctx).preview_run_algorithm, "native:filedownloader", other)
    problem = broken_contract(request.targets, now.targets)  # another URL is another contract
    assert problem is not None and "a.csv' (http" in problem and "is not what this call would change now" in problem
