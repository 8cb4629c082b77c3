"""Generate the demo town "Elvbury": a GeoPackage and a styled QGIS project.

Deterministic: the same script gives the same features, byte for byte in the
attribute values and coordinates, on every run (a fixed random seed, a fixed
timestamp for the GeoPackage).  The town lies in ETRS89 / UTM zone 32N
(EPSG:25832) and holds districts, roads, two rivers, schools, hospitals,
parks and land use, and beside the GeoPackage two aligned 10 m GeoTIFFs:
a DEM (rivers in its valleys, steep hills in the north-west) and a land
cover made from the vector layers (parks are grass, the rivers water).
Tests, benchmarks and the demo all use it.

    .venv/bin/python scripts/make_demo_data.py demo/
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shapely import affinity
from shapely.geometry import LineString, MultiPoint, Point, Polygon, box
from shapely.geometry.base import BaseGeometry
from shapely.ops import unary_union, voronoi_diagram

SEED = 20261122
EPSG = 25832
X0, Y0 = 560_000.0, 6_200_000.0
VIEW_MARGIN = 0.05  # the demo project opens on the town plus this share of its size on each side
WIDTH, HEIGHT = 8_000.0, 6_000.0
GPKG_NAME = "elvbury.gpkg"
PROJECT_NAME = "elvbury.qgz"
# Fixed so the GeoPackage metadata does not change between runs.
GPKG_TIMESTAMP = "2026-01-01T00:00:00Z"

DISTRICTS = [
    # name, seed point (relative metres), population
    ("Centre", (4000, 3100), 21_400),
    ("Harbour", (6900, 2700), 12_800),
    ("Nordby", (3800, 5200), 15_300),
    ("Østervang", (6600, 4900), 9_700),
    ("Riverside", (2100, 3300), 11_900),
    ("Hillcrest", (1300, 5200), 6_400),
    ("Westend", (1200, 1100), 8_800),
    ("Mølleby", (4300, 900), 13_500),
    ("Søndre Park", (6900, 800), 7_200),
]


@dataclass
class Layer:
    """One layer of the town: a name, a geometry type, fields and rows."""

    name: str
    geometry_type: str  # OGR name: Point, LineString, Polygon, MultiPolygon
    fields: list[tuple[str, str]]  # (name, OGR type: String, Integer, Real)
    rows: list[tuple[BaseGeometry, dict[str, Any]]] = field(default_factory=list)


def _abs(geom: BaseGeometry) -> BaseGeometry:
    return affinity.translate(geom, X0, Y0)


def _round(geom: BaseGeometry) -> BaseGeometry:
    from shapely import set_precision

    return set_precision(geom, 0.01)


def build_town(seed: int = SEED) -> list[Layer]:
    """Every layer of the town, in drawing order (bottom first).

    One random stream feeds roads, parks, schools and land use, in that order: the order fixes the demo data.
    """
    rng = random.Random(seed)
    districts, district_shapes = _districts()
    rivers, water = _rivers()
    roads = _roads(rng)
    parks, park_shapes = _parks(rng, water)
    schools = _schools(rng, district_shapes, unary_union([water.buffer(20), *park_shapes]))
    hospitals = _hospitals(district_shapes)
    landuse = _landuse(rng, district_shapes, water)
    layers = [landuse, districts, parks, rivers, roads, hospitals, schools]
    for layer in layers:
        layer.rows = [(_abs(geom), attrs) for geom, attrs in layer.rows]
    return layers


def _districts() -> tuple[Layer, dict[str, BaseGeometry]]:
    """Voronoi cells of the seed points, clipped to the town."""
    boundary = box(0, 0, WIDTH, HEIGHT)
    seeds = MultiPoint([Point(p) for _, p, _ in DISTRICTS])
    cells = list(voronoi_diagram(seeds, envelope=boundary.buffer(2000)).geoms)
    districts = Layer("districts", "Polygon", [("name", "String"), ("code", "String"), ("population", "Integer")])
    district_shapes: dict[str, BaseGeometry] = {}
    for index, (name, point, population) in enumerate(DISTRICTS):
        cell = next(c for c in cells if c.contains(Point(point)))
        shape = _round(cell.intersection(boundary))
        district_shapes[name] = shape
        districts.rows.append((shape, {"name": name, "code": f"D{index + 1:02d}", "population": population}))
    return districts, district_shapes


def _rivers() -> tuple[Layer, BaseGeometry]:
    """The Elva meanders west to east; the Mill Brook joins it from the north.  Also the water they cover."""
    elva_pts = [(x, 2900 + 380 * math.sin(x / 950.0) + 120 * math.sin(x / 310.0)) for x in range(0, 8001, 100)]
    elva = LineString(elva_pts)
    brook_pts = []
    for y in range(6000, 2000, -100):
        x = 5300 + 260 * math.sin(y / 640.0)
        brook_pts.append((x, y))
        if elva.distance(Point(x, y)) < 60:
            break
    join = elva.interpolate(elva.project(Point(brook_pts[-1])))
    brook_pts.append((join.x, join.y))
    brook = LineString(brook_pts)
    rivers = Layer("rivers", "LineString", [("name", "String"), ("kind", "String"), ("width_m", "Real")])
    rivers.rows.append((_round(elva), {"name": "Elva", "kind": "river", "width_m": 24.0}))
    rivers.rows.append((_round(brook), {"name": "Mill Brook", "kind": "stream", "width_m": 6.5}))
    water = unary_union([elva.buffer(30), brook.buffer(12)])
    return rivers, water


def _roads(rng: random.Random) -> Layer:
    """A jittered grid split into segments, main axes and a southern motorway; tracks to the hills."""
    step = 500.0
    nx, ny = int(WIDTH / step), int(HEIGHT / step)
    nodes = {
        (i, j): (
            min(max(i * step + rng.uniform(-70, 70), 0), WIDTH) if 0 < i < nx else i * step,
            min(max(j * step + rng.uniform(-70, 70), 0), HEIGHT) if 0 < j < ny else j * step,
        )
        for i in range(nx + 1)
        for j in range(ny + 1)
    }
    roads = Layer("roads", "LineString", [("name", "String"), ("class", "String"), ("maxspeed", "Integer")])
    avenue_names = ["Harbour Avenue", "Station Road", "Market Street", "King's Road", "Eastgate", "North Road"]

    def road_class(horizontal: bool, k: int) -> tuple[str, str, int]:
        if horizontal and k == 6:
            return "River Road", "primary", 60
        if not horizontal and k == 8:
            return "Main Street", "primary", 50
        if horizontal and k == 0:
            return "E45 Motorway", "motorway", 110
        if k % 4 == 0:
            label = avenue_names[(k // 4 + (3 if horizontal else 0)) % len(avenue_names)]
            return label, "secondary", 50
        return (f"{'Cross' if horizontal else 'Lane'} {k}", "residential", 30)

    for j in range(ny + 1):
        name, cls, speed = road_class(True, j)
        for i in range(nx):
            segment = LineString([nodes[(i, j)], nodes[(i + 1, j)]])
            roads.rows.append((_round(segment), {"name": name, "class": cls, "maxspeed": speed}))
    for i in range(nx + 1):
        name, cls, speed = road_class(False, i)
        for j in range(ny):
            segment = LineString([nodes[(i, j)], nodes[(i, j + 1)]])
            roads.rows.append((_round(segment), {"name": name, "class": cls, "maxspeed": speed}))
    # A few unpaved tracks out to the north-western hills.
    for k in range(5):
        start = nodes[(k, ny)]
        end = (start[0] + rng.uniform(-200, 200), start[1] - rng.uniform(600, 1200))
        roads.rows.append(
            (_round(LineString([start, end])), {"name": f"Hill Track {k + 1}", "class": "track", "maxspeed": 20})
        )
    return roads


def _parks(rng: random.Random, water: BaseGeometry) -> tuple[Layer, list[BaseGeometry]]:
    """Irregular ellipses, kept off the water."""
    parks = Layer("parks", "Polygon", [("name", "String"), ("area_ha", "Real")])
    park_names = [
        "Town Park",
        "Elva Meadows",
        "Mill Green",
        "Harbour Gardens",
        "Nordby Common",
        "Hillcrest Woods",
        "Westend Fields",
        "Søndre Park",
        "Østervang Grove",
        "Riverside Green",
        "Station Gardens",
        "Mølleby Playground",
        "King's Garden",
        "Linden Square",
    ]
    park_shapes: list[BaseGeometry] = []
    for name in park_names:
        for _ in range(200):
            centre = Point(rng.uniform(300, WIDTH - 300), rng.uniform(300, HEIGHT - 300))
            shape = affinity.rotate(
                affinity.scale(centre.buffer(1.0, 16), rng.uniform(80, 280), rng.uniform(60, 220)),
                rng.uniform(0, 180),
            )
            if not shape.intersects(water) and not any(shape.buffer(50).intersects(p) for p in park_shapes):
                break
        shape = _round(shape)
        park_shapes.append(shape)
        parks.rows.append((shape, {"name": name, "area_ha": round(shape.area / 10_000, 2)}))
    return parks, park_shapes


def _schools(rng: random.Random, district_shapes: dict[str, BaseGeometry], blocked: BaseGeometry) -> Layer:
    """Points in each district, not in ``blocked`` (water and parks)."""
    schools = Layer(
        "schools", "Point", [("name", "String"), ("type", "String"), ("pupils", "Integer"), ("district", "String")]
    )
    suffixes = {
        "primary": ["Primary", "School", "Infant School"],
        "secondary": ["Secondary", "Academy", "High School"],
        "special": ["Learning Centre"],
    }
    used_names: set[str] = set()
    for name, _, population in DISTRICTS:
        shape = district_shapes[name]
        count = max(2, round(population / 3500))
        for _ in range(count):
            roll = rng.random()
            kind = "primary" if roll < 0.6 else "secondary" if roll < 0.9 else "special"
            pupils = {
                "primary": rng.randint(150, 520),
                "secondary": rng.randint(400, 1250),
                "special": rng.randint(30, 120),
            }[kind]
            for _ in range(500):
                minx, miny, maxx, maxy = shape.bounds
                point = Point(rng.uniform(minx, maxx), rng.uniform(miny, maxy))
                if shape.buffer(-60).contains(point) and not blocked.contains(point):
                    break
            for suffix in suffixes[kind]:
                label = f"{name} {suffix}"
                if label not in used_names:
                    break
            else:
                label = f"{name} {suffixes[kind][0]} {len(used_names)}"
            used_names.add(label)
            schools.rows.append((_round(point), {"name": label, "type": kind, "pupils": pupils, "district": name}))
    return schools


def _hospitals(district_shapes: dict[str, BaseGeometry]) -> Layer:
    hospitals = Layer("hospitals", "Point", [("name", "String"), ("beds", "Integer"), ("emergency", "Integer")])
    for label, district, beds, emergency in [
        ("Elvbury General Hospital", "Centre", 420, 1),
        ("Harbour Clinic", "Harbour", 60, 0),
        ("Nordby Hospital", "Nordby", 180, 1),
        ("Westend Health Centre", "Westend", 35, 0),
    ]:
        shape = district_shapes[district]
        point = shape.representative_point()
        hospitals.rows.append((_round(point), {"name": label, "beds": beds, "emergency": emergency}))
    return hospitals


def _landuse(rng: random.Random, district_shapes: dict[str, BaseGeometry], water: BaseGeometry) -> Layer:
    """250 m cells classified by position, dissolved per class and district."""
    landuse = Layer("landuse", "Polygon", [("class", "String"), ("district", "String")])
    centre = Point(4000, 3100)
    harbour = Point(7400, 2900)
    cells_by_key: dict[tuple[str, str], list[BaseGeometry]] = {}
    for gx in range(int(WIDTH / 250)):
        for gy in range(int(HEIGHT / 250)):
            cell = box(gx * 250, gy * 250, (gx + 1) * 250, (gy + 1) * 250)
            middle = cell.centroid
            if middle.distance(centre) < 900:
                cls = "commercial"
            elif middle.distance(harbour) < 1100:
                cls = "industrial"
            elif middle.x < 2600 and middle.y > 4300:
                cls = "forest"
            elif middle.distance(centre) > 3600 + rng.uniform(-300, 300):
                cls = "farmland"
            elif rng.random() < 0.06:
                cls = "retail"
            else:
                cls = "residential"
            for district, shape in district_shapes.items():
                if shape.intersects(cell):
                    cells_by_key.setdefault((cls, district), []).append(cell)
    for (cls, district), group in sorted(cells_by_key.items()):
        merged = unary_union(group).intersection(district_shapes[district]).difference(water)
        pieces = list(getattr(merged, "geoms", [merged]))
        for piece in sorted(pieces, key=lambda g: (round(g.bounds[0]), round(g.bounds[1]))):
            if isinstance(piece, Polygon) and piece.area > 1:
                landuse.rows.append((_round(piece), {"class": cls, "district": district}))
    return landuse


def write_geopackage(layers: list[Layer], path: Path) -> None:
    """Write every layer into one GeoPackage with OGR (deterministic timestamp)."""
    from osgeo import gdal, ogr, osr

    gdal.UseExceptions()
    gdal.SetConfigOption("OGR_CURRENT_DATE", GPKG_TIMESTAMP)
    if path.exists():
        path.unlink()
    driver = ogr.GetDriverByName("GPKG")
    source = driver.CreateDataSource(str(path))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(EPSG)
    geometry_types = {"Point": ogr.wkbPoint, "LineString": ogr.wkbLineString, "Polygon": ogr.wkbPolygon}
    field_types = {"String": ogr.OFTString, "Integer": ogr.OFTInteger, "Real": ogr.OFTReal}
    for layer in layers:
        out = source.CreateLayer(
            layer.name, srs, geometry_types[layer.geometry_type], options=["FID=fid", "GEOMETRY_NAME=geom"]
        )
        for name, kind in layer.fields:
            out.CreateField(ogr.FieldDefn(name, field_types[kind]))
        out.StartTransaction()
        for geom, attrs in layer.rows:
            feature = ogr.Feature(out.GetLayerDefn())
            for name, _ in layer.fields:
                feature.SetField(name, attrs[name])
            feature.SetGeometry(ogr.CreateGeometryFromWkb(geom.wkb))
            out.CreateFeature(feature)
        out.CommitTransaction()
    source = None  # close and flush
    gdal.SetConfigOption("OGR_CURRENT_DATE", None)


def write_project(gpkg: Path, project_path: Path) -> None:
    """A styled QGIS project over the GeoPackage (relative paths)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from qgis.core import QgsApplication

    app = QgsApplication([], False)
    app.initQgis()
    try:
        _style_project(gpkg, project_path)
    finally:
        app.exitQgis()


