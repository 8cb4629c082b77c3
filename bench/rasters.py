"""Describing a 10,000 x 10,000 GeoTIFF (issue 24): ``describe_layer`` end to end, goal <= 1 s.

Two rasters are written once into a temporary folder: a Float32 DEM-like
surface and a Byte land cover with seven classes, both DEFLATE-compressed
and tiled 256 x 256 (the usual GeoTIFF), without overviews (the slow case: no
pyramid to read from).  Each is added to a project and described through the
project tools on a worker thread, as the agent does; the median of
``ROUNDS`` runs (wall time of the tool call, in seconds) is reported, with the
text's own word on exact or approximate statistics and how far a sample's
figures are from numpy's over every pixel written (the DEM's mean, each
class's share).  ``--quick`` uses 1,000 x 1,000 pixels (exact).

    python -m bench.rasters
"""

from __future__ import annotations

import json
import re
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


def write_rasters(folder: Path) -> tuple[dict[str, Path], dict[str, Any]]:
    """The two test rasters (written chunk by chunk: the full DEM would be 400 MB in memory) and numpy's figures.

    The figures are over every pixel written: the DEM's mean (float64 sum), each class's share in %.
    """
    import numpy as np
    from osgeo import gdal, osr

    gdal.UseExceptions()
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    paths = {}
    dem_sum, class_counts = 0.0, np.zeros(256, dtype=np.int64)
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
                written = surface.astype(np.float32)
                dem_sum += float(written.sum(dtype=np.float64))
            else:
                written = (1 + (x.astype(np.int32) // 97 + y.astype(np.int32) // 89) % 7).astype(np.uint8)
                class_counts += np.bincount(written.ravel(), minlength=256)
            band.WriteArray(written, 0, top)
        dataset = None
        paths[name] = path
    shares = {int(code): 100 * int(class_counts[code]) / SIZE**2 for code in np.flatnonzero(class_counts)}
    return paths, {"dem_mean": dem_sum / SIZE**2, "class_shares": shares}


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
        paths, full = write_rasters(Path(work))
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
                "approximate": "Statistics: approximate" in text,
            }
            if name == "dem":
                found = re.search(r"\bmean (-?[\d.e+]+)", text)
                assert found, text
                mean = float(found[1])
                results[name]["mean"] = mean
                results[name]["full_mean"] = round(full["dem_mean"], 4)
                results[name]["mean_error_percent"] = round(100 * abs(mean - full["dem_mean"]) / full["dem_mean"], 3)
            else:
                classes = text.split("valid pixels:")[1].splitlines()[0]
                shown = {int(c): float(v) for c, v in re.findall(r"\b(\d+) ([\d.]+)%", classes)}
                assert set(shown) <= set(full["class_shares"]), (shown, full)  # a sample never invents a class
                results[name]["classes_found"] = f"{len(shown)} of {len(full['class_shares'])}"
                results[name]["largest_share_error_points"] = round(
                    max(abs(shown.get(c, 0.0) - share) for c, share in full["class_shares"].items()), 2
                )
            project.removeMapLayer(layer.id())
    return results


if __name__ == "__main__":
    with headless_qgis():
        print(json.dumps(measure()))
