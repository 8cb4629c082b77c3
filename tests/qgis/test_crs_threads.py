"""What a tool call's short-lived thread builds must not break measures and transforms on the main thread.

QGIS 3.22 ties a CRS's PROJ object to the thread that first built it, and
caches some objects process-wide where they were first asked for.  When the
tool call's thread ends, what it built first is broken for everyone.  A
filter with ``$area``, or any layer with an expression field, read on the
call's thread asked first for the project's ellipsoid: afterwards every
measure on that ellipsoid, the project's own included, was NaN.  Headless
(the CLI, the MCP server) nothing else asks for it first; in the test process
pytest-qgis's map canvas does, which hides the fault, so each case runs in a
fresh QGIS without a canvas, as the CLI does.
Checked against pyproj.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from pyproj import Geod, Transformer

from tests.support.runs import REPO

LINE = ((500_000.0, 6_000_000.0), (501_000.0, 6_000_400.0))  # EPSG:25832, the demo project's CRS

# A fresh headless QGIS (no canvas, like `python -m geogpt_qgis ask`): the demo project with the ellipsoid
# argv[2], one read of the parks (argv[1]) on a thread that ends, then a measure on the main thread.
SCRIPT = """
import json, sys, tempfile
from pathlib import Path
from qgis.core import QgsApplication
app = QgsApplication([], False)
app.initQgis()
from qgis.core import QgsCoordinateReferenceSystem, QgsDistanceArea, QgsGeometry, QgsProject
from qgis.PyQt.QtWidgets import QApplication
from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.demo import copy_demo
from tests.support.runs import call_in_thread

tool, ellipsoid, line = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
project = QgsProject.instance()
assert project.read(str(copy_demo(Path(tempfile.mkdtemp()) / "demo")))
project.setEllipsoid(ellipsoid)
tools = ProjectTools(ToolContext(project=project, bridge=MainThreadBridge(), iface=None))
# The first park (fid 1) fails "fid" > 1, so the check on the main thread never reaches $area.
expression = '"fid" > 1 AND $area > 0'
if tool == "read_features":
    text = str(call_in_thread(tools.read_features, "parks", ["name"], expression, 5))
elif tool == "expression_field":  # no filter: the worker's read computes the field, measuring on the ellipsoid
    from qgis.core import QgsField
    from qgis.PyQt.QtCore import QVariant
    parks = project.mapLayersByName("parks")[0]
    parks.addExpressionField('"fid" * 2', QgsField("double_fid", QVariant.Int))
    text = str(call_in_thread(tools.read_features, "parks", ["name", "double_fid"], "", 5))
else:
    text = str(call_in_thread(tools.select_features, "parks", expression))
    parks = project.mapLayersByName("parks")[0]
    text += f" selected={parks.selectedFeatureCount()} of {parks.featureCount()}"
for _ in range(5):
    QApplication.processEvents()
measure = QgsDistanceArea()
measure.setSourceCrs(QgsCoordinateReferenceSystem("EPSG:25832"), project.transformContext())
measure.setEllipsoid(ellipsoid)
(x0, y0), (x1, y1) = line
length = measure.measureLength(QgsGeometry.fromWkt(f"LINESTRING({x0} {y0}, {x1} {y1})"))
print(json.dumps({"text": text, "length": length}))
"""


def _run(tool: str, ellipsoid: str) -> dict:
    environment = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, tool, ellipsoid, json.dumps(LINE)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-2000:]  # a crash (segfault) fails here
    return json.loads(done.stdout.strip().splitlines()[-1])


def _pyproj_length(ellps: str) -> float:
    """The line's length from pyproj: 25832 -> lon/lat, then the geodesic on ``ellps``."""
    to_lonlat = Transformer.from_crs("EPSG:25832", "EPSG:4326", always_xy=True)
    (lon0, lat0), (lon1, lat1) = (to_lonlat.transform(x, y) for x, y in LINE)
    return Geod(ellps=ellps).inv(lon0, lat0, lon1, lat1)[2]


@pytest.mark.parametrize(
    ("tool", "ellipsoid", "ellps"),
    [
        ("read_features", "EPSG:7004", "bessel"),
        ("select_features", "EPSG:7022", "intl"),
        ("expression_field", "EPSG:7043", "WGS72"),
    ],
)
def test_a_read_on_a_tool_thread_leaves_the_projects_ellipsoid_working(tool, ellipsoid, ellps):
    found = _run(tool, ellipsoid)
    if tool == "read_features":
        assert "Elva Meadows" in found["text"] and "Town Park" not in found["text"], found["text"]
    elif tool == "expression_field":
        assert "| Elva Meadows | 4 |" in found["text"], found["text"]
    else:
        selected, total = map(int, found["text"].rsplit("selected=", 1)[1].split(" of "))
        assert selected == total - 1 > 0, found["text"]
    length = found["length"]
    assert math.isfinite(length), f"the project's ellipsoid {ellipsoid} measures {length} after {tool}"
    assert length == pytest.approx(_pyproj_length(ellps), abs=0.01)
