"""Where ``load_data`` puts a CSV's rows: each feature against where the row's own values say it is.

The truth comes from the files, read with the csv module and converted with
pyproj (the demo sensors' longitude/latitude, written out in other layouts and
CRSs); the distance between a feature and its row's place is measured on the
WGS84 ellipsoid with pyproj's ``Geod``, never with the tool under test.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from pyproj import Geod, Transformer
from qgis.core import QgsCoordinateTransform, QgsProject, QgsVectorLayer

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.loading import GUESSED_CRS, DataLoading
from tests.support.runs import call_in_thread

GEOD = Geod(ellps="WGS84")


@pytest.fixture
def loader(tool_ctx, tmp_path) -> DataLoading:
    made = DataLoading(tool_ctx)
    made.notice_user_text(f"My files are in {tmp_path}/.")
    return made


@pytest.fixture
def truth(demo_project) -> dict[str, tuple[float, float]]:
    """The demo sensors' longitude/latitude, by id, as the csv module reads them."""
    with (Path(demo_project.homePath()) / "sensors.csv").open(newline="", encoding="utf-8") as handle:
        return {row["sensor_id"]: (float(row["lon"]), float(row["lat"])) for row in csv.DictReader(handle)}


def load(loader: DataLoading, path: Path, **kwargs: str) -> str:
    return call_in_thread(loader.load_data, str(path), **kwargs).text


def layer_named(name: str) -> QgsVectorLayer:
    found = QgsProject.instance().mapLayersByName(name)
    assert len(found) == 1, [layer.name() for layer in QgsProject.instance().mapLayers().values()]
    return found[0]


def worst_offset(layer: QgsVectorLayer, places: dict[str, tuple[float, float]]) -> float:
    """The largest distance (m) between a feature and where its row's values put it (longitude/latitude)."""
    to_lonlat = Transformer.from_crs(layer.crs().authid(), "EPSG:4326", always_xy=True)
    seen = set()
    worst = 0.0
    for feature in layer.getFeatures():
        point = feature.geometry().asPoint()
        lon, lat = to_lonlat.transform(point.x(), point.y())
        key = str(feature["sensor_id"])
        worst = max(worst, GEOD.inv(lon, lat, *places[key])[2])
        seen.add(key)
    assert seen == set(places)
    return worst


def refused(loader: DataLoading, path: Path, match: str, **kwargs: str) -> str:
    before = set(QgsProject.instance().mapLayers())
    with pytest.raises(ToolError, match=match) as caught:
        load(loader, path, **kwargs)
    assert set(QgsProject.instance().mapLayers()) == before
    return str(caught.value)


