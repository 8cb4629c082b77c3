"""Now ``harness.iface``, shared with evals/ and bench/: this name is that same module, so imports stay."""

import sys

import harness.iface

sys.modules[__name__] = harness.iface
