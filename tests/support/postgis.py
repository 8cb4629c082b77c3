"""Now ``harness.postgis``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.postgis

sys.modules[__name__] = harness.postgis
