"""Now ``harness.net``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.net

sys.modules[__name__] = harness.net
