"""Now ``harness.runs``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.runs

sys.modules[__name__] = harness.runs
