"""What the tests, the evals and the benchmarks share: the demo data, scripted and real model servers, PostGIS, waits.

``evals/`` and ``bench/`` import from here, never from ``tests/``; the tests import from here too (their old
``tests.support`` names for these modules are aliases of the ones here).  Nothing here imports ``tests``,
``evals`` or ``bench`` (tests/unit/test_layers.py holds that).
"""
