"""The Qt-free parts of the OGC API tools: server settings, URLs, CQL2 property names, CRS names, bboxes."""

from __future__ import annotations

import pytest

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.ogc.catalog import CRS84, Collection, Queryable, ServerInfo, crs_label, crs_uri
from geogpt_qgis.tools.ogc.query import check_filter, plan_bbox, property_names_in
from geogpt_qgis.tools.ogc.servers import OgcServer, ServerDirectory, landing_url, parse_servers, urls_in

EPSG25832 = "http://www.opengis.net/def/crs/EPSG/0/25832"


def test_settings_lines_become_servers():
    servers = parse_servers("Elvbury = https://data.elvbury.no/ogc/\n# a comment\nhttps://x.org/api/collections; bad")
    assert servers == [OgcServer("Elvbury", "https://data.elvbury.no/ogc"), OgcServer("x.org", "https://x.org/api")]


def test_landing_urls_drop_inner_paths_and_queries():
    assert landing_url("https://x.org/ogc/collections/roads/items?f=json") == "https://x.org/ogc"
    assert landing_url("HTTPS://x.org/ogc/conformance") == "https://x.org/ogc"
    with pytest.raises(ToolError, match="is not an http"):
        landing_url("ftp://x.org")


def test_urls_are_found_in_what_the_user_typed():
    text = "Try https://a.org/ogc/collections, or (http://b.net/api). Not ftp://c.org."
    assert urls_in(text) == ["https://a.org/ogc", "http://b.net/api"]


def test_the_directory_resolves_names_urls_and_the_only_server():
    directory = ServerDirectory([OgcServer("Elvbury", "https://e.no/ogc")], ["https://other.org"])
    assert directory.resolve("elvbury").url == "https://e.no/ogc"
    assert directory.resolve("https://other.org/collections").url == "https://other.org"
    with pytest.raises(ToolError, match=r"name the server: 'Elvbury', 'other\.org'"):
        directory.resolve("")
    with pytest.raises(ToolError, match="no OGC API server named 'Elvbry'; did you mean 'Elvbury'"):
        directory.resolve("Elvbry")
    only = ServerDirectory([OgcServer("Elvbury", "https://e.no/ogc")], [])
    assert only.resolve("").name == "Elvbury"


def test_property_names_in_cql2_text_skip_literals_keywords_and_functions():
    cql = "name = 'O''Brien AND x' AND beds BETWEEN 1 AND 9 OR S_INTERSECTS(geom, POINT(1 2)) AND \"my prop\" IS NULL"
    assert property_names_in(cql) == ["name", "beds", "geom", "my prop"]
    assert property_names_in("CASEI(name) LIKE casei('%park%')") == ["name"]


def test_a_filter_with_an_unknown_property_names_the_closest_one():
    props = [Queryable("name", "text"), Queryable("beds", "integer"), Queryable("geometry", "geometry")]
    check_filter("name = 'x' AND beds > 2 AND S_INTERSECTS(geometry, POINT(1 2))", props, "hospitals")
    with pytest.raises(ToolError, match="the filter names 'bed', which hospitals does not have; did you mean 'beds'"):
        check_filter("bed > 2", props, "hospitals")
    check_filter("anything = 1", None, "hospitals")  # without queryables the server decides


def test_crs_names_and_uris():
    assert crs_label(EPSG25832) == "EPSG:25832"
    assert crs_label(CRS84) == "CRS84"
    assert crs_uri("EPSG:25832") == EPSG25832
    assert crs_uri("ogc:crs84") == CRS84
    with pytest.raises(ToolError, match="name it like EPSG:25832"):
        crs_uri("25832")


def _info(conformance: list[str]) -> tuple[Collection, ServerInfo]:
    collection = Collection("schools", "Schools", "", crs=[CRS84, EPSG25832], storage_crs=EPSG25832)
    return collection, ServerInfo(OgcServer("e", "https://e.no"), conformance, [collection])


def test_a_bbox_goes_as_is_when_the_server_knows_its_crs_and_converted_otherwise():
    collection, info = _info(["http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs"])
    plan = plan_bbox([562000, 6201000, 566000, 6204000], "EPSG:25832", collection, info)
    assert plan.params == {"bbox": "562000,6201000,566000,6204000", "bbox-crs": EPSG25832}
    assert plan.clip is None
    collection, info = _info([])  # no CRS support: converted to CRS84 and clipped exactly afterwards
    plan = plan_bbox([562000, 6201000, 566000, 6204000], "EPSG:25832", collection, info)
    west, south, east, north = (float(v) for v in plan.params["bbox"].split(","))
    assert 9.99 < west < 10.01 and 55.94 < south < 55.96 and east > west and north > south
    assert plan.clip is not None and plan.clip[0] == EPSG25832
    assert plan.note.startswith("bbox converted from EPSG:25832 to CRS84 [")
    assert plan_bbox([10, 55, 11, 56], "EPSG:4326", collection, info).params == {"bbox": "10,55,11,56"}
