"""make eval-real scores what a model wrote, not what it copied from its prompt (``evals.real.without_echo``)."""

from __future__ import annotations

from evals.real import ECHO_CHARS, without_echo

NOTE = (
    "Open project: 'Elvbury demo town'; CRS EPSG:25832; 9 layers: 'schools' (Point, 31 features); "
    "'hospitals' (Point, 4 features); 'roads' (LineString, 417 features).\nHow many schools are there?"
)


def test_an_answer_that_echoes_the_project_note_keeps_none_of_its_figures():
    """Gemma 3 270M, natively, wrote the note back, cut off by the token bound, and its 31 scored as a pass."""
    echoed = "[Open project: 'Elvbury demo town'; CRS EPSG:25832; 9 layers: 'schools' (Point, 31 features); 'hosp"
    assert "31" not in without_echo(echoed, NOTE) and "25832" not in without_echo(echoed, NOTE)
    twice = f"How many schools are there? {NOTE[:120]} How many schools are there?"
    assert "31" not in without_echo(twice, NOTE)  # every copy, not only the longest


def test_an_answer_in_its_own_words_or_quoting_a_result_is_kept_whole():
    for answer in ("There are 31 schools.", "31 distinct of 31 (e.g. 'Centre Primary')", "EPSG:25832"):
        assert without_echo(answer, NOTE) == answer
    # A short shared run ("'schools' (Point, ") is how an answer names a layer, not an echo.
    short = NOTE[60 : 60 + ECHO_CHARS - 1]
    assert without_echo(f"{short} 31", NOTE) == f"{short} 31"
