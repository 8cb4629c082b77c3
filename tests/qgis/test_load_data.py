"""``load_data`` against real files, a real HTTP server on 127.0.0.1, pygeoapi and PostGIS.

Expected coordinates come from the files themselves, read with the csv module
and converted with pyproj, never from the tool under test.
"""

from __future__ import annotations

import csv
import itertools
import shutil
import time
from pathlib import Path

import httpx
import pytest
from qgis.core import QgsProject, QgsRasterLayer, QgsVectorLayer, QgsWkbTypes
from qgis.PyQt.QtCore import QTimer

from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.family import MapTools
from geogpt_qgis.tools.maps.loading import DataLoading
from tests.support.file_server import file_server
from tests.support.net import free_port, silent_server
from tests.support.postgis import saved_connection
from tests.support.runs import call_in_thread, stop_midway

DATA = Path(__file__).resolve().parents[1] / "data" / "maps_load"
# Three points in the demo town (EPSG:25832) with a name each.
POINTS = [("well A", 561_200.0, 6_201_500.0), ("well B", 563_400.5, 6_203_250.25), ("well C", 566_800.0, 6_205_100.0)]


@pytest.fixture
def loader(tool_ctx, tmp_path) -> DataLoading:
    """The loading part, in a conversation where the user named the test's folder (files there need no approval)."""
    made = DataLoading(tool_ctx)
    made.notice_user_text(f"My files are in {tmp_path}/.")
    return made


def load(loader: DataLoading, source: str, **kwargs: str) -> ToolResult:
    return call_in_thread(loader.load_data, source, **kwargs)


def layer_named(name: str):
    found = QgsProject.instance().mapLayersByName(name)
    assert len(found) == 1, [layer.name() for layer in QgsProject.instance().mapLayers().values()]
    return found[0]


def layer_ids() -> set[str]:
    return set(QgsProject.instance().mapLayers())


def refused(loader: DataLoading, source: str, match: str, **kwargs: str) -> str:
    """The tool's error for ``source``; the project is unchanged afterwards."""
    before = layer_ids()
    with pytest.raises(ToolError, match=match) as caught:
        load(loader, source, **kwargs)
    assert layer_ids() == before
    return str(caught.value)


def write_vectors(folder: Path) -> dict[str, Path]:
    """The three points as GeoPackage (two layers, and one), Shapefile, GeoJSON, FlatGeobuf and KML."""
    from osgeo import gdal, ogr, osr

    folder.mkdir(parents=True, exist_ok=True)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    source = folder / "wells.geojson"
    driver = ogr.GetDriverByName("GeoJSON")
    data = driver.CreateDataSource(str(source))
    layer = data.CreateLayer("wells", srs, ogr.wkbPoint)
    layer.CreateField(ogr.FieldDefn("name", ogr.OFTString))
    for name, x, y in POINTS:
        feature = ogr.Feature(layer.GetLayerDefn())
        feature.SetField("name", name)
        feature.SetGeometry(ogr.CreateGeometryFromWkt(f"POINT ({x} {y})"))
        layer.CreateFeature(feature)
    data = None
    paths = {"geojson": source}
    for key, fmt, name in (
        ("shp", "ESRI Shapefile", "wells.shp"),
        ("fgb", "FlatGeobuf", "wells.fgb"),
        ("kml", "KML", "wells.kml"),
        ("gpkg1", "GPKG", "one.gpkg"),
        ("gpkg", "GPKG", "two.gpkg"),
    ):
        paths[key] = folder / name
        assert gdal.VectorTranslate(str(paths[key]), str(source), format=fmt, layerName="wells") is not None
    buffered = gdal.VectorTranslate(
        str(paths["gpkg"]),
        str(source),
        format="GPKG",
        accessMode="update",
        layerName="well_zones",
        SQLStatement="SELECT ST_Buffer(geometry, 50) AS geom, name FROM wells",
        SQLDialect="SQLITE",
    )
    assert buffered is not None
    buffered = None
    return paths


