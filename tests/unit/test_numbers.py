"""Numbers as a user reads them: plain decimals, sensible precision, units; never an exponent."""

from __future__ import annotations

import decimal

import pytest

from geogpt_qgis.core.field_stats import summarize_values
from geogpt_qgis.core.numbers import area_text, length_text, plain_number


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (15381700.0, "15,381,700"),
        (1.538171e7, "15,381,710"),
        (15381712.345, "15,381,712"),
        (0.000123456789, "0.000123457"),
        (12.3456789, "12.3457"),
        (0.1 + 0.2, "0.3"),
        (-1234.5, "-1,234.5"),
        (3.0, "3"),
        (7, "7"),
        (1e20, "100,000,000,000,000,000,000"),
        (1e-15, "0"),
        (decimal.Decimal("2.50"), "2.5"),
        (float("nan"), "NaN"),
    ],
)
def test_plain_number_never_uses_an_exponent(value, text):
    assert plain_number(value) == text
    assert "e+" not in plain_number(value) and "e-" not in plain_number(value)


def test_without_grouping_the_number_can_go_back_into_sql_or_an_expression():
    assert plain_number(15381700.5, grouping=False) == "15381700"
    assert plain_number(1234.5678, grouping=False) == "1234.57"


def test_areas_and_lengths_carry_their_unit_and_a_larger_one_when_big():
    assert area_text(15381700.0) == "15,381,700 m² (15.38 km²)"
    assert area_text(45000.0) == "45,000 m² (4.5 ha)"
    assert area_text(450.0) == "450 m²"
    assert length_text(12400.0) == "12,400 m (12.4 km)"
    assert length_text(850.0) == "850 m"


def test_field_statistics_use_plain_numbers():
    line = summarize_values([15381700.25, 22000000.5, 9000000.75])
    assert line == "min 9,000,001, max 22,000,000, mean 15,460,567"
    assert summarize_values([1.5e-7, 2.5e-7, 3.5e-7]) == "min 0.00000015, max 0.00000035, mean 0.00000025"
