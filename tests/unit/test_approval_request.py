"""An approval request's typed effects (stored as strings, old requests load) and gated previews by function."""

from __future__ import annotations

import asyncio
import json

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.approval import ApprovalRequest, StandingApprovals, approval_preview, gated
from geogpt_qgis.core.effects import Effect
from geogpt_qgis.core.targets import LAYER, Target

SCHOOLS = Target(
    LAYER, "schools", "schools_1a2b", "ogr: /data/elvbury.gpkg|layername=schools", "3 features", ("delete",)
)

# A paused request as the store held it before effects were typed: plain strings, a key this version dropped.
LEGACY = {
    "action": "Delete 3 features from 'schools'",
    "details": "In 'schools', delete the features where \"pupils\" < 10",
    "language": "text",
    "affected": ["layer 'schools' (elvbury.gpkg)"],
    "editable": None,
    "tool": "edit_features",
    "call_id": "call_7",
    "args": {"layer": "schools", "expression": '"pupils" < 10', "delete": True},
    "effects": ["edit_data", "network"],
    "targets": [SCHOOLS.to_dict()],
    "removed_later": "ignored",
}


def test_effects_are_members_in_memory_and_plain_strings_when_stored():
    request = ApprovalRequest("Write", "", tool="run_sql", effects=["write_database", Effect.NETWORK, "network"])
    assert request.effects == [Effect.WRITE_DATABASE, Effect.NETWORK]  # strings parsed, each once, in order
    assert all(type(effect) is Effect for effect in request.effects)
    stored = request.to_dict()
    assert stored["effects"] == ["write_database", "network"]
    assert all(type(effect) is str for effect in stored["effects"])  # not the enum: a checkpoint keeps classes
    again = ApprovalRequest.from_dict(json.loads(json.dumps(stored)))
    assert again == request and all(type(effect) is Effect for effect in again.effects)


def test_a_stored_request_goes_through_the_checkpoint_serializer_without_an_enum_in_it():
    serde = JsonPlusSerializer()
    request = ApprovalRequest("Write", "", tool="run_sql", effects=[Effect.WRITE_DATABASE], targets=[SCHOOLS])
    loaded = serde.loads_typed(serde.dumps_typed(request.to_dict()))
    # An enum member would come back as itself, with a log that such loads will be blocked in a later LangGraph.
    assert type(loaded["effects"][0]) is str
    assert ApprovalRequest.from_dict(loaded) == request


def test_a_request_stored_by_the_earlier_version_loads_with_typed_effects_and_targets():
    request = ApprovalRequest.from_dict(LEGACY)
    assert request.effects == [Effect.EDIT_DATA, Effect.NETWORK]
    assert all(type(effect) is Effect for effect in request.effects)
    assert request.targets == [SCHOOLS] and request.tool == "edit_features" and request.call_id == "call_7"
    assert request.to_dict()["effects"] == LEGACY["effects"]  # stored again exactly as it was
    # The policy reads the loaded effects as it read the strings: "always" for it covers itself, not more.
    standing = StandingApprovals()
    standing.grant(request)
    assert standing.covers(ApprovalRequest.from_dict(LEGACY))
    wider = ApprovalRequest.from_dict({**LEGACY, "effects": ["edit_data", "network", "write_file"]})
    assert not standing.covers(wider)
    narrower = ApprovalRequest.from_dict({**LEGACY, "effects": ["edit_data"]})
    assert standing.covers(narrower)
    old_code = ApprovalRequest.from_dict({**LEGACY, "tool": "run_pyqgis", "effects": ["run_code"], "targets": []})
    assert not StandingApprovals.can_stand(old_code)


def test_an_effect_this_version_does_not_know_asks_every_time_and_is_never_dropped():
    request = ApprovalRequest.from_dict({**LEGACY, "effects": ["edit_data", "launch_rockets"]})
    assert request.effects == [Effect.EDIT_DATA, Effect.RUN_CODE]
    assert not StandingApprovals.can_stand(request)  # no "always" for what cannot be checked first
    assert ApprovalRequest.from_dict({**LEGACY, "effects": None}).effects == []


class Remover:
    """A gated tool of two instances whose previews must each describe their own instance."""

    def __init__(self, layer: str) -> None:
        self.layer = layer

    def preview_remove(self, what: str) -> ApprovalRequest | None:
        if what == "nothing":
            return None
        return ApprovalRequest(f"Remove {what} from {self.layer}", "", effects=[Effect.CHANGE_PROJECT])

    @gated(preview_remove)
    def remove(self, what: str) -> str:
        """Remove something.

        Args:
            what: What to remove.
        """
        return "removed"

    def read(self, what: str) -> str:
        """Read something.

        Args:
            what: What to read.
        """
        return what


def test_gated_takes_the_preview_function_and_binds_it_to_the_tools_own_object():
    schools, parks = Remover("schools"), Remover("parks")
    assert approval_preview(schools.remove) == schools.preview_remove
    assert approval_preview(parks.remove) == parks.preview_remove
    assert approval_preview(schools.read) is None
    request = asyncio.run(Toolkit([parks.remove, schools.read]).approval_request("c1", "remove", {"what": "a"}))
    assert isinstance(request, ApprovalRequest)
    assert request.action == "Remove a from parks" and request.tool == "remove" and request.call_id == "c1"
    assert request.effects == [Effect.CHANGE_PROJECT]
    harmless = asyncio.run(Toolkit([parks.remove]).approval_request("c2", "remove", {"what": "nothing"}))
    assert harmless is None
    assert asyncio.run(Toolkit([schools.read]).approval_request("c3", "read", {"what": "a"})) is None


def test_gated_refuses_a_preview_named_by_a_string():
    with pytest.raises(TypeError, match="the preview function"):
        gated("preview_remove")  # type: ignore[arg-type]