def _style_project(gpkg: Path, project_path: Path) -> None:
    from qgis.core import (
        QgsCategorizedSymbolRenderer,
        QgsCoordinateReferenceSystem,
        QgsFillSymbol,
        QgsLineSymbol,
        QgsMarkerSymbol,
        QgsPalLayerSettings,
        QgsProject,
        QgsRendererCategory,
        QgsSingleSymbolRenderer,
        QgsTextBufferSettings,
        QgsTextFormat,
        QgsVectorLayer,
        QgsVectorLayerSimpleLabeling,
    )
    from qgis.PyQt.QtGui import QFont, QFontDatabase

    project = QgsProject.instance()
    project.clear()
    project.setTitle("Elvbury demo town")
    project.setCrs(QgsCoordinateReferenceSystem(f"EPSG:{EPSG}"))

    def load(name: str) -> QgsVectorLayer:
        layer = QgsVectorLayer(f"{gpkg}|layername={name}", name, "ogr")
        if not layer.isValid():
            raise RuntimeError(f"cannot load {name} from {gpkg}")
        return layer

    def categorized(layer: QgsVectorLayer, attribute: str, styles: dict[str, dict[str, str]], maker: Any) -> None:
        categories = [QgsRendererCategory(value, maker.createSimple(props), value) for value, props in styles.items()]
        layer.setRenderer(QgsCategorizedSymbolRenderer(attribute, categories))

    families = set(QFontDatabase().families())
    family = next(
        (f for f in ("DejaVu Sans", "Liberation Sans", "Arial", "Helvetica") if f in families), QFont().family()
    )

    def label(layer: QgsVectorLayer, field_name: str, size: float) -> None:
        settings = QgsPalLayerSettings()
        settings.fieldName = field_name
        text = QgsTextFormat()
        text.setFont(QFont(family))
        text.setSize(size)
        buffer = QgsTextBufferSettings()
        buffer.setEnabled(True)
        text.setBuffer(buffer)
        settings.setFormat(text)
        layer.setLabeling(QgsVectorLayerSimpleLabeling(settings))
        layer.setLabelsEnabled(True)

    landuse = load("landuse")
    categorized(
        landuse,
        "class",
        {
            "residential": {"color": "#f2dfd0", "outline_style": "no"},
            "commercial": {"color": "#f4c6c6", "outline_style": "no"},
            "retail": {"color": "#f7b6d2", "outline_style": "no"},
            "industrial": {"color": "#d9d2e9", "outline_style": "no"},
            "forest": {"color": "#b5d8a8", "outline_style": "no"},
            "farmland": {"color": "#eef3c8", "outline_style": "no"},
        },
        QgsFillSymbol,
    )
    districts = load("districts")
    districts.setRenderer(
        QgsSingleSymbolRenderer(
            QgsFillSymbol.createSimple(
                {"style": "no", "outline_color": "#555555", "outline_width": "0.6", "outline_style": "dash"}
            )
        )
    )
    label(districts, "name", 11)
    parks = load("parks")
    parks.setRenderer(
        QgsSingleSymbolRenderer(QgsFillSymbol.createSimple({"color": "#8fce7f", "outline_color": "#4f8f3f"}))
    )
    rivers = load("rivers")
    rivers.setRenderer(
        QgsSingleSymbolRenderer(QgsLineSymbol.createSimple({"line_color": "#3a87d6", "line_width": "1.2"}))
    )
    label(rivers, "name", 9)
    roads = load("roads")
    categorized(
        roads,
        "class",
        {
            "motorway": {"line_color": "#e07b39", "line_width": "1.4"},
            "primary": {"line_color": "#f2b84b", "line_width": "1.0"},
            "secondary": {"line_color": "#8c8c8c", "line_width": "0.7"},
            "residential": {"line_color": "#bdbdbd", "line_width": "0.35"},
            "track": {"line_color": "#a67c52", "line_width": "0.35", "line_style": "dash"},
        },
        QgsLineSymbol,
    )
    hospitals = load("hospitals")
    hospitals.setRenderer(
        QgsSingleSymbolRenderer(
            QgsMarkerSymbol.createSimple(
                {"name": "cross_fill", "color": "#d7191c", "outline_color": "#ffffff", "size": "4.5"}
            )
        )
    )
    schools = load("schools")
    categorized(
        schools,
        "type",
        {
            "primary": {"name": "circle", "color": "#2c7bb6", "outline_color": "#ffffff", "size": "3"},
            "secondary": {"name": "square", "color": "#7b3294", "outline_color": "#ffffff", "size": "3.2"},
            "special": {"name": "triangle", "color": "#1a9641", "outline_color": "#ffffff", "size": "3.4"},
        },
        QgsMarkerSymbol,
    )
    for layer in (landuse, districts, parks, rivers, roads, hospitals, schools):
        project.addMapLayer(layer, False)
        project.layerTreeRoot().insertLayer(0, layer)
    for raster in _styled_rasters(gpkg.parent):  # at the bottom, unticked: the vector map looks as before
        project.addMapLayer(raster, False)
        project.layerTreeRoot().addLayer(raster).setItemVisibilityChecked(False)
    _set_default_view(project)
    if not project.write(str(project_path)):
        raise RuntimeError(f"cannot write {project_path}: {project.error()}")
    project.clear()


