from __future__ import annotations

import random

from geogpt_qgis.core.markdown_stream import MarkdownBlockSplitter

ANSWER = """# Schools near rivers

There are **12 schools** within 500 m of a river.

| district | schools |
|---|---|
| Centre | 4 |
| Harbour | 3 |

- Nordby Primary
- Centre Academy

```python
layer = QgsProject.instance().mapLayersByName("schools")[0]

print(layer.featureCount())
```

Done."""


def _split(chunks: list[str]) -> list[str]:
    splitter = MarkdownBlockSplitter()
    blocks: list[str] = []
    for chunk in chunks:
        blocks += splitter.feed(chunk)
    last = splitter.finish()
    return blocks + ([last] if last else [])


def test_blocks_end_at_blank_lines_outside_code_fences():
    blocks = _split([ANSWER])
    assert blocks[0] == "# Schools near rivers"
    assert blocks[1] == "There are **12 schools** within 500 m of a river."
    assert blocks[2].startswith("| district |") and blocks[2].endswith("| Harbour | 3 |")
    assert blocks[3] == "- Nordby Primary\n- Centre Academy"
    # The blank line inside the fenced code block does not split it.
    assert blocks[4].startswith("```python") and blocks[4].endswith("```")
    assert "print(layer.featureCount())" in blocks[4]
    assert blocks[5] == "Done."
    assert len(blocks) == 6


def test_any_chunking_gives_the_same_blocks():
    expected = _split([ANSWER])
    rng = random.Random(7)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, len(ANSWER)), 25))
        chunks = [ANSWER[a:b] for a, b in zip([0, *cuts], [*cuts, len(ANSWER)], strict=False)]
        assert _split(chunks) == expected


def test_pending_holds_the_unfinished_tail():
    splitter = MarkdownBlockSplitter()
    assert splitter.feed("First para") == []
    assert splitter.pending == "First para"
    assert splitter.feed("graph.\n\nSecond") == ["First paragraph."]
    assert splitter.pending == "Second"


def test_token_by_token_stream_of_a_long_paragraph():
    splitter = MarkdownBlockSplitter()
    for _ in range(5000):
        assert splitter.feed("word ") == []
    assert splitter.pending == "word " * 5000
    assert splitter.feed("\n\nnext") == [("word " * 5000).rstrip("\n")]
    assert splitter.pending == "next"
