"""Files and URLs the user did not name are not read, written or fetched without approval, by any tool.

Each case was an approval bypass an audit reproduced: ``run_algorithm`` read a
private CSV given as a file path (``load_data`` asked for the same file), a
vector-tile template wrote and overwrote files outside the output folder, a
lone "/" in the user's message trusted the whole disk, a bare file name made a
private folder's file names readable, and ".." climbed out of a URL the user
gave.  Every call goes through the toolkit as the agent makes it: the preview
(``approval_request``) and the run without a decision.
"""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from geogpt_qgis.agent.toolkit import Toolkit
from geogpt_qgis.core.approval import ApprovalRequest
from geogpt_qgis.tools.maps.family import MapTools
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

SECRET = "sk-named-files-PRIVATE-0123456789"


@pytest.fixture
def private(tmp_path_factory) -> Path:
    """A folder outside the project's, holding a CSV with a secret in it."""
    folder = tmp_path_factory.mktemp("private")
    (folder / "secrets.csv").write_text(f"x,y,token\n10.0,59.9,{SECRET}\n", encoding="utf-8")
    return folder


@pytest.fixture
def families(tool_ctx) -> list:
    return [ProjectTools(tool_ctx), ProcessingTools(tool_ctx), MapTools(tool_ctx)]


@pytest.fixture
def kit(families) -> Toolkit:
    return Toolkit([tool for family in families for tool in family.tools()])


def _user_says(families, text: str) -> None:
    for family in families:  # as the session does before each run
        family.notice_user_text(text)


def _ask(kit: Toolkit, tool: str, args: dict):
    return call_in_thread(asyncio.run, kit.approval_request("c1", tool, args))


def _run(kit: Toolkit, tool: str, args: dict):
    return call_in_thread(asyncio.run, kit.run(tool, args, None))


def test_run_algorithm_asks_before_reading_a_file_the_user_did_not_name(kit, families, private, demo_project):
    args = {
        "algorithm": "native:extractbyexpression",
        "parameters": {"INPUT": str(private / "secrets.csv"), "EXPRESSION": "true"},
        "output_name": "leak",
    }
    request = _ask(kit, "run_algorithm", args)
    assert isinstance(request, ApprovalRequest) and "read_private" in request.effects
    assert str(private / "secrets.csv") in request.details, request.details  # under "It will:"
    outcome = _run(kit, "run_algorithm", args)
    assert not outcome.ok and "approv" in outcome.text and SECRET not in outcome.text
    assert not demo_project.mapLayersByName("leak")

    _user_says(families, f"The file is in {private}/ please use it")  # now the user named the folder
    assert _ask(kit, "run_algorithm", args) is None
    outcome = _run(kit, "run_algorithm", args)
    assert outcome.ok, outcome.text
    assert len(demo_project.mapLayersByName("leak")) == 1


def test_a_file_in_the_project_folder_is_read_without_asking(kit, demo_project):
    gpkg = Path(demo_project.homePath()) / "elvbury.gpkg"
    args = {"algorithm": "native:centroids", "parameters": {"INPUT": f"{gpkg}|layername=districts"}}
    assert _ask(kit, "run_algorithm", args) is None


def test_a_text_parameter_that_spells_a_path_asks(kit, tmp_path):
    escape = tmp_path / "escape"
    template = f"../../../../../../../../..{escape}/{{z}}-{{x}}-{{y}}.pbf"
    args = {
        "algorithm": "native:writevectortiles_xyz",
        "parameters": {"LAYERS": [{"layer": "schools"}], "MIN_ZOOM": 0, "MAX_ZOOM": 1, "XYZ_TEMPLATE": template},
    }
    request = _ask(kit, "run_algorithm", args)
    assert isinstance(request, ApprovalRequest) and "write_file" in request.effects
    assert "XYZ_TEMPLATE" in request.details, request.details
    outcome = _run(kit, "run_algorithm", args)
    assert not outcome.ok and "approv" in outcome.text
    assert not escape.exists()


@pytest.mark.parametrize("said", ["Compare the schools / parks near the river.", "look in ~/ for it", "try ../ maybe"])
def test_a_word_too_broad_to_name_a_folder_trusts_nothing(kit, families, private, said):
    _user_says(families, said)
    request = _ask(kit, "load_data", {"source": str(private / "secrets.csv")})
    assert isinstance(request, ApprovalRequest) and "read_private" in request.effects
    outcome = _run(kit, "load_data", {"source": str(private / "secrets.csv")})
    assert not outcome.ok and SECRET not in outcome.text


def test_a_missing_file_in_a_folder_the_user_did_not_name_does_not_list_it(kit, families, private):
    _user_says(families, "Please load schools.csv for me")  # a bare name: trusts a file of that name, not its folder
    outcome = _run(kit, "load_data", {"source": str(private / "schools.csv")})
    assert not outcome.ok and "no file" in outcome.text
    assert "secrets" not in outcome.text, outcome.text  # the private folder's file names stay private


class _Listener:
    """A local HTTP server that records every request (nothing may reach it unasked)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args) -> None:
                pass

            def do_GET(self) -> None:
                seen.append(self.path)
                self.send_response(404)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_dot_segments_cannot_climb_out_of_a_url_the_user_gave(kit, families):
    listener = _Listener()
    try:
        _user_says(families, f"My data is at {listener.url}/data")
        escaped = f"{listener.url}/data/../../private/admin.geojson"
        request = _ask(kit, "load_data", {"source": escaped})
        assert isinstance(request, ApprovalRequest), "a URL outside the one the user gave asks"
        outcome = _run(kit, "load_data", {"source": escaped})
        assert not outcome.ok and "approv" in outcome.text
        assert listener.requests == []
        assert _ask(kit, "load_data", {"source": f"{listener.url}/data/wells.geojson"}) is None  # below it: fine
    finally:
        listener.close()
