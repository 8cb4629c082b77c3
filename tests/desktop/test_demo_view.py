"""In the real QGIS desktop (Xvfb): the demo project opens on the whole town, not blank at 1:1."""

from __future__ import annotations

import subprocess
import sys

import pytest
from qgis.core import QgsRectangle

from tests.support.desktop import REPO, run_qgis_session

pytestmark = pytest.mark.desktop


def test_the_demo_project_opens_showing_the_whole_town(tmp_path):
    demo = tmp_path / "demo"
    script = REPO / "scripts" / "make_demo_data.py"
    subprocess.run([sys.executable, str(script), str(demo)], check=True, capture_output=True, cwd=REPO)
    session = REPO / "tests" / "support" / "desktop_view_session.py"
    report = run_qgis_session(tmp_path, demo / "elvbury.qgz", {}, {}, timeout=270, session=session)
    assert report["errors"] == [] and report["layers"] == 9, report
    assert report["canvas_crs"] == "EPSG:25832"
    canvas = QgsRectangle(*report["canvas"])
    # The rasters cover the survey square the town's layers lie in (scripts/make_demo_data.py).
    town = QgsRectangle(560_000, 6_200_000, 568_000, 6_206_000)
    assert canvas.contains(town), report["canvas"]
    assert canvas.width() < 3 * town.width() and canvas.height() < 3 * town.height(), report["canvas"]
