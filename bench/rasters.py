"""Describing a 10,000 x 10,000 GeoTIFF (issue 24): ``describe_layer`` end to end, goal <= 1 s.

Two rasters are written once into a temporary folder: a Float32 DEM-like
surface and a Byte land cover with seven classes, both DEFLATE-compressed
and tiled 256 x 256 (the usual GeoTIFF), without overviews (the slow case: no
pyramid to read from).  Each is added to a project and described through the
project tools on a worker thread, as the agent does; the median of
``ROUNDS`` runs is reported, with the text's own word on exact or
approximate statistics.  ``--quick`` uses 1,000 x 1,000 pixels.

    python -m bench.rasters
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import headless_qgis, sized

SIZE = sized(10_000, 1_000)
ROUNDS = sized(5, 2)
GOAL_SECONDS = 1.0
CHUNK_ROWS = 500


def write_rasters(folder: Path) -> dict[str, Path]:
    """The two test rasters (written chunk by chunk: the full DEM would be 400 MB in memory)."""
    import numpy as np
    from osgeo import gdal, osr

    gdal.UseExceptions()
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    paths = {}
    for name, data_type in (("dem", gdal.GDT_Float32), ("cover", gdal.GDT_Byte)):
        path = folder / f"{name}.tif"
        options = ["COMPRESS=DEFLATE", "TILED=YES", "BIGTIFF=IF_SAFER"]
        dataset = gdal.GetDriverByName("GTiff").Create(str(path), SIZE, SIZE, 1, data_type, options=options)
        dataset.SetGeoTransform((500_000.0, 1.0, 0.0, 6_300_000.0, 0.0, -1.0))
        dataset.SetProjection(srs.ExportToWkt())
        band = dataset.GetRasterBand(1)
        band.SetNoDataValue(-9999 if name == "dem" else 0)
        x = np.arange(SIZE, dtype=np.float32)
        for top in range(0, SIZE, CHUNK_ROWS):
            y = np.arange(top, min(top + CHUNK_ROWS, SIZE), dtype=np.float32)[:, None]
            surface = 100 + 50 * np.sin(x / 700) * np.cos(y / 900) + y * 0.01
            if name == "dem":
                band.WriteArray(surface.astype(np.float32), 0, top)
            else:
                classes = 1 + (x.astype(np.int32) // 97 + y.astype(np.int32) // 89) % 7
                band.WriteArray(classes.astype(np.uint8), 0, top)
        dataset = None
        paths[name] = path
    return paths


def measure() -> dict[str, Any]:
    from qgis.core import QgsProject, QgsRasterLayer

    from geogpt_qgis.toolbelt.main_thread import MainThreadBridge
    from geogpt_qgis.tools.base import ToolContext
    from geogpt_qgis.tools.project.family import ProjectTools
    from harness.runs import call_in_thread

    project = QgsProject.instance()
    tools = ProjectTools(ToolContext(project=project, bridge=MainThreadBridge(), iface=None))
    results: dict[str, Any] = {"pixels": SIZE * SIZE, "size": SIZE, "rounds": ROUNDS, "goal_seconds": GOAL_SECONDS}
    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        paths = write_rasters(Path(work))
        results["write_seconds"] = round(time.perf_counter() - started, 1)
        for name, path in paths.items():
            layer = QgsRasterLayer(str(path), name, "gdal")
            assert layer.isValid(), path
            project.addMapLayer(layer)
            seconds, text = [], ""
            for _ in range(ROUNDS):
                started = time.perf_counter()
                text = call_in_thread(tools.describe_layer, name).text
                seconds.append(time.perf_counter() - started)
            assert f"{SIZE:,} x {SIZE:,} pixels" in text, text
            assert ("categorical, 7 classes" in text) == (name == "cover"), text
            median = statistics.median(seconds)
            results[name] = {
                "seconds": [round(s, 3) for s in seconds],
                "median_seconds": round(median, 3),
                "meets_goal": median <= GOAL_SECONDS,
                "statistics": text.splitlines()[-1],
            }
            project.removeMapLayer(layer.id())
    return results


if __name__ == "__main__":
    with headless_qgis():
        print(json.dumps(measure()))
