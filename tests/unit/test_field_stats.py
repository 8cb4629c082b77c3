from __future__ import annotations

import datetime as dt

from geogpt_qgis.core.field_stats import summarize_fields, summarize_values


def test_categorical_text_gives_shares_of_the_most_common_values():
    values = ["primary"] * 18 + ["secondary"] * 9 + ["special"] * 2 + [None]
    line = summarize_values(values)
    assert line.startswith("primary 62.1%, secondary 31.0%, special 6.9%")
    assert "3% null" in line


def test_numbers_give_range_and_mean():
    assert summarize_values([100, 200, 300, 400, 500, 600, 700, 800]) == "min 100, max 800, mean 450"


def test_few_distinct_numbers_are_treated_as_categories():
    assert summarize_values([30, 30, 30, 50, 50, 110]) == "30 50.0%, 50 33.3%, 110 16.7%"


def test_unique_text_shows_examples_not_shares():
    line = summarize_values([f"School {i}" for i in range(40)])
    assert line.startswith("40 distinct of 40 (e.g. 'School 0', 'School 1', 'School 2')")


def test_dates_and_all_null():
    assert summarize_values([dt.date(2020, 1, 2), dt.date(2019, 5, 1)]) == "from 2019-05-01 to 2020-01-02"
    assert summarize_values([None, None]) == "all null in sample"


def test_summarize_fields_reads_columns():
    rows = [("a", 1), ("a", 2), ("b", 3)]
    out = summarize_fields(["kind", "n"], ["String", "Integer"], rows)
    assert [s.name for s in out] == ["kind", "n"]
    assert out[0].line.startswith("a 66.7%, b 33.3%")