def _set_default_view(project: Any) -> None:
    """Open zoomed to the whole town with a margin: a project written headless has no saved canvas, and
    QGIS would otherwise open it blank at 1:1 (it falls back to the project's default view extent)."""
    from qgis.core import QgsRectangle, QgsReferencedRectangle

    town = QgsRectangle()
    town.setMinimal()
    for layer in project.mapLayers().values():
        town.combineExtentWith(layer.extent())  # every layer is in the project's CRS
    town.grow(VIEW_MARGIN * max(town.width(), town.height()))
    project.viewSettings().setDefaultViewExtent(QgsReferencedRectangle(town, project.crs()))


# --- Rasters beside the GeoPackage: a DEM and a land-cover grid -----------------------------------------------

DEM_NAME = "elvbury_dem.tif"
LANDCOVER_NAME = "elvbury_landcover.tif"
PIXEL = 10.0  # metres; 800 x 600 pixels over the town
DEM_NODATA = -9999.0
LANDCOVER_NODATA = 0
# code, label, colour: the land-cover classes (the GeoTIFF's colour table and category names, the project's palette)
LANDCOVER_CLASSES = [
    (1, "Water", "#3a87d6"),
    (2, "Grass", "#8fce7f"),
    (3, "Forest", "#2f7d32"),
    (4, "Farmland", "#eef3c8"),
    (5, "Residential", "#e8c9b0"),
    (6, "Commercial", "#e39a9a"),
    (7, "Industrial", "#a99cc9"),
]
LANDUSE_TO_CLASS = {"residential": 5, "commercial": 6, "retail": 6, "industrial": 7, "forest": 3, "farmland": 4}


