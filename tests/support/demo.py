"""Now ``harness.demo``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.demo

sys.modules[__name__] = harness.demo
