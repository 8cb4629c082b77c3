"""The demo town: deterministic, small, projected, complete, and styled."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal, ogr
from qgis.core import (
    QgsCategorizedSymbolRenderer,
    QgsPalettedRasterRenderer,
    QgsProject,
    QgsRasterLayer,
    QgsRectangle,
    QgsSingleBandPseudoColorRenderer,
)

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


RASTERS = {"elevation": "elvbury_dem.tif", "landcover": "elvbury_landcover.tif"}


def test_generation_is_deterministic_and_small(tmp_path):
    first = _generate(tmp_path / "a", "--no-project")
    _generate(tmp_path / "b", "--no-project")
    for name in ("elvbury.gpkg", *RASTERS.values(), "sensors.csv"):
        digests = {hashlib.sha256((run / name).read_bytes()).hexdigest() for run in (tmp_path / "a", tmp_path / "b")}
        assert len(digests) == 1, name
    assert 100_000 < first.stat().st_size < 1_000_000
    assert sum((first.parent / name).stat().st_size for name in RASTERS.values()) < 1_000_000


def _read(path: Path) -> tuple[np.ndarray, tuple[float, ...], float]:
    dataset = gdal.Open(str(path))
    band = dataset.GetRasterBand(1)
    return band.ReadAsArray(), dataset.GetGeoTransform(), band.GetNoDataValue()


def _pixels_under(gpkg: Path, table: str, transform: tuple[float, ...], shape: tuple[int, ...]) -> np.ndarray:
    """The pixels whose centres lie in (polygons) or under (lines) the table's features (GDAL's rasterizer)."""
    target = gdal.GetDriverByName("MEM").Create("", shape[1], shape[0], 1, gdal.GDT_Byte)
    target.SetGeoTransform(transform)
    source = ogr.Open(str(gpkg))
    gdal.RasterizeLayer(target, [1], source.GetLayerByName(table), burn_values=[1])
    return target.GetRasterBand(1).ReadAsArray() == 1


def test_rasters_agree_with_the_vector_layers(tmp_path):
    gpkg = _generate(tmp_path, "--no-project")
    dem, transform, nodata = _read(tmp_path / RASTERS["elevation"])
    cover, cover_transform, _ = _read(tmp_path / RASTERS["landcover"])
    assert dem.shape == cover.shape == (600, 800) and transform == cover_transform
    assert transform == (560_000.0, 10.0, 0.0, 6_206_000.0, 0.0, -10.0)
    valid = dem != nodata
    assert 0 < (~valid).sum() < 0.01 * dem.size  # a corner outside the survey
    river = _pixels_under(gpkg, "rivers", transform, dem.shape) & valid
    assert np.median(dem[river]) < np.percentile(dem[valid], 10)  # the rivers run in the valleys
    parks = _pixels_under(gpkg, "parks", transform, dem.shape)
    assert (cover[parks] == 2).mean() > 0.99  # parks are grass
    assert (cover[river] == 1).mean() > 0.95  # the rivers are water
    slope = np.degrees(np.arctan(np.hypot(*np.gradient(np.where(valid, dem, np.nan), 10.0))))
    assert 0.005 < np.nanmean(slope > 15) < 0.2  # some steep hillsides
    assert set(np.unique(cover)) == set(range(1, 8))


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
    assert set(layers) == set(EXPECTED_FIELDS) | set(RASTERS)
    assert all(layer.isValid() for layer in layers.values())
    assert isinstance(layers["elevation"], QgsRasterLayer) and isinstance(layers["landcover"], QgsRasterLayer)
    assert isinstance(layers["elevation"].renderer(), QgsSingleBandPseudoColorRenderer)
    palette = layers["landcover"].renderer()
    assert isinstance(palette, QgsPalettedRasterRenderer)
    assert {c.value: c.label for c in palette.classes()}[2] == "Grass"
    assert not any(project.layerTreeRoot().findLayer(layers[name].id()).isVisible() for name in RASTERS)
    for name in ("schools", "roads", "landuse"):
        assert isinstance(layers[name].renderer(), QgsCategorizedSymbolRenderer)
    assert layers["districts"].labelsEnabled()
    order = [node.layer().name() for node in project.layerTreeRoot().findLayers()]
    vectors = ["schools", "hospitals", "roads", "rivers", "parks", "districts", "landuse"]
    assert order == [*vectors, "elevation", "landcover"]
    project.clear()


def test_the_project_opens_zoomed_to_the_whole_town(qgis_app, tmp_path):
    """A project written headless has no saved canvas: its default view extent is what QGIS opens on."""
    _generate(tmp_path)
    project = QgsProject()
    assert project.read(str(tmp_path / "elvbury.qgz"))
    view = project.viewSettings().defaultViewExtent()
    assert not view.isNull() and view.crs().authid() == "EPSG:25832"
    town = QgsRectangle()
    town.setMinimal()
    for layer in project.mapLayers().values():
        town.combineExtentWith(layer.extent())
    assert view.contains(town)  # every layer in view...
    assert view.width() < 1.3 * town.width() and view.height() < 1.3 * town.height()  # ...and not a far-off view
    assert 1_000 < town.width() < 20_000 and 1_000 < town.height() < 20_000  # a town, not a point or a country
    project.clear()
