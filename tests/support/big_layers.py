"""Now ``harness.big_layers``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.big_layers

sys.modules[__name__] = harness.big_layers
