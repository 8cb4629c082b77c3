"""Writers for the traps' data (raw GDAL/OGR, never QGIS) and answers computed without QGIS."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from osgeo import gdal, ogr, osr
from pyproj import CRS, Geod, Transformer
from shapely import wkt as shapely_wkt
from shapely.geometry.base import BaseGeometry
from shapely.ops import transform

gdal.UseExceptions()
ogr.UseExceptions()

GEOD = Geod(ellps="WGS84")


def srs(epsg: int) -> osr.SpatialReference:
    ref = osr.SpatialReference()
    ref.ImportFromEPSG(epsg)
    ref.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    return ref


def write_vector(
    path: Path,
    epsg: int | None,
    geometries: Sequence[str],
    attributes: Sequence[dict[str, Any]] | None = None,
    geometry_type: int = ogr.wkbUnknown,
    layer: str = "",
    driver: str = "GPKG",
) -> Path:
    """A one-layer file (GeoPackage by default) with WKT ``geometries`` and ``attributes`` (types from values)."""
    attributes = attributes or [{} for _ in geometries]
    source = ogr.GetDriverByName(driver).CreateDataSource(str(path))
    made = source.CreateLayer(layer or path.stem, srs(epsg) if epsg else None, geometry_type)
    for name, value in attributes[0].items() if attributes else []:
        kind = (
            ogr.OFTInteger64 if isinstance(value, int) else ogr.OFTReal if isinstance(value, float) else ogr.OFTString
        )
        made.CreateField(ogr.FieldDefn(name, kind))
    for text, values in zip(geometries, attributes, strict=True):
        feature = ogr.Feature(made.GetLayerDefn())
        feature.SetGeometry(ogr.CreateGeometryFromWkt(text))
        for name, value in values.items():
            feature.SetField(name, value)
        made.CreateFeature(feature)
    source = None
    return path


def write_raster(
    path: Path,
    array: Any,
    epsg: int,
    geotransform: tuple[float, ...] | None,
    nodata: float | None = None,
    scale: float | None = None,
    offset: float | None = None,
    metadata: dict[str, str] | None = None,
) -> Path:
    """A one-band GeoTIFF of ``array`` (its dtype), with what a band may declare."""
    import numpy as np

    kinds = {np.dtype("uint8"): gdal.GDT_Byte, np.dtype("int16"): gdal.GDT_Int16, np.dtype("float32"): gdal.GDT_Float32}
    rows, cols = array.shape
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), cols, rows, 1, kinds[array.dtype])
    if geotransform is not None:
        dataset.SetGeoTransform(geotransform)
    dataset.SetProjection(srs(epsg).ExportToWkt())
    if metadata:
        dataset.SetMetadata(metadata)
    band = dataset.GetRasterBand(1)
    band.WriteArray(array)
    if nodata is not None:
        band.SetNoDataValue(nodata)
    if scale is not None:
        band.SetScale(scale)
    if offset is not None:
        band.SetOffset(offset)
    dataset = None
    aux = Path(str(path) + ".aux.xml")
    if aux.exists():  # GDAL writes scale/offset there for GeoTIFF; keep them in the file itself
        aux.unlink()
    return path


def square(x: float, y: float, side: float) -> str:
    return f"POLYGON(({x} {y},{x + side} {y},{x + side} {y + side},{x} {y + side},{x} {y}))"


def geodesic_area(geometry: BaseGeometry) -> float:
    """m² on WGS 84 of a lon/lat geometry (pyproj), its rings wound shells-counter-clockwise first.

    pyproj sums rings by their winding: a hole wound like its shell would be added, not cut out.
    """
    from shapely import orient_polygons

    return abs(GEOD.geometry_area_perimeter(orient_polygons(geometry))[0])


def ellipsoidal_area(geometry: BaseGeometry, epsg: int) -> float:
    """m² on WGS 84 of a geometry stored in ``epsg`` (what QGIS measures on the layer's ellipsoid, to 1e-6)."""
    return geodesic_area(to_lonlat(geometry, epsg))


def geodesic_length(geometry: BaseGeometry) -> float:
    return GEOD.geometry_length(geometry)


def to_lonlat(geometry: BaseGeometry, epsg: int) -> BaseGeometry:
    move = Transformer.from_crs(CRS.from_epsg(epsg), CRS.from_epsg(4326), always_xy=True)
    return transform(move.transform, geometry)


def shape(text: str) -> BaseGeometry:
    return shapely_wkt.loads(text)


def read_raster(path: Path | str) -> Any:
    """The band's stored values (numpy) as GDAL reads them."""
    dataset = gdal.Open(str(path))
    return dataset.GetRasterBand(1).ReadAsArray()


def rows_of(path: Path, lines: Iterable[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
