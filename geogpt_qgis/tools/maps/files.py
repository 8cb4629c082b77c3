"""Files (local, or remote through GDAL's ``/vsicurl/``) opened with GDAL to plan a layer (worker thread).

GDAL tells the format from the file itself, not its name: a GeoPackage,
Shapefile, GeoJSON, FlatGeobuf, KML... opens as vector data, a GeoTIFF or any
other GDAL raster as a raster.  A file with several vector layers needs the
layer named; a wrong name gets the closest ones.  Only the file's metadata is
read here; QGIS reads the features when it draws the layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from geogpt_qgis.core.fuzzy import closest_names, did_you_mean
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.load_plan import RASTER, VECTOR, LoadPlan

MAX_LISTED = 20


class _Quiet:
    """Collects GDAL's messages instead of printing them."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __call__(self, _level: int, _number: int, message: str) -> None:
        self.messages.append(" ".join(message.split()))


def _open(path: str, flags: int) -> tuple[Any, list[str]]:
    from osgeo import gdal

    quiet = _Quiet()
    gdal.PushErrorHandler(quiet)
    try:
        dataset = gdal.OpenEx(path, flags)
    except RuntimeError as exc:  # GDAL raises when exceptions are on (another plugin may turn them on)
        dataset, quiet.messages = None, [*quiet.messages, str(exc)]
    finally:
        gdal.PopErrorHandler()
    return dataset, quiet.messages


def missing_file(path: Path, may_list: bool = True) -> ToolError:
    """No such file: name the folder's closest files (or say the folder is missing).

    ``may_list`` is False for a folder the user did not name and is outside the
    project: its file names are not the model's to read, so only the miss is said.
    """
    folder = path.parent
    if not folder.is_dir():
        return ToolError(f"no file {str(path)!r}: the folder {str(folder)!r} does not exist")
    if not may_list:
        return ToolError(f"no file {str(path)!r}; ask the user where the file is")
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    close = closest_names(path.name, names)
    hint = (
        f"did you mean {' or '.join(repr(str(folder / c)) for c in close)}?"
        if close
        else (
            "files there: " + ", ".join(names[:MAX_LISTED]) + (", ..." if len(names) > MAX_LISTED else "")
            if names
            else "the folder is empty"
        )
    )
    return ToolError(f"no file {str(path)!r}; {hint}")


def plan_file(path: str, shown: str, layer: str, name: str) -> LoadPlan:
    """Open ``path`` (a local path or ``/vsicurl/URL``) with GDAL and plan its layer."""
    from osgeo import gdal

    vector, vector_errors = _open(path, gdal.OF_VECTOR | gdal.OF_READONLY)
    if vector is not None and vector.GetLayerCount() > 0:
        return _vector_plan(vector, path, shown, layer, name)
    raster, raster_errors = _open(path, gdal.OF_RASTER | gdal.OF_READONLY)
    if raster is not None and raster.RasterCount > 0:
        return _raster_plan(raster, path, shown, name)
    subdatasets = raster.GetSubDatasets() if raster is not None else []
    # Closed here, on the thread that opened them: an error raised below must not carry a GeoPackage's
    # dataset in its traceback to another thread (freeing it there corrupted the heap).
    vector = raster = None
    if subdatasets:
        return _subdataset_plan(subdatasets, shown, layer, name)
    detail = next(iter(raster_errors or vector_errors), "")
    if path.startswith("/vsicurl/"):
        raise ToolError(f"GDAL could not read {shown} as vector or raster data{f' ({detail})' if detail else ''}")
    raise ToolError(
        f"unknown format: GDAL cannot open {shown} as vector or raster data{f' ({detail})' if detail else ''}. "
        "Supported: GeoPackage, Shapefile, GeoJSON, FlatGeobuf, KML, GeoTIFF and other GDAL formats, CSV/TSV."
    )


def _stem(shown: str) -> str:
    return Path(shown.rstrip("/").split("?")[0]).stem or "data"


def _vector_plan(dataset: Any, path: str, shown: str, layer: str, name: str) -> LoadPlan:
    layers = {}
    for index in range(dataset.GetLayerCount()):
        found = dataset.GetLayerByIndex(index)
        layers[found.GetName()] = found
    wanted = layer.strip()
    if not wanted:
        if len(layers) > 1:
            listed = ", ".join(f"{n} ({_geometry(lyr)}, {lyr.GetFeatureCount(force=0):,})" for n, lyr in layers.items())
            raise ToolError(f"{shown} has {len(layers)} layers; pass layer, one of: {listed}")
        wanted = next(iter(layers))
    if wanted not in layers:
        matches = [n for n in layers if n.casefold() == wanted.casefold()]
        if len(matches) != 1:
            raise ToolError(f"{shown}: " + did_you_mean(wanted, list(layers), "layer"))
        wanted = matches[0]
    single = len(layers) == 1
    base = name or (_stem(shown) if single else wanted)
    note = f"layer {wanted!r} of {dataset.GetDriver().ShortName}" if not single else dataset.GetDriver().ShortName
    return LoadPlan(VECTOR, "ogr", f"{path}|layername={wanted}", base, shown, notes=(f"Format: {note}.",))


def _geometry(layer: Any) -> str:
    from osgeo import ogr

    return ogr.GeometryTypeToName(layer.GetGeomType()) or "no geometry"


def _raster_plan(dataset: Any, path: str, shown: str, name: str) -> LoadPlan:
    driver = dataset.GetDriver().ShortName
    return LoadPlan(RASTER, "gdal", path, name or _stem(shown), shown, notes=(f"Format: {driver}.",))


def _subdataset_plan(subdatasets: list[tuple[str, str]], shown: str, layer: str, name: str) -> LoadPlan:
    """A container of rasters (a GeoPackage of tiles, a NetCDF...): one of them, named by ``layer``."""
    names = {uri.rsplit(":", 1)[-1]: uri for uri, _ in subdatasets}
    wanted = layer.strip()
    if not wanted and len(names) == 1:
        wanted = next(iter(names))
    if wanted not in names:
        if not wanted:
            raise ToolError(f"{shown} holds {len(names)} rasters; pass layer, one of: {', '.join(names)}")
        raise ToolError(f"{shown}: " + did_you_mean(wanted, list(names), "raster"))
    return LoadPlan(RASTER, "gdal", names[wanted], name or wanted, shown)
