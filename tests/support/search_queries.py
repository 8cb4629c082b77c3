"""Now ``harness.search_queries``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.search_queries

sys.modules[__name__] = harness.search_queries