def _pixel_centres() -> tuple[Any, Any]:
    """Town-relative x and y (metres) of every pixel centre, rows from the north."""
    import numpy as np

    cols, rows = int(WIDTH / PIXEL), int(HEIGHT / PIXEL)
    x = (np.arange(cols, dtype=np.float64) + 0.5) * PIXEL
    y = HEIGHT - (np.arange(rows, dtype=np.float64) + 0.5) * PIXEL
    return np.meshgrid(x, y)


def build_dem() -> Any:
    """Elevation in metres (float32, rows from the north): analytic, so deterministic without a random stream.

    A plain rising gently to the north, steep hills in the north-west (Hillcrest, the forest; slopes
    over 15 degrees), and valleys carved along the Elva and the Mill Brook (the same curves as the
    river lines), whose floors fall towards the harbour in the east.  The north-eastern corner lies
    outside the survey: nodata.
    """
    import numpy as np

    x, y = _pixel_centres()
    plain = 18.0 + 0.006 * y + 4.0 * np.sin(x / 700.0) * np.cos(y / 900.0)
    hills = 230.0 * np.exp(-(((x - 900.0) / 520.0) ** 2 + ((y - 5300.0) / 430.0) ** 2))
    hills += 120.0 * np.exp(-(((x - 2100.0) / 420.0) ** 2 + ((y - 5600.0) / 360.0) ** 2))
    terrain = plain + hills
    elva_y = 2900 + 380 * np.sin(x / 950.0) + 120 * np.sin(x / 310.0)
    d_elva = np.abs(y - elva_y)
    brook_x = 5300 + 260 * np.sin(y / 640.0)
    d_brook = np.where(y > elva_y, np.abs(x - brook_x), np.inf)
    floor_elva = 2.0 + 0.0015 * (WIDTH - x)
    floor_brook = floor_elva + 0.004 * np.clip(y - elva_y, 0, None)
    for distance, floor in ((d_elva, floor_elva), (d_brook, floor_brook)):
        keep = 1.0 - np.exp(-((distance / 420.0) ** 2))
        terrain = np.minimum(terrain, floor + (terrain - floor) * keep)
    dem = np.round(terrain, 1).astype(np.float32)
    dem[(x > 7400.0) & (y > 5600.0) & (x - 7400.0 > 5800.0 - y)] = DEM_NODATA
    return dem


