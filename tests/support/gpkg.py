"""Now ``harness.gpkg``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.gpkg

sys.modules[__name__] = harness.gpkg
