"""Expected raster answers computed without the plugin: GDAL's Python bindings read the arrays, numpy does the rest.

District masks come from GDAL's rasterizer (pixel centres inside), points are
looked up through the geotransform, slope is Horn's formula written out in
numpy (the 3 x 3 window QGIS and GDAL use; edge pixels, where QGIS repeats the
border, are left out, which the tasks' tolerance covers).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

DEM = "elvbury_dem.tif"
LANDCOVER = "elvbury_landcover.tif"
LABELS = {1: "Water", 2: "Grass", 3: "Forest", 4: "Farmland", 5: "Residential", 6: "Commercial", 7: "Industrial"}


class RasterOracle:
    """The demo's DEM and land cover as numpy arrays, with the district masks."""

    def __init__(self, gpkg: Path) -> None:
        self.gpkg = gpkg
        self.folder = gpkg.parent

    @functools.cache  # noqa: B019 - one oracle per run
    def array(self, name: str) -> tuple[np.ndarray, tuple[float, ...], float | None]:
        from osgeo import gdal

        dataset = gdal.Open(str(self.folder / name))
        band = dataset.GetRasterBand(1)
        return band.ReadAsArray(), dataset.GetGeoTransform(), band.GetNoDataValue()

    @functools.cache  # noqa: B019
    def district_masks(self) -> dict[str, np.ndarray]:
        from osgeo import gdal, ogr

        dem, transform, _ = self.array(DEM)
        source = ogr.Open(str(self.gpkg))
        layer = source.GetLayerByName("districts")
        masks = {}
        for name in [feature.GetField("name") for feature in layer]:
            target = gdal.GetDriverByName("MEM").Create("", dem.shape[1], dem.shape[0], 1, gdal.GDT_Byte)
            target.SetGeoTransform(transform)
            layer.SetAttributeFilter(f"name = '{name}'")
            gdal.RasterizeLayer(target, [1], layer, burn_values=[1])
            masks[name] = target.GetRasterBand(1).ReadAsArray() == 1
        return masks

    def mean_elevation(self) -> dict[str, float]:
        dem, _, nodata = self.array(DEM)
        return {
            name: float(dem[mask & (dem != nodata)].astype(np.float64).mean())
            for name, mask in self.district_masks().items()
        }

    def class_shares(self) -> dict[str, dict[str, float]]:
        """Per district, each class label's share of its pixels, in percent."""
        cover, _, _ = self.array(LANDCOVER)
        shares = {}
        for name, mask in self.district_masks().items():
            codes, counts = np.unique(cover[mask], return_counts=True)
            shares[name] = {LABELS[int(c)]: 100 * n / counts.sum() for c, n in zip(codes, counts, strict=True)}
        return shares

    def value_at(self, name: str, x: float, y: float) -> float:
        array, transform, _ = self.array(name)
        col, row = int((x - transform[0]) // transform[1]), int((y - transform[3]) // transform[5])
        return array[row, col].item()

    def steep_hectares(self, degrees: float = 15.0) -> float:
        dem, transform, nodata = self.array(DEM)
        z = np.where(dem == nodata, np.nan, dem.astype(np.float64))
        size = transform[1]
        w = {
            (dy, dx): z[1 + dy : z.shape[0] - 1 + dy, 1 + dx : z.shape[1] - 1 + dx]
            for dy in (-1, 0, 1)
            for dx in (-1, 0, 1)
        }
        dzdx = ((w[-1, 1] + 2 * w[0, 1] + w[1, 1]) - (w[-1, -1] + 2 * w[0, -1] + w[1, -1])) / (8 * size)
        dzdy = ((w[1, -1] + 2 * w[1, 0] + w[1, 1]) - (w[-1, -1] + 2 * w[-1, 0] + w[-1, 1])) / (8 * size)
        slope = np.degrees(np.arctan(np.hypot(dzdx, dzdy)))
        return float(np.nansum(slope > degrees) * size * size / 10_000)