def build_landcover(layers: list[Layer]) -> Any:
    """Land-cover codes (uint8, rows from the north) from the town's own layers, so they agree.

    The land use gives the base classes, parks are burnt in as grass and the rivers' water as water
    (the same buffers the vector layers keep free), in that order.
    """
    import numpy as np
    from osgeo import gdal, ogr, osr

    gdal.UseExceptions()
    cols, rows = int(WIDTH / PIXEL), int(HEIGHT / PIXEL)
    target = gdal.GetDriverByName("MEM").Create("", cols, rows, 1, gdal.GDT_Byte)
    target.SetGeoTransform((X0, PIXEL, 0.0, Y0 + HEIGHT, 0.0, -PIXEL))
    by_name = {layer.name: layer for layer in layers}
    rivers = [geom for geom, _ in by_name["rivers"].rows]
    elva, brook = rivers
    water = unary_union([elva.buffer(30), brook.buffer(12)])
    burns: list[tuple[BaseGeometry, int]] = [
        (geom, LANDUSE_TO_CLASS[attrs["class"]]) for geom, attrs in by_name["landuse"].rows
    ]
    burns += [(geom, 2) for geom, _ in by_name["parks"].rows]
    burns.append((water, 1))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(EPSG)
    target.SetProjection(srs.ExportToWkt())
    source = ogr.GetDriverByName("Memory").CreateDataSource("burn")
    layer = source.CreateLayer("burn", srs, geom_type=ogr.wkbUnknown)
    layer.CreateField(ogr.FieldDefn("code", ogr.OFTInteger))
    for geom, code in burns:
        feature = ogr.Feature(layer.GetLayerDefn())
        feature.SetField("code", code)
        feature.SetGeometry(ogr.CreateGeometryFromWkb(geom.wkb))
        layer.CreateFeature(feature)
    gdal.RasterizeLayer(target, [1], layer, options=["ATTRIBUTE=code"])
    grid = target.GetRasterBand(1).ReadAsArray().astype(np.uint8)
    grid[grid == LANDCOVER_NODATA] = 5  # slivers between dissolved land-use pieces: the town's fabric
    return grid


