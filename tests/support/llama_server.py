"""Now ``harness.llama_server``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.llama_server

sys.modules[__name__] = harness.llama_server
