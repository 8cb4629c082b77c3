"""What in a raster file changes the figures read from it, found with raw GDAL where it enters.

- Two georeferencings: a GeoTIFF's own geotransform, an ``.aux.xml`` sidecar's and a world file's
  (``.tfw``, ``.wld``...) can disagree; GDAL silently takes one (the sidecar before the file's own,
  the file's own before a world file), and a pixel size or area read from the wrong one is off by
  their ratio. Every source found is compared, and a disagreement is said with the one in use.
- Pixel-is-point (``AREA_OR_POINT=Point``): the tie point names a pixel's centre; GDAL moves the grid
  half a pixel so each pixel is centred on its sample. Said, so an extent read elsewhere is not taken as-is.

Worker thread: plain GDAL on the file, nothing of QGIS's (``source`` from the layer, read on the main thread).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from geogpt_qgis.core.cancel import CancelToken

WORLD_SUFFIXES = (".tfw", ".tifw", ".tiffw", ".wld", ".pgw", ".jgw", ".gfw")
_PAM_TRANSFORM = re.compile(r"<GeoTransform>([^<]+)</GeoTransform>")
Transform = tuple[float, float, float, float, float, float]


def _same(a: Transform, b: Transform) -> bool:
    scale = max(abs(a[1]), abs(a[5]), 1e-12)
    return all(math.isclose(x, y, rel_tol=1e-9, abs_tol=scale * 1e-6) for x, y in zip(a, b, strict=True))


def _internal(path: str) -> Transform | None:
    from osgeo import gdal

    previous = gdal.GetThreadLocalConfigOption("GDAL_GEOREF_SOURCES", None)
    gdal.SetThreadLocalConfigOption("GDAL_GEOREF_SOURCES", "INTERNAL")
    try:
        dataset = gdal.OpenEx(path, gdal.OF_RASTER | gdal.OF_READONLY)
        found = dataset.GetGeoTransform(can_return_null=True) if dataset is not None else None
    except RuntimeError:
        found = None
    finally:
        gdal.SetThreadLocalConfigOption("GDAL_GEOREF_SOURCES", previous)
    return tuple(found) if found else None


def _sidecar(path: str) -> Transform | None:
    aux = Path(path + ".aux.xml")
    if not aux.is_file() or aux.stat().st_size > 1_000_000:
        return None
    found = _PAM_TRANSFORM.search(aux.read_text(encoding="utf-8", errors="replace"))
    if not found:
        return None
    try:
        values = tuple(float(v) for v in found.group(1).split(","))
    except ValueError:
        return None
    return values if len(values) == 6 else None


def _world(path: str) -> tuple[Transform, str] | None:
    base = Path(path)
    for suffix in (*WORLD_SUFFIXES, *(s.upper() for s in WORLD_SUFFIXES)):
        world = base.with_suffix(suffix)
        if world.is_file() and world.stat().st_size < 10_000:
            try:
                a, d, b, e, c, f = (float(v) for v in world.read_text(encoding="ascii", errors="replace").split()[:6])
            except ValueError:
                return None
            # A world file names the first pixel's centre; a geotransform its corner.
            return (c - a / 2 - b / 2, a, b, f - d / 2 - e / 2, d, e), world.name
    return None


def _pixel(transform: Transform) -> str:
    return f"{abs(transform[1]):.6g} x {abs(transform[5]):.6g} pixels from {transform[0]:.10g}, {transform[3]:.10g}"


def raster_notes(source: str, cancel: CancelToken) -> list[str]:
    """Conflicting georeferencings and pixel-is-point of a GDAL file (worker thread); ``[]`` when none or not a file."""
    if not source or not Path(source).is_file():
        return []
    from osgeo import gdal

    try:
        dataset = gdal.OpenEx(source, gdal.OF_RASTER | gdal.OF_READONLY)
    except RuntimeError:
        return []
    if dataset is None:
        return []
    used = dataset.GetGeoTransform(can_return_null=True)
    point = (dataset.GetMetadataItem("AREA_OR_POINT") or "").lower() == "point"
    dataset = None
    cancel.raise_if_cancelled()
    lines: list[str] = []
    sources: list[tuple[str, Transform]] = []
    internal = _internal(source)
    if internal:
        sources.append(("the file's own", internal))
    sidecar = _sidecar(source)
    if sidecar:
        sources.append((f"its sidecar {Path(source).name}.aux.xml", sidecar))
    world = _world(source)
    if world:
        sources.append((f"its world file {world[1]}", world[0]))
    if used and len(sources) > 1 and any(not _same(sources[0][1], other) for _, other in sources[1:]):
        listed = "; ".join(f"{name}: {_pixel(transform)}" for name, transform in sources)
        in_use = next((name for name, transform in sources if _same(transform, tuple(used))), "none of them")
        lines.append(
            f"Two georeferencings disagree ({listed}). GDAL and QGIS use {in_use}; sizes, areas and places "
            "differ with the other. Ask which is right before measuring."
        )
    if point:
        lines.append(
            "Pixel-is-point (AREA_OR_POINT=Point): the file's tie point is a pixel's centre; GDAL shifted the grid "
            "half a pixel so each pixel is centred on its sample (the extent shown is the shifted one)."
        )
    return lines
