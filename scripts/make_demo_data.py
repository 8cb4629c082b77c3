"""Generate the demo town "Elvbury": a GeoPackage and a styled QGIS project.

Deterministic: the same script gives the same features, byte for byte in the
attribute values and coordinates, on every run (a fixed random seed, a fixed
timestamp for the GeoPackage).  The town lies in ETRS89 / UTM zone 32N
(EPSG:25832) and holds districts, roads, two rivers, schools, hospitals,
parks and land use.  Tests, benchmarks and the demo all use it.

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
    if not project.write(str(project_path)):
        raise RuntimeError(f"cannot write {project_path}: {project.error()}")
    project.clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="folder for elvbury.gpkg and elvbury.qgz")
    parser.add_argument("--no-project", action="store_true", help="write only the GeoPackage")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    layers = build_town()
    gpkg = args.outdir / GPKG_NAME
    write_geopackage(layers, gpkg)
    if not args.no_project:
        write_project(gpkg.resolve(), args.outdir / PROJECT_NAME)
    counts = ", ".join(f"{layer.name} {len(layer.rows)}" for layer in layers)
    print(f"wrote {gpkg} ({gpkg.stat().st_size // 1024} KB): {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
