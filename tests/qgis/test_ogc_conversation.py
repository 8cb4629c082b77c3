"""A conversation about an OGC API Features server through the whole agent: real graph, real HTTP model
client, real pygeoapi, real QGIS processing.

"What collections does this server have? How many hospitals are in the Centre district?"  The
scripted model does what a competent model would: list the collections, fetch the Centre district,
fetch the hospitals in its bounding box, keep those inside the district, and answer.  The count is
checked against PostGIS.
"""

from __future__ import annotations

import pytest

from geogpt_qgis.agent.config import ModelConfig
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from tests.support.model_server import ToolCall, Turn
from tests.support.postgis import connect

pytestmark = pytest.mark.postgis

QUESTION = "What collections does this server have? How many hospitals are in the Centre district?"


def one_row(query: str) -> tuple:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(query)
        return cursor.fetchone()


def config(model_server) -> ModelConfig:
    return ModelConfig(provider="ollama", base_url=model_server.url, model="qwen3:8b", timeout=30)


def test_collections_and_hospitals_in_the_centre_district(model_server, worker, recorder, demo_project, ogc_server):
    PlgOptionsManager.set_value("ogc_servers", f"Elvbury open data = {ogc_server.url}")
    (count,) = one_row(
        "SELECT count(*) FROM hospitals h JOIN districts d ON ST_Intersects(h.geom, d.geom) WHERE d.name = 'Centre'"
    )
    box = one_row(
        "SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent(geom) e "
        "FROM districts WHERE name = 'Centre') x"
    )
    answer = (
        "The server has 6 collections: districts, schools, hospitals, roads, rivers and parks_file.\n\n"
        f"**{count} hospital{'s' if count != 1 else ''}** lie in the Centre district."
    )
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_ogc_collections", {})]),
            Turn(
                tool_calls=[
                    ToolCall(
                        "query_ogc_collection",
                        {"collection": "districts", "filter": "name = 'Centre'", "output_name": "centre"},
                    )
                ]
            ),
            Turn(
                tool_calls=[
                    ToolCall(
                        "query_ogc_collection",
                        {
                            "collection": "hospitals",
                            "bbox": [round(v, 1) for v in box],
                            "bbox_crs": "EPSG:25832",
                            "output_name": "hospitals_near_centre",
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
                            "parameters": {"INPUT": "hospitals_near_centre", "PREDICATE": [0], "INTERSECT": "centre"},
                            "output_name": "hospitals_in_centre",
                        },
                    )
                ]
            ),
            Turn(text=answer),
        ]
    )
    run = worker.submit(QUESTION, config(model_server))
    finished = recorder.wait(run, 90)
    assert finished.status == "finished", finished.error
    results = recorder.tool_results(run)
    assert [r.name for r in results] == [
        "describe_ogc_collections",
        "query_ogc_collection",
        "query_ogc_collection",
        "run_algorithm",
    ]
    assert all(r.ok for r in results), [r.result for r in results if not r.ok]
    assert "- hospitals — 'Hospitals': Hospitals with beds and emergency departments." in results[0].result
    assert "Added layer 'centre' (fetched features, in the project's GeoPackage): 1 feature from" in results[1].result

    # The layers landed in the project, and the last one holds exactly the hospitals of the district.
    (centre,) = demo_project.mapLayersByName("centre")
    assert [f["name"] for f in centre.getFeatures()] == ["Centre"]
    (inside,) = demo_project.mapLayersByName("hospitals_in_centre")
    assert inside.featureCount() == count
    assert recorder.text(run) == answer

    # The model saw the tools of the OGC family and the results, never the features themselves.
    requests = model_server.chat_requests()
    assert "query_ogc_collection" in str(requests[0].body.get("tools"))
    assert '"coordinates"' not in str(requests[-1].body["messages"])


def test_a_server_url_given_in_the_chat_can_be_used(model_server, worker, recorder, ogc_server):
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("describe_ogc_collections", {"server": ogc_server.url})]),
            Turn(text="It has 6 collections."),
        ]
    )
    run = worker.submit(f"What collections does {ogc_server.url}/collections have?", config(model_server))
    finished = recorder.wait(run, 60)
    assert finished.status == "finished", finished.error
    (result,) = recorder.tool_results(run)
    assert result.ok, result.result
    assert ": 6 feature collections" in result.result.splitlines()[0]
    assert "describe_ogc_collections" in str(model_server.chat_requests()[0].body.get("tools"))


def test_without_a_server_the_family_is_not_offered(model_server, worker, recorder):
    model_server.script([Turn(text="Hello.")])
    run = worker.submit("hello", config(model_server))
    assert recorder.wait(run, 60).status == "finished"
    assert "ogc" not in str(model_server.chat_requests()[0].body.get("tools"))