def xy(layer: QgsVectorLayer) -> dict[str, tuple[float, float]]:
    return {f["name"]: (f.geometry().asPoint().x(), f.geometry().asPoint().y()) for f in layer.getFeatures()}


# -- files ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["geojson", "shp", "fgb", "gpkg1", "kml"])
def test_every_vector_format_loads_linked_to_its_file(loader, tmp_path, key):
    paths = write_vectors(tmp_path / "data")
    text = load(loader, str(paths[key]), name=f"wells {key}")
    layer = layer_named(f"wells {key}")
    assert isinstance(layer, QgsVectorLayer) and layer.providerType() == "ogr"
    assert layer.source().startswith(str(paths[key]))  # the file itself, not a copy
    assert (
        layer.featureCount() == 3
        and QgsWkbTypes.geometryType(layer.wkbType()) == QgsWkbTypes.GeometryType.PointGeometry
    )
    if key == "kml":  # KML is longitude/latitude by definition
        assert layer.crs().authid() == "EPSG:4326"
    else:
        assert layer.crs().authid() == "EPSG:25832"
        got = xy(layer)
        for name, x, y in POINTS:
            assert got[name] == pytest.approx((x, y), abs=1e-6)
    geometry = "Point" if key != "kml" else QgsWkbTypes.displayString(layer.wkbType())  # LIBKML may say PointZ
    assert f"Loaded 'wells {key}' ({geometry}, 3 features, {layer.crs().authid()})" in text.text
    assert text.artifact.added[0].name == f"wells {key}" and text.artifact.added[0].layer_id == layer.id()


def test_a_geopackage_with_several_layers_needs_the_layer_named(loader, tmp_path):
    paths = write_vectors(tmp_path / "data")
    message = refused(loader, str(paths["gpkg"]), "has 2 layers; pass layer")
    assert "wells (Point, 3)" in message and "well_zones (" in message
    assert "did you mean 'well_zones'" in refused(loader, str(paths["gpkg"]), "no layer 'wel_zones'", layer="wel_zones")
    text = load(loader, str(paths["gpkg"]), layer="well_zones").text
    zones = layer_named("well_zones")
    assert (
        zones.featureCount() == 3
        and QgsWkbTypes.geometryType(zones.wkbType()) == QgsWkbTypes.GeometryType.PolygonGeometry
    )
    assert zones.source() == f"{paths['gpkg']}|layername=well_zones"
    assert "Loaded 'well_zones' (Polygon, 3 features, EPSG:25832)" in text
    load(loader, str(paths["gpkg"]), layer="wells")
    assert layer_named("wells").featureCount() == 3


def test_a_geotiff_loads_as_a_raster_relative_to_the_project_folder(loader, demo_project):
    text = load(loader, "elvbury_dem.tif", name="dem again", crs="EPSG:4326").text
    layer = layer_named("dem again")
    assert isinstance(layer, QgsRasterLayer) and layer.providerType() == "gdal"
    assert Path(layer.source()) == Path(demo_project.homePath()) / "elvbury_dem.tif"
    assert (layer.width(), layer.height(), layer.bandCount()) == (800, 600, 1)
    assert "raster 800×600 px, 1 band, EPSG:25832" in text
    assert "crs was ignored: it sets the CRS of CSV/TSV coordinates only." in text


# -- delimited text ----------------------------------------------------------------------------------
def sensors(path: Path) -> dict[str, tuple[float, float]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["sensor_id"]: (float(row["lon"]), float(row["lat"])) for row in csv.DictReader(handle)}


