"""Traps in rasters: scale/offset, nodata, sidecar and world-file georeferencing, pixel-is-point, categorical
resampling. Right answers are read with raw GDAL and numpy (the physical value is stored × scale + offset).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from osgeo import gdal

from tests.traps.data import read_raster, write_raster
from tests.traps.harness import Figure, Session, number, table, trap

X0, Y0 = 500000.0, 5500000.0
SCALE, OFFSET = 0.0001, -0.1
SCALING = r"scale|offset"
GEOREF = r"aux\.xml|sidecar|world file|\.tfw|two georeferenc|georeferencings|conflict"


def _band(physical: float, shape: tuple[int, int], scaled: bool) -> np.ndarray:
    if scaled:
        return np.full(shape, round((physical - OFFSET) / SCALE), dtype=np.int16)
    return np.full(shape, physical, dtype=np.float32)


def _value_at(s: Session, layer: str, x: float, y: float) -> float | None:
    """The value ``describe_layer(at=...)`` reads at one point (its last number on the point's line)."""
    text = s.call("describe_layer", layer=layer, at=f"EPSG:25832 {x} {y}")
    rows = table(text)
    if rows:
        return number(list(rows[0].values())[-1])
    lines = [line for line in text.splitlines() if re.search(r"\d", line) and not line.startswith("Error")]
    return number(lines[-1].rsplit(" ", 1)[-1]) if lines else None


def _pixel_size(s: Session, layer: str) -> float | None:
    found = re.search(r"pixel ([\d.]+) x", s.call("describe_layer", layer=layer))
    return float(found.group(1)) if found else None


def _mean(s: Session, layer: str) -> float | None:
    found = re.search(r"mean (-?[\d.e+-]+)", s.call("describe_layer", layer=layer))
    return float(found.group(1)) if found else None


@trap("scale/offset", warns=SCALING)
def test_ndvi_from_scaled_bands(s: Session, defect: bool) -> Figure:
    """NDVI from reflectances stored as integers × 0.0001 − 0.1: (0.4 − 0.2) / (0.4 + 0.2) = 0.333, not 0.25."""
    transform = (X0, 10, 0, Y0, 0, -10)
    nir = write_raster(
        s.tmp / "nir.tif",
        _band(0.4, (20, 20), defect),
        25832,
        transform,
        None,
        *(SCALE, OFFSET) if defect else (None, None),
    )
    red = write_raster(
        s.tmp / "red.tif",
        _band(0.2, (20, 20), defect),
        25832,
        transform,
        None,
        *(SCALE, OFFSET) if defect else (None, None),
    )
    s.load(nir, name="nir")
    s.load(red, name="red")
    s.run(
        "gdal:rastercalculator",
        output_name="ndvi",
        INPUT_A="nir",
        BAND_A=1,
        INPUT_B="red",
        BAND_B=1,
        FORMULA="(A.astype(float)-B)/(A.astype(float)+B)",
        RTYPE=5,
    )
    return Figure(_value_at(s, "ndvi", X0 + 55, Y0 - 55), 1 / 3, rel=1e-3)


@trap("scale/offset", warns=SCALING + r"|stored")
def test_reflectance_at_a_point(s: Session, defect: bool) -> Figure:
    """A reflectance of 0.4 stored as 5000 (× 0.0001 − 0.1): the value at a point is 0.4."""
    nir = write_raster(
        s.tmp / "nir.tif",
        _band(0.4, (20, 20), defect),
        25832,
        (X0, 10, 0, Y0, 0, -10),
        None,
        *(SCALE, OFFSET) if defect else (None, None),
    )
    s.load(nir, name="nir")
    return Figure(_value_at(s, "nir", X0 + 55, Y0 - 55), 0.4, rel=1e-3)


@trap(
    "nodata",
    warns=r"(looks like|probably|likely|suspect\w*|seems) (a |an )?(nodata|no-data|fill)|undeclared|not declared",
)
def test_mean_elevation_with_undeclared_nodata(s: Session, defect: bool) -> Figure:
    """A DEM whose gaps hold -9999 with no nodata declared: the mean of the ground is not dragged down by them."""
    dem = np.linspace(100, 300, 400, dtype=np.float32).reshape(20, 20)
    expected = float(dem.mean())
    if defect:
        dem = dem.copy()
        dem[:4, :] = -9999
        expected = float(dem[dem != -9999].mean())
    write_raster(s.tmp / "dem.tif", dem, 25832, (X0, 10, 0, Y0, 0, -10))
    s.load(s.tmp / "dem.tif", name="dem")
    return Figure(_mean(s, "dem"), expected, rel=1e-4)


@trap("nodata", warns=r"(looks like|probably|likely|suspect\w*) (a )?(nodata|no-data|fill)|undeclared")
def test_zonal_mean_with_declared_nodata(s: Session, defect: bool) -> Figure:
    """The mean elevation of a zone where a quarter of the pixels are declared nodata: they do not count."""
    from osgeo import ogr

    from tests.traps.data import square, write_vector

    dem = np.linspace(100, 300, 400, dtype=np.float32).reshape(20, 20)
    if defect:
        dem = dem.copy()
        dem[:, :5] = -9999
    write_raster(s.tmp / "dem.tif", dem, 25832, (X0, 10, 0, Y0, 0, -10), nodata=-9999 if defect else None)
    write_vector(s.tmp / "zones.gpkg", 25832, [square(X0, Y0 - 200, 200)], [{"name": "all"}], ogr.wkbPolygon)
    s.load(s.tmp / "dem.tif", name="dem")
    s.load(s.tmp / "zones.gpkg", name="zones")
    text = s.call("describe_layer", layer="dem", at="zones")
    rows = table(text)
    valid = dem[dem != -9999] if defect else dem
    return Figure(number(rows[0].get("mean", "")) if rows else None, float(valid.mean()), rel=1e-4)


def _write_aux(path: Path, transform: tuple[float, ...]) -> None:
    Path(str(path) + ".aux.xml").write_text(
        "<PAMDataset><GeoTransform>" + ", ".join(f"{v:.10g}" for v in transform) + "</GeoTransform></PAMDataset>\n",
        encoding="utf-8",
    )


@trap("sidecar georeferencing", warns=GEOREF)
def test_pixel_size_with_a_conflicting_aux_xml(s: Session, defect: bool) -> Figure:
    """A GeoTIFF with 10 m pixels, and an .aux.xml beside it that says 20 m: the file's own, or a word about both."""
    path = write_raster(s.tmp / "ortho.tif", np.ones((30, 40), np.uint8), 25832, (X0, 10, 0, Y0, 0, -10))
    if defect:
        _write_aux(path, (X0, 20, 0, Y0, 0, -20))
    s.load(path, name="ortho")
    return Figure(_pixel_size(s, "ortho"), 10.0, rel=1e-6)


def _world_file(path: Path, transform: tuple[float, ...]) -> None:
    x0, size_x, _, y0, _, size_y = transform
    lines = [size_x, 0, 0, size_y, x0 + size_x / 2, y0 + size_y / 2]  # a world file names the first pixel's centre
    path.with_suffix(".tfw").write_text("\n".join(f"{v:.10g}" for v in lines) + "\n", encoding="ascii")


@trap("world-file georeferencing", warns=GEOREF)
def test_pixel_size_with_a_conflicting_world_file(s: Session, defect: bool) -> Figure:
    """A GeoTIFF with 10 m pixels and a .tfw world file saying 20 m: GDAL uses the file's own (10 m)."""
    path = write_raster(s.tmp / "ortho.tif", np.ones((30, 40), np.uint8), 25832, (X0, 10, 0, Y0, 0, -10))
    if defect:
        _world_file(path, (X0, 20, 0, Y0, 0, -20))
    s.load(path, name="ortho")
    return Figure(_pixel_size(s, "ortho"), 10.0, rel=1e-6)


@trap("world-file georeferencing", warns=r"no georeferenc|not georeferenc|pixel coordinates")
def test_value_at_a_point_georeferenced_by_a_world_file(s: Session, defect: bool) -> Figure:
    """A GeoTIFF with no geotransform of its own, placed by its world file: the value at a map point."""
    grid = np.arange(400, dtype=np.float32).reshape(20, 20)
    transform = (X0, 10, 0, Y0, 0, -10)
    path = write_raster(s.tmp / "grid.tif", grid, 25832, None if defect else transform)
    if defect:
        _world_file(path, transform)
    s.load(path, name="grid")
    return Figure(_value_at(s, "grid", X0 + 35, Y0 - 75), float(grid[7, 3]), rel=1e-6)


@trap("pixel-is-point", warns=r"pixel.is.point|AREA_OR_POINT|half a pixel|half-pixel")
def test_value_at_a_point_of_a_point_sampled_grid(s: Session, defect: bool) -> Figure:
    """A DEM whose tie point is a pixel centre (AREA_OR_POINT=Point): GDAL shifts it half a pixel, values stay put."""
    grid = np.arange(400, dtype=np.float32).reshape(20, 20)
    metadata = {"AREA_OR_POINT": "Point"} if defect else {"AREA_OR_POINT": "Area"}
    path = write_raster(s.tmp / "dem.tif", grid, 25832, (X0, 10, 0, Y0, 0, -10), metadata=metadata)
    origin = gdal.Open(str(path)).GetGeoTransform()  # as GDAL reads it back
    x, y = origin[0] + 3.5 * origin[1], origin[3] + 7.5 * origin[5]
    s.load(path, name="dem")
    return Figure(_value_at(s, "dem", x, y), float(grid[7, 3]), rel=1e-6)


@trap(
    "categorical resampling",
    warns=r"categor|nearest|classes? (that|which) (do|does) not exist|invent",
)
def test_land_cover_classes_after_reprojection(s: Session, defect: bool) -> Figure:
    """Land cover (classes 10, 20, 30) reprojected with bilinear resampling must keep only those classes."""
    cover = np.full((40, 40), 10, np.uint8)
    cover[:, 20:] = 30
    cover[10:30, 10:30] = 20
    if not defect:  # the twin: a continuous surface, where bilinear is right
        cover = np.linspace(10, 30, 1600, dtype=np.float32).reshape(40, 40)
    write_raster(s.tmp / "cover.tif", cover, 25832, (X0, 10, 0, Y0, 0, -10))
    s.load(s.tmp / "cover.tif", name="cover")
    s.run("gdal:warpreproject", output_name="cover_4326", INPUT="cover", TARGET_CRS="EPSG:4326", RESAMPLING=1)
    layers = s.project.mapLayersByName("cover_4326")
    if not layers:
        return Figure(None, True)
    values = read_raster(layers[0].source())
    if defect:
        found = {int(v) for v in np.unique(values) if v != 0}
        return Figure(found <= {10, 20, 30}, True)
    inside = values[values > 0]
    return Figure(float(inside.mean()), float(cover.mean()), rel=0.02)


@trap("invalid geometry", warns=r"invalid|self-intersect")
def test_zonal_mean_in_a_self_crossing_zone(s: Session, defect: bool) -> Figure:
    """The mean of a DEM in a zone drawn as a bowtie: over the pixels whose centre is in the zone made valid."""
    from osgeo import ogr
    from shapely import make_valid
    from shapely.geometry import Point, Polygon

    from tests.traps.data import write_vector

    dem = np.arange(400, dtype=np.float32).reshape(20, 20)
    write_raster(s.tmp / "dem.tif", dem, 25832, (X0, 10, 0, Y0, 0, -10))
    bowtie = Polygon([(X0, Y0), (X0 + 200, Y0 - 120), (X0 + 200, Y0), (X0, Y0 - 160), (X0, Y0)])
    zone = bowtie if defect else make_valid(bowtie)
    write_vector(s.tmp / "zones.gpkg", 25832, [zone.wkt], [{"name": "z"}], ogr.wkbUnknown)
    inside = [
        dem[row, col]
        for row in range(20)
        for col in range(20)
        if make_valid(bowtie).contains(Point(X0 + 10 * col + 5, Y0 - 10 * row - 5))
    ]
    s.load(s.tmp / "dem.tif", name="dem")
    s.load(s.tmp / "zones.gpkg", name="zones")
    rows = table(s.call("describe_layer", layer="dem", at="zones"))
    return Figure(number(rows[0].get("mean", "")) if rows else None, float(np.mean(inside)), rel=1e-4)
