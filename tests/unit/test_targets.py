"""The contract of an approval on resolved targets (core.targets) and the "always" answers bound to them."""

from __future__ import annotations

from geogpt_qgis.core.approval import ApprovalRequest, StandingApprovals
from geogpt_qgis.core.targets import FILE, LAYER, TABLE, Target, broken_contract, within

GPKG = "ogr: /data/elvbury.gpkg"
SCHOOLS = Target(LAYER, "schools", "schools_1a2b", f"{GPKG}|layername=schools", "31 features", ("delete",))
PARKS = Target(LAYER, "schools", "parks_9f8e", f"{GPKG}|layername=parks", "14 features", ("delete",))
NOTES = Target(TABLE, "notes", "elvbury/public.notes", "connection 'elvbury': db 'town'", "oid 16401", ("insert",))


def test_the_same_targets_keep_the_contract():
    assert broken_contract([SCHOOLS, NOTES], [NOTES, SCHOOLS]) is None
    assert broken_contract([], []) is None


def test_a_name_that_now_means_another_layer_breaks_it_and_says_which():
    problem = broken_contract([SCHOOLS], [PARKS])
    assert problem is not None and "parks_9f8e" in problem and "schools_1a2b" in problem


def test_other_state_a_wider_operation_or_an_extra_target_breaks_it():
    recreated = Target(TABLE, "notes", NOTES.ident, NOTES.source, "oid 16999", ("insert",))
    assert "oid 16401 then, oid 16999 now" in (broken_contract([NOTES], [recreated]) or "")
    dropping = Target(TABLE, "notes", NOTES.ident, NOTES.source, NOTES.state, ("insert", "drop"))
    assert "also drop" in (broken_contract([NOTES], [dropping]) or "")
    assert "also change" in (broken_contract([NOTES], [NOTES, SCHOOLS]) or "")
    assert broken_contract([NOTES], []) is not None


def test_a_path_that_now_leads_elsewhere_breaks_it():
    approved = Target(FILE, "/out/town.pdf", "/out/town.pdf", "", "absent", ("write",))
    linked = Target(FILE, "/out/town.pdf", "/home/ann/thesis.pdf", "", "inode 12, 100 bytes", ("write",))
    assert "/home/ann/thesis.pdf" in (broken_contract([approved], [linked]) or "")


def test_targets_survive_the_checkpoint_as_plain_values():
    request = ApprovalRequest("Delete", "details", targets=[SCHOOLS])
    stored = request.to_dict()
    assert stored["targets"][0]["ops"] == ["delete"]
    assert ApprovalRequest.from_dict(stored).targets == [SCHOOLS]


def test_within_is_identity_and_the_same_or_fewer_operations():
    other_features = Target(LAYER, "schools", SCHOOLS.ident, SCHOOLS.source, "3 features", ("delete",))
    assert within([SCHOOLS], [other_features])
    update = Target(LAYER, "schools", SCHOOLS.ident, SCHOOLS.source, "", ("update pupils",))
    assert not within([update], [SCHOOLS])  # a delete after an update
    assert not within([SCHOOLS], [PARKS])  # another layer
    assert within([], []) and not within([SCHOOLS], []) and not within([], [SCHOOLS])


def test_always_covers_the_same_tool_and_targets_only():
    standing = StandingApprovals()
    update = Target(LAYER, "schools", SCHOOLS.ident, SCHOOLS.source, "", ("update pupils",))
    standing.grant(ApprovalRequest("Change", "", tool="edit_features", effects=["edit_data"], targets=[update]))
    assert standing.covers(ApprovalRequest("Change", "", tool="edit_features", effects=["edit_data"], targets=[update]))
    assert not standing.covers(
        ApprovalRequest("Del", "", tool="edit_features", effects=["edit_data"], targets=[SCHOOLS])
    )
    insert = ApprovalRequest("SQL", "", tool="run_sql", effects=["write_database"], targets=[NOTES])
    standing.grant(insert)
    drop = Target(TABLE, "notes", NOTES.ident, NOTES.source, NOTES.state, ("drop",))
    assert not standing.covers(ApprovalRequest("SQL", "", tool="run_sql", effects=["write_database"], targets=[drop]))
    assert standing.covers(insert)