def write_rasters(layers: list[Layer], folder: Path) -> tuple[Path, Path]:
    """The DEM and the land cover as deflated GeoTIFFs in EPSG:25832, aligned with each other (same grid)."""
    from osgeo import gdal, osr

    gdal.UseExceptions()
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(EPSG)
    written = []
    for name, array, data_type, nodata, predictor in (
        (DEM_NAME, build_dem(), gdal.GDT_Float32, DEM_NODATA, "3"),
        (LANDCOVER_NAME, build_landcover(layers), gdal.GDT_Byte, LANDCOVER_NODATA, "2"),
    ):
        path = folder / name
        for stale in (path, path.with_name(path.name + ".aux.xml")):
            if stale.exists():
                stale.unlink()
        rows, cols = array.shape
        options = ["COMPRESS=DEFLATE", f"PREDICTOR={predictor}", "TILED=YES"]
        out = gdal.GetDriverByName("GTiff").Create(str(path), cols, rows, 1, data_type, options=options)
        out.SetGeoTransform((X0, PIXEL, 0.0, Y0 + HEIGHT, 0.0, -PIXEL))
        out.SetProjection(srs.ExportToWkt())
        band = out.GetRasterBand(1)
        band.SetNoDataValue(nodata)
        if name == LANDCOVER_NAME:
            table = gdal.ColorTable()
            for code, _, colour in LANDCOVER_CLASSES:
                table.SetColorEntry(code, (*(int(colour[i : i + 2], 16) for i in (1, 3, 5)), 255))
            band.SetColorTable(table)
        band.WriteArray(array)
        out = None  # close and flush
        written.append(path)
    return written[0], written[1]


