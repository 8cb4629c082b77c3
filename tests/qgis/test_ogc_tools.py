"""OGC API Features tools against a real server: pygeoapi on 127.0.0.1 serving the demo town.

Expected values come from the PostGIS copy of the demo town (SQL written here,
not the tools under test).
"""

from __future__ import annotations

import contextvars
from collections import Counter

import pytest
from qgis.core import QgsWkbTypes

from geogpt_qgis.core.cancel import current_conversation
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.ogc.family import OgcTools
from tests.support.net import free_port, silent_server
from tests.support.ogc_server import MAX_ITEMS, POSTGIS_COLLECTIONS
from tests.support.postgis import connect
from tests.support.runs import call_in_thread, stop_midway

pytestmark = pytest.mark.postgis


def sql(query: str, *args: object) -> list[tuple]:
    with connect() as conn, conn.cursor() as cursor:
        cursor.execute(query, args)
        return cursor.fetchall()


@pytest.fixture
def ogc(tool_ctx, ogc_server) -> OgcTools:
    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")
    return OgcTools(tool_ctx)


def call(tool, *args, **kwargs):
    return call_in_thread(tool, *args, **kwargs)


def added(project, name: str):
    layers = project.mapLayersByName(name)
    assert len(layers) == 1, [layer.name() for layer in project.mapLayers().values()]
    return layers[0]


# -- availability ------------------------------------------------------------------
def test_the_family_is_off_without_a_server_and_on_with_a_configured_one_or_a_url_the_user_gave(tool_ctx, ogc_server):
    tools = OgcTools(tool_ctx)
    assert tools.unavailable_reason() == "no OGC API Features server is configured or given in the chat"
    token = current_conversation.set("a-conversation")
    try:
        tools.notice_user_text(f"Look at {ogc_server.url}/collections?f=html please.")
        assert tools.unavailable_reason() is None
        context = contextvars.copy_context()  # the agent runs tools in a copy of the run's context
        assert "hospitals" in call(context.run, tools.describe_ogc_collections, None, ogc_server.url).text
    finally:
        current_conversation.reset(token)
    assert tools.unavailable_reason() is not None  # another conversation has not named it
    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")
    assert tools.unavailable_reason() is None


def test_a_url_nobody_gave_is_refused(ogc):
    with pytest.raises(ToolError, match="neither configured nor given by the user"):
        call(ogc.describe_ogc_collections, None, "http://127.0.0.1:9/evil")


# -- listing and describing ------------------------------------------------------------------
def test_collections_are_listed_with_title_and_description(ogc):
    text = call(ogc.describe_ogc_collections).text
    assert text.splitlines()[0].endswith(": 6 feature collections")
    for name, (title, description, _) in POSTGIS_COLLECTIONS.items():
        assert f"- {name} — {title!r}: {description}" in text
    assert "- parks_file — 'Parks (file)': Parks and green spaces, from a GeoJSON file." in text
    assert call(ogc.describe_ogc_collections, None, "elvbury").text == text  # by name, case-insensitively


def test_describing_gives_types_extent_crs_count_and_common_values_from_a_sample(ogc):
    text = call(ogc.describe_ogc_collections, ["schools", "hospitals"]).text
    schools, hospitals = text.split("\n\n")
    (count,) = sql("SELECT count(*) FROM schools")[0]
    assert f"Features: {count:,}" in schools
    assert "CRSs: CRS84, EPSG:4326, EPSG:25832" in schools
    assert "Stored in: EPSG:25832" in schools
    assert "- pupils (integer) — min " in schools
    kinds = Counter(kind for (kind,) in sql("SELECT type FROM schools"))
    shares = ", ".join(f"{k} {n / count:.1%}" for k, n in kinds.most_common())
    assert f"- type (text) — {shares}" in schools
    assert "Extent: [9.96, 55.94, 10.09, 56]" in schools
    assert "- beds (integer)" in hospitals and "- name (text)" in hospitals
    assert "Properties (queryable):" in hospitals


def test_a_collection_without_numbered_matches_is_still_described_from_its_sample(ogc):
    text = call(ogc.describe_ogc_collections, ["parks_file"]).text
    assert "- area_ha (number) — min " in text
    assert "values from a sample of 14 features" in text


