"""The demo town: deterministic, small, projected, complete, and styled."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

from qgis.core import QgsCategorizedSymbolRenderer, QgsProject

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "make_demo_data.py"

EXPECTED_FIELDS = {
    "districts": ["name", "code", "population"],
    "roads": ["name", "class", "maxspeed"],
    "rivers": ["name", "kind", "width_m"],
    "schools": ["name", "type", "pupils", "district"],
    "hospitals": ["name", "beds", "emergency"],
    "parks": ["name", "area_ha"],
    "landuse": ["class", "district"],
}


def _generate(folder: Path, *extra: str) -> Path:
    subprocess.run([sys.executable, str(SCRIPT), str(folder), *extra], check=True, capture_output=True, cwd=REPO)
    return folder / "elvbury.gpkg"


def test_generation_is_deterministic_and_small(tmp_path):
    first = _generate(tmp_path / "a", "--no-project")
    second = _generate(tmp_path / "b", "--no-project")
    assert hashlib.sha256(first.read_bytes()).hexdigest() == hashlib.sha256(second.read_bytes()).hexdigest()
    assert 100_000 < first.stat().st_size < 1_000_000


def test_layers_fields_crs_and_contents(tmp_path):
    gpkg = _generate(tmp_path, "--no-project")
    with sqlite3.connect(gpkg) as db:
        contents = dict(db.execute("SELECT table_name, srs_id FROM gpkg_contents").fetchall())
        assert contents == dict.fromkeys(EXPECTED_FIELDS, 25832)
        for table, fields in EXPECTED_FIELDS.items():
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            assert columns == ["fid", "geom", *fields]
        assert db.execute("SELECT count(*) FROM rivers").fetchone()[0] == 2
        assert db.execute("SELECT count(*) FROM districts").fetchone()[0] == 9
        assert 20 <= db.execute("SELECT count(*) FROM schools").fetchone()[0] <= 60
        kinds = {row[0] for row in db.execute("SELECT DISTINCT type FROM schools")}
        assert kinds == {"primary", "secondary", "special"}
        classes = {row[0] for row in db.execute("SELECT DISTINCT class FROM roads")}
        assert {"motorway", "primary", "secondary", "residential", "track"} == classes
        names = {row[0] for row in db.execute("SELECT name FROM districts")}
        assert {"Centre", "Harbour", "Østervang", "Mølleby"} <= names  # accents kept for name search


def test_the_project_opens_styled_with_every_layer(qgis_app, tmp_path):
    _generate(tmp_path)
    project = QgsProject()
    assert project.read(str(tmp_path / "elvbury.qgz"))
    assert project.crs().authid() == "EPSG:25832"
    assert project.title() == "Elvbury demo town"
    layers = {layer.name(): layer for layer in project.mapLayers().values()}
    assert set(layers) == set(EXPECTED_FIELDS)
    assert all(layer.isValid() for layer in layers.values())
    for name in ("schools", "roads", "landuse"):
        assert isinstance(layers[name].renderer(), QgsCategorizedSymbolRenderer)
    assert layers["districts"].labelsEnabled()
    order = [node.layer().name() for node in project.layerTreeRoot().findLayers()]
    assert order == ["schools", "hospitals", "roads", "rivers", "parks", "districts", "landuse"]
    project.clear()