def _styled_rasters(folder: Path) -> list[Any]:
    """The DEM (pseudocolour terrain ramp) and the land cover (paletted, with class labels) as project layers."""
    from qgis.core import (
        QgsColorRampShader,
        QgsGradientColorRamp,
        QgsPalettedRasterRenderer,
        QgsRasterLayer,
        QgsRasterShader,
        QgsSingleBandPseudoColorRenderer,
    )
    from qgis.PyQt.QtGui import QColor

    dem = QgsRasterLayer(str(folder / DEM_NAME), "elevation", "gdal")
    landcover = QgsRasterLayer(str(folder / LANDCOVER_NAME), "landcover", "gdal")
    if not (dem.isValid() and landcover.isValid()):
        raise RuntimeError(f"cannot load the GeoTIFFs in {folder}")
    low, high = 0.0, 300.0
    ramp = QgsGradientColorRamp(QColor("#3b7d3b"), QColor("#f4f1e8"))
    shader_function = QgsColorRampShader(low, high, ramp)
    shader_function.classifyColorRamp(5)
    shader = QgsRasterShader(low, high)
    shader.setRasterShaderFunction(shader_function)
    renderer = QgsSingleBandPseudoColorRenderer(dem.dataProvider(), 1, shader)
    renderer.setClassificationMin(low)
    renderer.setClassificationMax(high)
    dem.setRenderer(renderer)
    classes = [QgsPalettedRasterRenderer.Class(code, QColor(hex_), label) for code, label, hex_ in LANDCOVER_CLASSES]
    landcover.setRenderer(QgsPalettedRasterRenderer(landcover.dataProvider(), 1, classes))
    return [dem, landcover]