# -- queries ------------------------------------------------------------------
def test_a_filtered_query_adds_exactly_the_matching_features_as_a_layer(ogc, demo_project):
    before = len(demo_project.mapLayers())
    text = call(ogc.query_ogc_collection, "schools", filter="district = 'Centre' AND pupils > 200", output_name="big")
    expected = sql("SELECT name FROM schools WHERE district = 'Centre' AND pupils > 200 ORDER BY name")
    layer = added(demo_project, "big")
    assert len(demo_project.mapLayers()) == before + 1
    assert sorted(f["name"] for f in layer.getFeatures()) == [name for (name,) in expected]
    assert layer.providerType() == "ogr"  # kept in a GeoPackage of the project's: it survives saving
    assert layer.source() == f"{demo_project.absolutePath()}/elvbury_results/big.gpkg|layername=big"
    assert layer.crs().authid() == "EPSG:25832"  # the data's own CRS, asked of the server
    assert QgsWkbTypes.displayString(layer.wkbType()) == "Point"
    kind = "fetched features, in the project's GeoPackage"
    assert text.text.startswith(f"Added layer 'big' ({kind}): {len(expected)} features")
    assert text.artifact.added_names == ["big"] and text.artifact.collections[0].collection == "schools"
    # Version branch: pygeoapi 0.22 (Python 3.12+) fills the id in as a fid property too, 0.21 leaves it out.
    assert (
        "Fields: name, type, pupils, district" in text.text or "Fields: fid, name, type, pupils, district" in text.text
    )
    assert "Served in EPSG:25832" in text.text
    assert "filter: district = 'Centre' AND pupils > 200" in layer.metadata().abstract()
    # Attributes keep their types and values.
    first = next(layer.getFeatures())
    (pupils,) = sql("SELECT pupils FROM schools WHERE name = %s", first["name"])[0]
    assert first["pupils"] == pupils


def test_paging_is_followed_up_to_the_limit_and_a_reached_limit_is_reported(ogc, demo_project):
    (total,) = sql("SELECT count(*) FROM roads")[0]
    assert total > 2 * MAX_ITEMS
    text = call(ogc.query_ogc_collection, "roads", limit=120, output_name="some_roads").text
    layer = added(demo_project, "some_roads")
    assert layer.featureCount() == 120
    assert f"Limit reached: {total:,} features match, only the first 120 were fetched" in text
    assert len({f.geometry().asWkt() for f in layer.getFeatures()}) == 120  # distinct features, no page twice


def test_a_whole_collection_stays_linked_to_the_server(ogc, demo_project):
    (total,) = sql("SELECT count(*) FROM roads")[0]
    text = call(ogc.query_ogc_collection, "roads", output_name="roads_live").text
    layer = added(demo_project, "roads_live")
    assert layer.providerType() == "OAPIF"
    assert "linked to the server" in text
    assert f": {total:,} features from roads on Elvbury." in text
    assert f"Read in {-(-total // MAX_ITEMS)} pages." in text
    assert layer.featureCount() == total


def test_selected_properties_only(ogc, demo_project):
    call(ogc.query_ogc_collection, "hospitals", properties=["name"], output_name="h_names")
    layer = added(demo_project, "h_names")
    assert layer.fields().names() == ["fid", "name"]  # fid: the key of its table in the project's GeoPackage
    assert sorted(f["name"] for f in layer.getFeatures()) == [
        n for (n,) in sql("SELECT name FROM hospitals ORDER BY 1")
    ]


BOX = (562_000, 6_201_000, 566_000, 6_204_000)


def test_a_bbox_in_the_data_crs_is_sent_as_is(ogc, demo_project):
    text = call(ogc.query_ogc_collection, "schools", bbox=list(BOX), bbox_crs="EPSG:25832", output_name="boxed").text
    expected = sql("SELECT name FROM schools WHERE ST_Intersects(geom, ST_MakeEnvelope(%s, %s, %s, %s, 25832))", *BOX)
    assert sorted(f["name"] for f in added(demo_project, "boxed").getFeatures()) == sorted(n for (n,) in expected)
    assert "converted" not in text


def test_a_bbox_in_a_crs_the_server_lacks_is_converted_and_clipped_exactly(ogc, demo_project):
    from pyproj import Transformer

    to_mercator = Transformer.from_crs("EPSG:25832", "EPSG:3857", always_xy=True)
    x0, y0 = to_mercator.transform(BOX[0], BOX[1])
    x1, y1 = to_mercator.transform(BOX[2], BOX[3])
    text = call(
        ogc.query_ogc_collection, "schools", bbox=[x0, y0, x1, y1], bbox_crs="EPSG:3857", output_name="merc"
    ).text
    expected = sql(
        "SELECT name FROM schools WHERE ST_Intersects(ST_Transform(geom, 3857), ST_MakeEnvelope(%s, %s, %s, %s, 3857))",
        x0,
        y0,
        x1,
        y1,
    )
    assert sorted(f["name"] for f in added(demo_project, "merc").getFeatures()) == sorted(n for (n,) in expected)
    assert "Note: bbox converted from EPSG:3857 to CRS84 [" in text