def test_the_demo_sensors_csv_loads_as_lon_lat_points_and_says_how_it_read_them(loader, demo_project):
    path = Path(demo_project.homePath()) / "sensors.csv"
    expected = sensors(path)
    assert 20 <= len(expected) <= 40
    text = load(loader, str(path)).text
    layer = layer_named("sensors")
    assert layer.providerType() == "delimitedtext" and layer.crs().authid() == "EPSG:4326"
    assert layer.featureCount() == len(expected)
    got = {f["sensor_id"]: (f.geometry().asPoint().x(), f.geometry().asPoint().y()) for f in layer.getFeatures()}
    assert got.keys() == expected.keys()
    for key, (lon, lat) in expected.items():
        assert got[key] == pytest.approx((lon, lat), abs=1e-9)
    assert f"(Point, {len(expected)} features, EPSG:4326)" in text
    assert "Columns used: X='lon', Y='lat' (','-separated)." in text
    assert "guessed EPSG:4326 (longitude/latitude): all values lie within ±180/±90" in text
    # Inside the demo town: the sensors lie over its districts.
    districts = layer_named("districts")
    town = districts.extent()
    from pyproj import Transformer

    to_utm = Transformer.from_crs("EPSG:4326", "EPSG:25832", always_xy=True)
    for lon, lat in expected.values():
        x, y = to_utm.transform(lon, lat)
        assert town.xMinimum() <= x <= town.xMaximum() and town.yMinimum() <= y <= town.yMaximum()


def test_projected_xy_columns_get_the_project_crs_by_a_stated_guess(loader, demo_project, tmp_path):
    from pyproj import Transformer

    to_utm = Transformer.from_crs("EPSG:4326", "EPSG:25832", always_xy=True)
    lonlat = sensors(Path(demo_project.homePath()) / "sensors.csv")
    expected = {key: to_utm.transform(lon, lat) for key, (lon, lat) in lonlat.items()}
    path = tmp_path / "my sensors #1.csv"  # a space and a hash: the URI quotes the path
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "Easting", "Northing"])
        writer.writerows([key, f"{x:.3f}", f"{y:.3f}"] for key, (x, y) in expected.items())
    text = load(loader, str(path), name="utm sensors").text
    layer = layer_named("utm sensors")
    assert layer.crs().authid() == "EPSG:25832" and layer.featureCount() == len(expected)
    got = xy(layer)
    for key, (x, y) in expected.items():
        assert got[key] == pytest.approx((x, y), abs=0.001)
    assert "Columns used: X='Easting', Y='Northing'" in text
    assert "guessed the project's CRS EPSG:25832: the values fall within the project's layers" in text


def test_projected_values_away_from_the_layers_but_in_the_crs_area_of_use_get_the_project_crs(loader, tmp_path):
    path = tmp_path / "far_sites.csv"
    path.write_text("site,x,y\nfjord,500000,6600000\nisland,510000,6650000\n", encoding="utf-8")  # UTM 32N, not town
    text = load(loader, str(path)).text
    assert "guessed the project's CRS EPSG:25832: the values lie in its area of use" in text
    assert layer_named("far_sites").crs().authid() == "EPSG:25832"