# --- A CSV of sensors with longitude/latitude columns, for loading delimited text ---------------------------------
SENSORS_NAME = "sensors.csv"
SENSOR_KINDS = ("air", "noise", "water", "traffic")


def write_sensors(folder: Path, count: int = 30, seed: int = SEED) -> Path:
    """``sensors.csv``: ``count`` sensors inside the town, WGS 84 longitude/latitude (6 decimals), comma-separated.

    Placed in EPSG:25832 inside the town's rectangle (a margin of 300 m), then
    converted with GDAL/PROJ; the same file on every run (its own random stream).
    """
    import csv

    from osgeo import osr

    rng = random.Random(seed + 7)
    utm, wgs84 = osr.SpatialReference(), osr.SpatialReference()
    utm.ImportFromEPSG(EPSG)
    wgs84.ImportFromEPSG(4326)
    wgs84.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)  # x = longitude
    to_lonlat = osr.CoordinateTransformation(utm, wgs84)
    path = folder / SENSORS_NAME
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["sensor_id", "kind", "installed", "reading", "lon", "lat"])
        for number in range(1, count + 1):
            x = X0 + 300.0 + rng.random() * (WIDTH - 600.0)
            y = Y0 + 300.0 + rng.random() * (HEIGHT - 600.0)
            lon, lat, _ = to_lonlat.TransformPoint(x, y)
            kind = SENSOR_KINDS[rng.randrange(len(SENSOR_KINDS))]
            year = 2019 + rng.randrange(7)
            reading = round(rng.uniform(5.0, 80.0), 1)
            installed = f"{year}-0{rng.randrange(1, 10)}-15"
            writer.writerow([f"S{number:03d}", kind, installed, reading, f"{lon:.6f}", f"{lat:.6f}"])
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="folder for elvbury.gpkg, its GeoTIFFs and elvbury.qgz")
    parser.add_argument("--no-project", action="store_true", help="write only the GeoPackage and GeoTIFFs")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    layers = build_town()
    gpkg = args.outdir / GPKG_NAME
    write_geopackage(layers, gpkg)
    write_rasters(layers, args.outdir)
    write_sensors(args.outdir)
    if not args.no_project:
        write_project(gpkg.resolve(), args.outdir / PROJECT_NAME)
    counts = ", ".join(f"{layer.name} {len(layer.rows)}" for layer in layers)
    print(f"wrote {gpkg} ({gpkg.stat().st_size // 1024} KB): {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
