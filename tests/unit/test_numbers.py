"""Numbers as a user reads them: plain decimals, sensible precision, units; never an exponent."""

from __future__ import annotations

import decimal

import pytest

from geogpt_qgis.core.field_stats import summarize_values
from geogpt_qgis.core.numbers import area_text, exact_number, fixed_number, length_text, plain_number, step_decimals


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


def test_exact_number_reads_back_as_the_same_float_without_exponent_or_commas():
    for value, text in [(1234567.89, "1234567.89"), (1e-05, "0.00001"), (1e20, "100000000000000000000"), (2.0, "2")]:
        assert exact_number(value) == text and float(text) == value
    assert exact_number(0.1 + 0.2) == "0.30000000000000004" and exact_number(decimal.Decimal("2.50")) == "2.5"


def test_bin_edges_step_apart_never_read_alike():
    import numpy

    for low, high in [(55.94443, 55.99016), (0.0000123, 7654321.1), (1e9, 1e9 + 0.039), (-3e-9, 5e-9), (0, 1)]:
        edges = numpy.histogram_bin_edges([low, high], bins=10)
        decimals = step_decimals(float(edges[1] - edges[0]))
        shown = [fixed_number(float(e), decimals, grouping=False) for e in edges]
        assert len(set(shown)) == len(shown), shown
        assert all("e" not in text for text in shown)
        assert all(abs(float(text) - e) <= (edges[1] - edges[0]) / 10 for text, e in zip(shown, edges, strict=True))
    assert step_decimals(0.00458) == 4 and step_decimals(76540.0) == 0 and fixed_number(1234.5, 0) == "1,234"