def test_a_crs_given_is_used_and_a_wrong_one_changes_nothing(loader, tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("name,x,y\n" + "".join(f"{n},{x},{y}\n" for n, x, y in POINTS), encoding="utf-8")
    text = load(loader, str(path), crs="EPSG:25832").text
    assert "CRS: EPSG:25832, as given." in text and layer_named("points").crs().authid() == "EPSG:25832"
    refused(loader, str(path), "EPSG:4326", crs="EPSG:4326", name="wrong")  # metres read as degrees
    refused(loader, str(path), "not a CRS QGIS knows", crs="EPSG:99999999")


def test_a_wkt_column_and_semicolons_are_found(loader, tmp_path):
    path = tmp_path / "zones.csv"
    rows = [
        ("north", "POLYGON ((561000 6204000, 562000 6204000, 562000 6205000, 561000 6205000, 561000 6204000))"),
        ("south", "POLYGON ((563000 6201000, 564500 6201000, 564500 6202000, 563000 6202000, 563000 6201000))"),
    ]
    path.write_text("zone;shape_wkt\n" + "".join(f"{z};{w}\n" for z, w in rows), encoding="utf-8")
    # "shape_wkt" is no known name: the column is found by its values.
    text = load(loader, str(path)).text
    layer = layer_named("zones")
    assert (
        layer.featureCount() == 2
        and QgsWkbTypes.geometryType(layer.wkbType()) == QgsWkbTypes.GeometryType.PolygonGeometry
    )
    areas = {f["zone"]: f.geometry().area() for f in layer.getFeatures()}
    assert areas == pytest.approx({"north": 1_000_000.0, "south": 1_500_000.0})
    assert "WKT column 'shape_wkt' (';'-separated)" in text and layer.crs().authid() == "EPSG:25832"


def test_a_tsv_with_decimal_commas_loads(loader, tmp_path):
    path = tmp_path / "gauges.tsv"
    path.write_text("id\tlon\tlat\n1\t10,0125\t55,9512\n2\t10,0450\t55,9711\n", encoding="utf-8")
    text = load(loader, str(path)).text
    layer = layer_named("gauges")
    got = {f["id"]: (f.geometry().asPoint().x(), f.geometry().asPoint().y()) for f in layer.getFeatures()}
    assert got == {1: pytest.approx((10.0125, 55.9512)), 2: pytest.approx((10.045, 55.9711))}
    assert "(Tab-separated)" in text


def test_a_file_outside_the_project_and_not_named_by_the_user_needs_approval(tool_ctx, demo_project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    secret = elsewhere / "notes.csv"
    secret.write_text("private header,another\n1,2\n", encoding="utf-8")
    loader = DataLoading(tool_ctx)
    request = loader.preview_load_data(str(secret))
    assert request is not None and "read_private" in request.effects
    assert [(t.kind, t.ident) for t in request.targets] == [("file", str(secret.resolve()))] and not request.notes
    message = refused(loader, str(secret), "needs their approval")
    assert "private header" not in message  # nothing of the file reached the model
    assert "notes" not in refused(loader, str(elsewhere / "note.csv"), "needs their approval")  # nor the folder
    assert loader.preview_load_data("sensors.csv") is None  # the project's folder
    assert loader.preview_load_data(str(Path(demo_project.homePath()) / "elvbury.gpkg")) is None
    loader.notice_user_text("load notes.csv please")  # a bare name the user typed
    assert loader.preview_load_data(str(secret)) is None
    other = DataLoading(tool_ctx)
    other.notice_user_text(f"the data is in '{elsewhere}'")  # a folder the user typed
    assert other.preview_load_data(str(secret)) is None
    assert "private header" in refused(other, str(secret), "no coordinate columns")


# -- errors about files --------------------------------------------------------------------------------
def test_file_errors_name_the_fix_and_change_nothing(loader, demo_project, tmp_path):
    home = Path(demo_project.homePath())
    assert "did you mean" in refused(loader, str(home / "sensor.csv"), "no file") and "sensors.csv" in refused(
        loader, str(home / "sensor.csv"), "no file"
    )
    refused(loader, str(tmp_path / "nowhere" / "x.gpkg"), "the folder .* does not exist")
    junk = tmp_path / "junk.dat"
    junk.write_bytes(bytes(range(256)) * 4)
    refused(loader, str(junk), "unknown format: GDAL cannot open")
    table = tmp_path / "plain.csv"
    table.write_text("district,population\nNorth,1200\n", encoding="utf-8")
    assert "its header is: district, population" in refused(loader, str(table), "has no coordinate columns")
    far = tmp_path / "far.csv"
    far.write_text("x,y\n1000000000,1000000000\n", encoding="utf-8")
    refused(loader, str(far), "cannot tell the CRS of the coordinates")
    refused(loader, "  ", "source is empty")
    refused(loader, str(home / "sensors.csv"), "single line", name="two\nlines")


# -- URLs ------------------------------------------------------------------------------------------
@pytest.fixture
def served(tmp_path):
    """The test files and capabilities documents on a local HTTP server the user named in the chat."""
    root = tmp_path / "www"
    paths = write_vectors(root)
    shutil.copy(DATA / "wms_capabilities.xml", root / "wms")
    (root / "wmts" / "1.0.0").mkdir(parents=True)
    shutil.copy(DATA / "wmts_capabilities.xml", root / "wmts" / "1.0.0" / "WMTSCapabilities.xml")
    with file_server(root) as url:
        yield url, paths


def test_a_url_the_user_did_not_give_needs_approval(loader, served):
    url, _ = served
    request = loader.preview_load_data(f"{url}/wells.geojson")
    assert request is not None and "network" in request.effects
    assert [(t.kind, t.ident) for t in request.targets] == [("url", f"{url}/wells.geojson")] and not request.notes
    refused(loader, f"{url}/wells.geojson", "needs their approval")
    assert loader.preview_load_data("elvbury.gpkg") is None  # a file of the project needs none
    loader.notice_user_text(f"Please load {url}/wells.geojson for me")
    assert loader.preview_load_data(f"{url}/wells.geojson") is None
    assert loader.preview_load_data(f"{url}/other.geojson") is not None  # only what the user gave


def test_the_family_passes_the_users_urls_to_the_loader(tool_ctx):
    family = MapTools(tool_ctx)
    family.notice_user_text("the tiles are at https://tiles.example.org/{z}/{x}/{y}.png")
    part = next(p for p in family._parts if isinstance(p, DataLoading))
    assert part.preview_load_data("https://tiles.example.org/{z}/{x}/{y}.png") is None
    assert "load_data" in [tool.__name__ for tool in family.tools()]


def test_remote_geojson_through_vsicurl_and_a_plain_url(loader, served):
    url, _ = served
    loader.notice_user_text(url)
    load(loader, f"/vsicurl/{url}/wells.geojson", name="remote wells")
    layer = layer_named("remote wells")
    assert layer.source().startswith(f"/vsicurl/{url}/wells.geojson") and layer.featureCount() == 3
    text = load(loader, f"{url}/wells.fgb").text
    assert layer_named("wells").source().startswith(f"/vsicurl/{url}/wells.fgb")
    assert "Loaded 'wells' (Point, 3 features, EPSG:25832)" in text


def test_a_wms_layer_is_chosen_by_name_or_title(loader, served):
    url, _ = served
    capabilities = f"{url}/wms?SERVICE=WMS&REQUEST=GetCapabilities"
    loader.notice_user_text(capabilities)
    message = refused(loader, capabilities, "has 2 layers; pass layer")
    assert "parks (Town parks)" in message and "roads (Road network)" in message
    assert "did you mean 'parks'" in refused(loader, capabilities, "no layer 'parsk'", layer="parsk")
    text = load(loader, capabilities, layer="Road network").text
    layer = layer_named("Road network")
    assert isinstance(layer, QgsRasterLayer) and layer.providerType() == "wms"
    source = layer.source()
    assert "layers=roads" in source and "crs=EPSG:25832" in source and "format=image/png" in source
    assert f"url={url}/wms" in source and "REQUEST" not in source.upper().split("URL=")[-1]
    assert "WMS layer 'roads' (Road network), requested in EPSG:25832." in text


def test_capabilities_that_declare_entities_are_refused_unread(loader, served, tmp_path):
    """An "XML bomb" (nested entities: a few hundred bytes that expand to gigabytes) is not expanded."""
    url, _ = served
    lol = "".join(f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    bomb = f'<?xml version="1.0"?><!DOCTYPE WMS_Capabilities [<!ENTITY l0 "lol">{lol}]><WMS_Capabilities>&l9;'
    (tmp_path / "www" / "bomb").mkdir()
    (tmp_path / "www" / "bomb" / "wms").write_text(bomb + "</WMS_Capabilities>")
    capabilities = f"{url}/bomb/wms?SERVICE=WMS&REQUEST=GetCapabilities"
    loader.notice_user_text(capabilities)
    assert "gigabytes" in refused(loader, capabilities, "declares entities or external references")


def test_a_wmts_layer_loads_in_its_tile_matrix_set(loader, served):
    url, _ = served
    capabilities = f"{url}/wmts/1.0.0/WMTSCapabilities.xml"
    loader.notice_user_text(capabilities)
    text = load(loader, capabilities).text
    layer = layer_named("Shaded relief")
    source = layer.source()
    assert layer.providerType() == "wms" and "tileMatrixSet=WebMercatorQuad" in source and "layers=relief" in source
    assert f"url={capabilities}" in source and layer.crs().authid() == "EPSG:3857"
    assert "WMTS layer 'relief', tile matrix set WebMercatorQuad (EPSG:3857)." in text


def test_an_xyz_template_is_checked_by_its_first_tile(loader, tmp_path):
    from osgeo import gdal

    root = tmp_path / "tiles"
    (root / "png" / "0" / "0").mkdir(parents=True)
    tile = gdal.GetDriverByName("MEM").Create("", 256, 256, 3, gdal.GDT_Byte)
    assert gdal.Translate(str(root / "png" / "0" / "0" / "0.png"), tile, format="PNG") is not None
    (root / "text" / "0" / "0").mkdir(parents=True)
    (root / "text" / "0" / "0" / "0.csv").write_text("not,a,tile\n", encoding="utf-8")
    with file_server(root) as url:
        dead = f"http://127.0.0.1:{free_port()}/{{z}}/{{x}}/{{y}}.png"  # nothing listens there
        templates = [
            f"{url}/png/{{z}}/{{x}}/{{y}}.png",
            f"{url}/text/{{z}}/{{x}}/{{y}}.csv",
            f"{url}/none/{{z}}/{{x}}/{{-y}}.png",
        ]
        loader.notice_user_text(" ".join([*templates, dead]))
        text = load(loader, templates[0], name="tiles").text
        layer = layer_named("tiles")
        assert layer.providerType() == "wms" and "type=xyz" in layer.source()
        assert "XYZ tiles (the first tile answered with an image)" in text
        message = refused(loader, templates[1], "not an image")
        assert f"{url}/text/0/0/0.csv answered HTTP 200 with text/csv" in message
        refused(loader, templates[2], "none/0/0/0.png answered HTTP 404")
        refused(loader, dead, "cannot reach 127.0.0.1:.*connection refused")


def test_url_errors_say_what_the_server_did(loader, served):
    url, _ = served
    dead = f"http://127.0.0.1:{free_port()}/data.geojson"
    loader.notice_user_text(f"{url} {dead}")
    refused(loader, f"{url}/nothing.geojson", "answered HTTP 404")
    refused(loader, dead, "cannot reach 127.0.0.1:.*connection refused")


def test_an_ogc_api_collection_url_becomes_a_copy_of_its_features(loader, ogc_server):
    assert loader.preview_load_data(f"{ogc_server.url}/collections/hospitals") is not None
    PlgOptionsManager.set_value("ogc_servers", f"Elvbury = {ogc_server.url}")  # a configured server is trusted
    assert loader.preview_load_data(f"{ogc_server.url}/collections/hospitals") is None
    loader.notice_user_text(f"the town's server is {ogc_server.url}")
    text = load(loader, f"{ogc_server.url}/collections/hospitals?f=json")
    layer = layer_named(text.artifact.added[0].name)
    assert layer.name() == "hospitals_2"  # the demo project has a "hospitals" layer already
    served = httpx.get(f"{ogc_server.url}/collections/hospitals/items?f=json&limit=50").json()["features"]
    assert len(served) < 50  # one page holds them all (the server's pages hold at most 50)
    assert layer.providerType() == "ogr" and ".gpkg" in layer.source()  # the project's results GeoPackage
    assert layer.featureCount() == len(served) > 0
    where = ogc_server.url.split("//")[1].rstrip("/")
    assert [c.label for c in text.artifact.collections] == [f"hospitals ({where})"]
    assert text.artifact.collections[0].url.startswith(ogc_server.url.rstrip("/"))
    assert "a copy of the server's features" in text.text and "All of the collection's features" in text.text
    assert "query_ogc_collection" in text.text
    assert "schools" in refused(loader, ogc_server.url, "collections; pass layer")
    assert "did you mean 'schools'" in refused(loader, ogc_server.url, "no collection", layer="school")


@pytest.mark.postgis
def test_a_saved_connections_table_loads_as_a_postgis_layer(loader):
    from tests.support.postgis import connect

    with connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM public.schools")
        expected = cursor.fetchone()[0]
    with saved_connection("maps load db"):
        text = load(loader, "maps load db.public.schools")
        added = QgsProject.instance().mapLayer(text.artifact.added[0].layer_id)
        assert added.name() == "schools_2"  # beside the demo project's "schools"
        assert added.providerType() == "postgres" and added.featureCount() == expected
        assert "dbname='geogpt_demo'" in added.source() and 'table="public"."schools" (geom)' in added.source()
        assert added.crs().authid() == "EPSG:25832"
        assert text.artifact.table_labels == ("public.schools (maps load db)",)
        assert "did you mean 'public.schools'" in refused(loader, "maps load db.public.schols", "no table")
        load(loader, "maps load db.rivers", name="pg rivers")  # no schema: public
        assert layer_named("pg rivers").featureCount() > 0
        assert "Loaded 'schools_2' (Point, EPSG:25832) from public.schools (maps load db)." in text.text
    with saved_connection("elvbury"):  # a file of the project's folder wins over the connection "elvbury"
        load(loader, "elvbury.gpkg", layer="parks", name="park file")
        assert layer_named("park file").providerType() == "ogr"


# -- threads ---------------------------------------------------------------------------------------------
def test_the_main_thread_keeps_running_while_a_slow_server_is_read(loader, served):
    url, _ = served
    loader.notice_user_text(url)
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(20)
    started = time.monotonic()
    try:
        load(loader, f"{url}/slow/wells.geojson", name="slow wells")
    finally:
        timer.stop()
    took = time.monotonic() - started
    assert took >= 2.0  # the server did make us wait (at least two requests)
    assert layer_named("slow wells").featureCount() == 3
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > took / 0.02 / 3 and max(gaps) < 0.5, (len(ticks), max(gaps), took)


def test_stop_ends_a_request_to_a_silent_server_at_once(loader):
    with silent_server() as url:
        loader.notice_user_text(url)
        before = layer_ids()
        outcome, seconds = stop_midway(loader.load_data, f"{url}/data.geojson", after=0.3)
    assert outcome == "cancelled" and seconds < 1.0
    assert layer_ids() == before


def write_raster_gpkg(path: Path, tables: list[str]) -> None:
    """A GeoPackage holding only rasters (GDAL's GPKG raster tables), 40×30 px each, in EPSG:25832."""
    from osgeo import gdal

    for index, table in enumerate(tables):
        memory = gdal.GetDriverByName("MEM").Create("", 40, 30, 1, gdal.GDT_Byte)
        memory.SetGeoTransform((561_000.0, 10.0, 0.0, 6_205_000.0, 0.0, -10.0))
        memory.SetProjection("EPSG:25832")
        memory.GetRasterBand(1).Fill(10 * (index + 1))
        options = [f"RASTER_TABLE={table}"] + (["APPEND_SUBDATASET=YES"] if index else [])
        assert gdal.Translate(str(path), memory, format="GPKG", creationOptions=options) is not None


def test_a_geopackage_of_one_raster_loads_it(loader, tmp_path):
    path = tmp_path / "heights.gpkg"
    write_raster_gpkg(path, ["heights"])
    text = load(loader, str(path)).text
    layer = layer_named("heights")
    assert isinstance(layer, QgsRasterLayer) and layer.providerType() == "gdal"
    assert (layer.width(), layer.height(), layer.crs().authid()) == (40, 30, "EPSG:25832")
    assert "raster 40×30 px, 1 band, EPSG:25832" in text


def test_a_geopackage_of_two_rasters_needs_the_raster_named(loader, tmp_path):
    path = tmp_path / "grids.gpkg"
    write_raster_gpkg(path, ["low", "high"])
    message = refused(loader, str(path), "holds 2 rasters; pass layer")
    assert "low" in message and "high" in message
    assert "did you mean 'high'" in refused(loader, str(path), "no raster 'hihg'", layer="hihg")
    load(loader, str(path), layer="high")
    layer = layer_named("high")
    assert isinstance(layer, QgsRasterLayer) and (layer.width(), layer.height()) == (40, 30)
    assert layer.dataProvider().sample(layer.extent().center(), 1)[0] == 20  # the second table, not the first
