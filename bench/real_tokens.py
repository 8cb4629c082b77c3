"""Count tokens with a real tokenizer of models that Ollama serves (Mistral's Tekken), offline.

The agent itself estimates tokens (``core.tokens``), deliberately on the high
side.  To report the prompt budget in real tokens, the benchmarks and the
evaluation count with Tekken, the tokenizer of Mistral NeMo, Mistral Small 3
and Ministral (``ollama pull mistral-nemo``).  Its vocabulary ships inside the
``mistral-common`` wheel on PyPI; ``make`` downloads that wheel once (no
install, so none of its dependencies touch QGIS's numpy) and extracts the
vocabulary to ``.stamps/tekken.json``.  ``tiktoken`` does the counting, with
the vocabulary given to it directly: it fetches nothing.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOCABULARY = REPO / ".stamps" / "tekken.json"
TOKENIZER_NAME = "Tekken (Mistral NeMo / Small 3)"


@functools.cache
def real_counter(vocabulary: Path = VOCABULARY) -> Callable[[str], int]:
    """A function counting ``text``'s Tekken tokens; fails clearly if ``make`` has not fetched the vocabulary."""
    if not vocabulary.is_file():
        raise FileNotFoundError(f"{vocabulary} is missing: run `make {vocabulary.relative_to(REPO)}`")
    import tiktoken

    spec = json.loads(vocabulary.read_text(encoding="utf-8"))
    config = spec["config"]
    size = config["default_vocab_size"] - config["default_num_special_tokens"]
    ranks = {base64.b64decode(entry["token_bytes"]): rank for rank, entry in enumerate(spec["vocab"][:size])}
    encoding = tiktoken.Encoding(name="tekken", pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={})
    return lambda text: len(encoding.encode(text, disallowed_special=()))
