"""OGC API Features: the feature id a server lists as a property is reported as the id, never as "all null".

GeoJSON keeps a feature's ``id`` beside its properties; pygeoapi (like many servers)
also lists it among the queryables as ``fid``.  Read naively, that property is empty in
every feature.
"""

from __future__ import annotations

import re

import pytest

from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.ogc.catalog import id_property
from geogpt_qgis.tools.ogc.family import OgcTools
from geogpt_qgis.tools.ogc.layers import with_feature_id
from tests.support.runs import call_in_thread


@pytest.fixture
def ogc(tool_ctx, ogc_server) -> OgcTools:
    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")
    return OgcTools(tool_ctx)


def test_the_server_s_fid_is_described_as_the_feature_id(ogc):
    text = call_in_thread(ogc.describe_ogc_collections, ["schools"]).text
    assert "all null" not in text, text
    count = int(re.search(r"^Features: ([\d,]+)$", text, re.MULTILINE).group(1).replace(",", ""))
    assert count > 1
    # Every sampled feature has its own id (the sample holds the whole small collection).
    # Version branch: pygeoapi 0.21 (Python 3.11) lists fid but leaves it empty in every feature, so it is
    # the feature id; 0.22 (Python 3.12+) fills it in, so it is a real property and the id has its own line.
    as_id = f"- fid (integer) — the feature id — {count} distinct of {count} (e.g. '" in text
    filled = f"- feature id — {count} distinct of {count} (e.g. '" in text and "- fid (integer) — min 1, max " in text
    assert as_id or filled, text


def test_an_id_property_is_recognised_only_when_the_features_carry_ids():
    rows = [{"fid": None, "name": "a"}, {"name": "b"}]
    assert id_property(["fid", "name"], rows, [1, 2]) == "fid"
    assert id_property(["fid", "name"], rows, [None, None]) is None  # truly empty: said so
    assert id_property(["fid", "name"], [{"fid": 7, "name": "a"}], [1]) is None  # a real property


def test_query_rows_take_the_feature_id_for_an_empty_id_field():
    feature = {"id": 12, "properties": {"fid": None, "name": "x"}}
    assert with_feature_id(feature, ["fid", "name"]) == {"fid": 12, "name": "x"}
    assert with_feature_id({"id": 3, "properties": {"id": 99}}, ["id"]) == {"id": 99}  # the server's own value wins
