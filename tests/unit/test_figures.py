"""Figures carry what they are: value, unit, method; they survive the artifact's JSON round trip."""

from __future__ import annotations

import json

from geogpt_qgis.core.artifacts import ToolArtifact, merged
from geogpt_qgis.core.figures import Figure


def test_a_figure_prints_its_unit_and_method():
    area = Figure("area of 'parcels'", 92903.04, "m²", "ellipsoidal on GRS 1980")
    assert area.label == "area of 'parcels' = 92,903 m² (ellipsoidal on GRS 1980)"
    column = Figure("field 'a'", None, "ft² (US survey)", "planar in EPSG:2229", "not square metres")
    assert column.label == "field 'a': ft² (US survey), planar in EPSG:2229. not square metres"


def test_figures_travel_in_the_artifact_as_plain_json():
    figures = (Figure("SUM of area", 4029875.0, "m²", "ellipsoidal on WGS 84"), Figure("f", None, "m", "planar"))
    artifact = ToolArtifact(layers=("parcels",), figures=figures)
    stored = json.loads(json.dumps(artifact.to_dict()))
    assert ToolArtifact.from_dict(stored) == artifact
    assert merged([artifact, ToolArtifact(figures=figures[:1])]).figures == figures


def test_a_malformed_figure_is_dropped_not_guessed():
    data = {"figures": [{"what": "x", "value": "12", "unit": "m"}, {"value": 3}, "text"]}
    assert ToolArtifact.from_dict(data).figures == (Figure("x", None, "m", ""),)


def test_counts_agree_with_their_noun():
    from geogpt_qgis.core.text import counted

    assert counted(1, "feature") == "1 feature"
    assert counted(0, "feature") == "0 features"
    assert counted(1234, "feature") == "1,234 features"
    assert counted(-1, "feature") == "an unknown number of features"


def test_sql_numbers_round_only_a_computation_s_endless_digits():
    from decimal import Decimal

    from geogpt_qgis.core.numbers import sql_number

    assert sql_number(Decimal("466.6666666666666667")) == ("466.666666666667", True)
    assert sql_number(Decimal("0.00001234")) == ("0.00001234", False)
    assert sql_number(Decimal("1234567.891")) == ("1234567.891", False)
    assert sql_number(Decimal("123456789012345678901")) == ("123456789012345678901", False)  # a sum of integers
    assert sql_number(Decimal("12345678901234567.5")) == ("12345678901234568", True)
    assert sql_number(1234567.891) == ("1234567.891", False)
