"""Now ``harness.ogc_server``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.ogc_server

sys.modules[__name__] = harness.ogc_server