def rows_of(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_swapped_lat_lon_is_flagged_and_loads_in_place_with_the_columns_named(loader, truth, tmp_path):
    path = write(
        tmp_path / "swapped.csv", "sensor_id,x,y\n" + "".join(f"{k},{lat},{lon}\n" for k, (lon, lat) in truth.items())
    )
    text = load(loader, path)
    assert "far from the project's layers" in text and "layer='y,x'" in text
    said = {row["sensor_id"]: (float(row["x"]), float(row["y"])) for row in rows_of(path)}
    assert worst_offset(layer_named("swapped"), said) < 0.01  # where the file's X,Y say, as told
    assert worst_offset(layer_named("swapped"), truth) > 1_000_000  # thousands of km from the town
    text = load(loader, path, layer="y,x", name="fixed")
    assert "far from" not in text and "Columns used: X='y', Y='x'" in text
    assert worst_offset(layer_named("fixed"), truth) < 0.01


def test_a_guessed_layer_does_not_steer_the_next_guess(loader, truth, tmp_path):
    swapped = write(
        tmp_path / "swapped.csv", "sensor_id,x,y\n" + "".join(f"{k},{lat},{lon}\n" for k, (lon, lat) in truth.items())
    )
    load(loader, swapped)
    assert layer_named("swapped").customProperty(GUESSED_CRS)
    to33 = Transformer.from_crs("EPSG:4326", "EPSG:25833", always_xy=True)
    path = write(
        tmp_path / "utm33.csv",
        "sensor_id,easting,northing\n"
        + "".join("{},{:.2f},{:.2f}\n".format(k, *to33.transform(*ll)) for k, ll in truth.items()),
    )
    # Its values lie inside the misplaced layer's extent (EPSG:25832), not the town's: no guess.
    message = refused(loader, path, "cannot tell the CRS")
    assert "e+0" not in message and re.search(r"X \d{3},\d{3}(\.\d+)? to \d{3},\d{3}", message)
    load(loader, path, crs="EPSG:25833")
    to_lonlat = Transformer.from_crs("EPSG:25833", "EPSG:4326", always_xy=True)
    said = {r["sensor_id"]: to_lonlat.transform(float(r["easting"]), float(r["northing"])) for r in rows_of(path)}
    layer = layer_named("utm33")
    assert not layer.customProperty(GUESSED_CRS)
    assert worst_offset(layer, said) < 0.01 and worst_offset(layer, truth) < 0.01


def test_quoted_decimal_commas_in_a_comma_separated_file_load_in_place(loader, truth, tmp_path):
    def comma(value: float) -> str:
        return str(value).replace(".", ",")

    body = "".join(f'{k},"{comma(lon)}","{comma(lat)}"\n' for k, (lon, lat) in truth.items())
    path = write(tmp_path / "quoted.csv", "sensor_id,lon,lat\n" + body)
    said = {
        r["sensor_id"]: (float(r["lon"].replace(",", ".")), float(r["lat"].replace(",", "."))) for r in rows_of(path)
    }
    text = load(loader, path)
    layer = layer_named("quoted")
    assert f"(Point, {len(truth)} features, EPSG:4326)" in text
    assert worst_offset(layer, said) < 0.01


def test_rows_with_coordinates_qgis_reads_as_no_points_are_refused(loader, truth, tmp_path):
    # Decimal commas in the coordinates and a decimal point elsewhere: no one decimal mark fits QGIS's reader.
    body = "".join(
        f'{k},"{str(lon).replace(".", ",")}","{str(lat).replace(".", ",")}",1.5\n' for k, (lon, lat) in truth.items()
    )
    path = write(tmp_path / "mixed.csv", "sensor_id,lon,lat,version\n" + body)
    message = refused(loader, path, "QGIS read no points")
    assert f"{len(rows_of(path))} of its rows hold coordinates" in message


def test_a_decimal_comma_in_another_column_is_read_as_a_number(loader, truth, tmp_path):
    to32 = Transformer.from_crs("EPSG:4326", "EPSG:25832", always_xy=True)
    body = "".join("{};{:.0f};{:.0f};12,5\n".format(k, *to32.transform(*ll)) for k, ll in truth.items())
    path = write(tmp_path / "readings.csv", "sensor_id;easting;northing;reading\n" + body)
    load(loader, path)
    layer = layer_named("readings")
    assert {f["reading"] for f in layer.getFeatures()} == {12.5}
    to_lonlat = Transformer.from_crs("EPSG:25832", "EPSG:4326", always_xy=True)
    rows = rows_of(path, ";")
    said = {r["sensor_id"]: to_lonlat.transform(float(r["easting"]), float(r["northing"])) for r in rows}
    assert worst_offset(layer, said) < 0.01 and worst_offset(layer, truth) < 1.0  # rounded to whole metres


def test_an_ewkt_files_own_srid_places_its_rows(loader, truth, tmp_path):
    to3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    lines = ['{},"SRID=3857;POINT ({:.2f} {:.2f})"\n'.format(k, *to3857.transform(*ll)) for k, ll in truth.items()]
    path = write(tmp_path / "ewkt.csv", "sensor_id,wkt\n" + "".join(lines))
    text = load(loader, path)
    assert "CRS: EPSG:3857, as every row's SRID says." in text
    to_lonlat = Transformer.from_crs("EPSG:3857", "EPSG:4326", always_xy=True)
    said = {}
    for row in rows_of(path):
        x, y = re.fullmatch(r"SRID=3857;POINT \((\S+) (\S+)\)", row["wkt"]).groups()
        said[row["sensor_id"]] = to_lonlat.transform(float(x), float(y))
    layer = layer_named("ewkt")
    assert layer.crs().authid() == "EPSG:3857"
    # The CRS was first made on the main thread: a transform from it there works (QGIS 3.22 breaks one first made
    # on a finished worker thread, and the event loop then crashes).
    project = QgsProject.instance()
    assert QgsCoordinateTransform(layer.crs(), project.crs(), project).isValid()
    assert worst_offset(layer, said) < 0.01 and worst_offset(layer, truth) < 0.02
    # Rows that disagree on the SRID: none is taken, and the values are no CRS the guess knows.
    mixed = write(
        tmp_path / "mixed_srid.csv", "sensor_id,wkt\n" + "".join(lines[:-1]) + lines[-1].replace("3857", "3395")
    )
    message = refused(loader, mixed, "cannot tell the CRS")
    assert "e+0" not in message and re.search(r"X \d,\d{3},\d{3}", message)


def test_lon_lat_far_from_the_layers_are_flagged_without_a_swap_to_suggest(loader, tmp_path):
    path = write(tmp_path / "paris.csv", "sensor_id,lon,lat\np1,2.3522,48.8566\np2,2.2945,48.8584\n")
    text = load(loader, path)
    assert "far from the project's layers" in text and "layer=" not in text
    said = {row["sensor_id"]: (float(row["lon"]), float(row["lat"])) for row in rows_of(path)}
    assert worst_offset(layer_named("paris"), said) < 0.01
    assert layer_named("paris").customProperty(GUESSED_CRS)
    message = refused(loader, path, "does not name two columns", layer="lat,height", name="other")
    assert "sensor_id, lon, lat" in message
