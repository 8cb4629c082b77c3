"""Closing the dock while the agent's thread is still ending never aborts QGIS.

A QThread destroyed while it runs makes Qt abort the process.  Under load the
thread's end (cancelled tasks, the store closed, the executor shut down) can
outlast ``shutdown``'s wait; the dock is then deleted with the thread still
running.  Run in a child process, since the failure is the process dying.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_thread_still_ending_outlives_its_deleted_owner_and_is_released_after():
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.worker_drain_probe"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "still running after shutdown: True; held: 0" in done.stdout
