"""Now ``harness.model_server``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.model_server

sys.modules[__name__] = harness.model_server