def test_a_bbox_in_degrees(ogc, demo_project):
    box = [10.0, 55.95, 10.05, 55.98]
    call(ogc.query_ogc_collection, "schools", bbox=box, output_name="deg")
    expected = sql(
        "SELECT name FROM schools WHERE ST_Intersects(ST_Transform(geom, 4326), ST_MakeEnvelope(%s, %s, %s, %s, 4326))",
        *box,
    )
    assert sorted(f["name"] for f in added(demo_project, "deg").getFeatures()) == sorted(n for (n,) in expected)


def test_no_match_adds_nothing_and_says_so(ogc, demo_project):
    before = len(demo_project.mapLayers())
    text = call(ogc.query_ogc_collection, "hospitals", filter="beds > 100000").text
    assert text.startswith("No features matching 'beds > 100000' in hospitals on Elvbury; nothing was added.")
    assert len(demo_project.mapLayers()) == before


# -- bad input: a clear message, nothing changed ------------------------------------------------
def _refused(demo_project, tool, *args, **kwargs) -> str:
    before = set(demo_project.mapLayers())
    with pytest.raises(ToolError) as caught:
        call(tool, *args, **kwargs)
    assert set(demo_project.mapLayers()) == before
    return str(caught.value)


def test_an_unknown_collection_gets_the_closest_names(ogc, demo_project):
    message = _refused(demo_project, ogc.query_ogc_collection, "hospitls")
    assert message == "no collection on Elvbury 'hospitls'; did you mean 'hospitals'?"


def test_an_invalid_filter_gets_the_servers_own_message(ogc, demo_project):
    message = _refused(demo_project, ogc.query_ogc_collection, "hospitals", filter="beds >> 100")
    assert message.startswith("the server rejected the filter 'beds >> 100': Bad CQL text.")


def test_an_unknown_property_in_a_filter_is_named_with_the_right_one(ogc, demo_project):
    message = _refused(demo_project, ogc.query_ogc_collection, "hospitals", filter="nme = 'Harbour Clinic'")
    assert message.startswith("the filter names 'nme', which hospitals does not have; did you mean 'name'?")
    message = _refused(demo_project, ogc.query_ogc_collection, "hospitals", filter="Beds > 3")
    assert message == "property names are case-sensitive: write 'beds', not 'Beds'"


def test_a_collection_whose_server_ignores_filters_is_refused_rather_than_answered_wrongly(ogc, demo_project):
    message = _refused(demo_project, ogc.query_ogc_collection, "parks_file", filter="name = 'Town Park'")
    assert message.startswith("Elvbury does not apply filters on parks_file; query without filter")
    # Without a filter it works.
    text = call(ogc.query_ogc_collection, "parks_file", output_name="parks_from_file").text
    assert ": 14 features from parks_file" in text


def test_an_unreachable_server(tool_ctx, demo_project):
    PlgOptionsManager.set_value("ogc_servers", f"down = http://127.0.0.1:{free_port()}")
    message = _refused(demo_project, OgcTools(tool_ctx).describe_ogc_collections)
    assert "connection refused. Check the URL and that the server is up." in message


def test_a_url_that_is_not_an_ogc_api_features_server(tool_ctx, demo_project, model_server):
    PlgOptionsManager.set_value("ogc_servers", f"models = {model_server.url}")
    message = _refused(demo_project, OgcTools(tool_ctx).describe_ogc_collections)
    assert message.startswith(f"{model_server.url} is not an OGC API Features server (its /collections answered HTTP")


def test_a_server_that_does_not_answer_times_out(tool_ctx, demo_project):
    with silent_server() as url:
        PlgOptionsManager.set_value("ogc_servers", url)
        PlgOptionsManager.set_value("ogc_timeout", 1.0)
        message = _refused(demo_project, OgcTools(tool_ctx).describe_ogc_collections)
    assert "did not answer within 1 s" in message


def test_stop_ends_a_request_to_a_silent_server_at_once(tool_ctx):
    with silent_server() as url:
        PlgOptionsManager.set_value("ogc_servers", url)
        outcome, seconds = stop_midway(OgcTools(tool_ctx).describe_ogc_collections, None, after=0.3)
    assert outcome == "cancelled"
    assert seconds < 1.0


def test_bad_bbox_and_property_names(ogc, demo_project):
    message = _refused(demo_project, ogc.query_ogc_collection, "schools", bbox=[562000, 6201000, 561000, 6204000])
    assert "is empty: give [min_x, min_y, max_x, max_y]" in message
    message = _refused(demo_project, ogc.query_ogc_collection, "schools", bbox=list(BOX))
    assert "is not in degrees; name its CRS with bbox_crs" in message
    message = _refused(demo_project, ogc.query_ogc_collection, "schools", properties=["pupil"])
    assert message == "no property of schools 'pupil'; did you mean 'pupils'?"
