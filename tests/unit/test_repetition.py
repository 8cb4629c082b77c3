"""The loop detector: real loops are caught early, repetitive but real answers never."""

from __future__ import annotations

import random

import pytest

from geogpt_qgis.core.repetition import RepetitionDetector

NAMES = [
    "Oak", "Elm", "Ash", "Birch", "Cedar", "Maple", "Willow", "Rowan", "Hazel", "Alder", "Pine", "Spruce",
    "Larch", "Yew", "Holly", "Juniper", "Linden", "Poplar", "Aspen", "Beech", "Cherry", "Chestnut", "Fir",
    "Hawthorn", "Hornbeam", "Magnolia", "Olive", "Plane", "Sycamore", "Walnut",
]  # fmt: skip


def stream(text: str, pieces: str = "tokens", seed: int = 1) -> tuple[bool, int]:
    """Feed ``text`` as a server would stream it; (looping?, characters fed when it was noticed)."""
    detector = RepetitionDetector()
    rng = random.Random(seed)
    fed = 0
    while fed < len(text):
        size = {"tokens": rng.randint(1, 6), "chars": 1, "whole": len(text)}[pieces]
        piece = text[fed : fed + size]
        fed += len(piece)
        if detector.feed(piece):
            return True, fed
    return False, fed


PARAGRAPH = (
    "The schools layer holds 40 points in EPSG:25832. Most are primary schools (62%), the rest secondary. "
    "The largest, Oak School, has 812 pupils; the smallest has 95. Districts differ: Elvbury North has 14 "
    "schools and Elvbury South 11.\n\nTo count schools per district I joined the two layers by location, "
    "then summed the pupils. The result is in the new layer districts_schools.\n"
)


def school_table(rows: int) -> str:
    lines = ["Here are the schools:", "", "| name | type | district | pupils |", "|---|---|---|---|"]
    for i in range(rows):
        kind = "primary" if i % 3 else "secondary"
        district = "Elvbury North" if i % 2 else "Elvbury South"
        lines.append(f"| {NAMES[i % len(NAMES)]} School | {kind} | {district} | {200 + 7 * i} |")
    return "\n".join(lines) + "\n\nThere are 30 schools in all."


LEGITIMATE = {
    "a table of 30 schools": school_table(30),
    # Only the name differs from row to row: the most repetitive honest table.
    "a table whose rows differ in one cell": "\n".join(
        f"| {name} School | primary | Elvbury North | public | yes |" for name in NAMES
    ),
    "a list of similar layers": "\n".join(
        f"- Layer '{name.lower()}_buffer_500m' (Polygon, {10 + i} features), added to the project"
        for i, name in enumerate(NAMES)
    ),
    "numbered steps": "\n".join(
        f"{i + 1}. Buffer the {name} layer by 500 m, then count the schools inside." for i, name in enumerate(NAMES)
    ),
    "a wide table's rule": "| " + " | ".join(["---"] * 40) + " |\n",
    "rows of numbers": "\n".join(f"Year {2000 + i}: {1000 + 13 * i} pupils in {NAMES[i]} School." for i in range(30)),
    "prose": PARAGRAPH * 2,  # a summary said twice is odd, but it is no endless loop
    "code": "\n".join(
        f"layer_{i} = project.mapLayersByName('{name.lower()}')[0]\nprint(layer_{i}.featureCount())"
        for i, name in enumerate(NAMES[:15])
    ),
}


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
@pytest.mark.parametrize("pieces", ["tokens", "chars", "whole"])
def test_repetitive_but_real_answers_are_not_loops(name: str, pieces: str) -> None:
    looping, _ = stream(LEGITIMATE[name], pieces)
    assert not looping, name


def the_issues_loop() -> str:
    """The same line over and over, as Gemma 3 270M wrote it, with a stray word now and then."""
    lines = []
    strays = ["schools", "the", "", "", "", "there", "", "", "", ""]
    for i in range(60):
        stray = strays[i % len(strays)]
        lines.append(f"How many schools are there? {stray}".rstrip())
        if i % 7 == 3:
            lines.append("schools")  # a stray word on a line of its own
    return "\n".join(lines) + "\n"


LOOPS = {
    "the issue's line, with stray words": the_issues_loop(),
    "one line, exactly": "How many schools are there?\n" * 60,
    "a stray word inside the line, sometimes": "".join(
        "How many the schools are there in Elvbury?\n" if i % 6 == 5 else "How many schools are there in Elvbury?\n"
        for i in range(60)
    ),
    "a three-line block": "The layer schools has 40 features.\nIt is in EPSG:25832.\nLet me check the districts.\n"
    * 30,
    "one word": "the " * 200,
    "a phrase on one line": "and then the schools " * 80,
    "a paragraph, over and over": PARAGRAPH * 5,
    "a table row": "| Oak School | primary | Elvbury North |\n" * 40,
}


@pytest.mark.parametrize("name", sorted(LOOPS))
@pytest.mark.parametrize("pieces", ["tokens", "chars"])
def test_loops_are_caught_within_a_few_hundred_characters_or_three_rounds(name: str, pieces: str) -> None:
    looping, at = stream(LOOPS[name], pieces)
    assert looping, name
    assert at <= max(800, 3 * len(PARAGRAPH) if "paragraph" in name else 0), (name, at)


def test_a_loop_after_a_good_start_is_caught_after_the_start() -> None:
    start = LEGITIMATE["a table of 30 schools"] + "\n\n"
    looping, at = stream(start + "I hope this helps.\n" * 10 + "Anything else about the schools?\n" * 40)
    assert looping
    assert at > len(start)


def test_it_stays_caught_and_costs_little() -> None:
    detector = RepetitionDetector()
    assert not detector.feed("")
    text = the_issues_loop()
    assert any(detector.feed(text[i : i + 3]) for i in range(0, len(text), 3))
    assert detector.feed("something new entirely")  # the verdict stands


def test_a_long_answer_is_judged_quickly() -> None:
    import time

    text = LEGITIMATE["a table of 30 schools"] * 20  # ~30,000 characters, ~7,000 tokens
    started = time.perf_counter()
    looping, _ = stream(text)
    took = time.perf_counter() - started
    assert took < 0.5, took  # well under a millisecond per streamed piece
    assert looping  # the same 30-row table written out 20 times over is a loop
