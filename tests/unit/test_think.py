from __future__ import annotations

from geogpt_qgis.core.think import ThinkTagSplitter


def _run(chunks: list[str]) -> tuple[str, str]:
    splitter = ThinkTagSplitter()
    pieces = []
    for chunk in chunks:
        pieces += splitter.feed(chunk)
    pieces += splitter.flush()
    text = "".join(t for kind, t in pieces if kind == "text")
    reasoning = "".join(t for kind, t in pieces if kind == "reasoning")
    return text, reasoning


def test_reasoning_between_tags_is_separated():
    assert _run(["<think>look at layers</think>There are 4."]) == ("There are 4.", "look at layers")


def test_tags_split_across_chunks():
    chunks = ["<thi", "nk>plan", " it</th", "ink>", "Answer ", "<", "b>bold"]
    assert _run(chunks) == ("Answer <b>bold", "plan it")


def test_text_without_tags_passes_through():
    assert _run(["a < b and c > d"]) == ("a < b and c > d", "")
