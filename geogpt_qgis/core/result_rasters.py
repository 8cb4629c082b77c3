"""Raster results as files: a folder of GeoTIFFs beside the project, ``<project>_results/``.

The raster twin of ``result_files`` (a GeoPackage per vector result, in the same folder).  A processing
algorithm writes its raster output as a GeoTIFF in a temporary folder that
QGIS deletes when it closes; the store copies it here and points the layer at
the copy.  A folder of plain GeoTIFFs, not raster tables in the GeoPackage:
every QGIS and GDAL version reads them back the same, a user can see and
share each one, and a copy is a file copy.

Each copy carries the metadata item ``GEOGPT_RESULT=MARK`` (in the TIFF
itself), so only files the store wrote are ever removed: a user's own raster
that happens to sit in the folder is left alone.  Qt-free (GDAL only).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from geogpt_qgis.core import result_files
from geogpt_qgis.core.result_files import MARK

MARK_KEY = "GEOGPT_RESULT"
EXTENSION = ".tif"
_CREATION = ["COMPRESS=DEFLATE", "TILED=YES", "BIGTIFF=IF_SAFER"]


def is_result(path: Path) -> bool:
    """The store wrote this raster (its mark is in the file)."""
    from osgeo import gdal

    if not path.is_file():
        return False
    try:
        with _quiet():
            dataset = gdal.Open(str(path))
    except RuntimeError:  # GDAL with exceptions on (QGIS 3.40+ turns them on): not a raster
        return False
    return dataset is not None and dataset.GetMetadataItem(MARK_KEY) == MARK


def copy_raster(source: Path, target: Path) -> None:
    """Copy ``source`` (any format GDAL reads) to the GeoTIFF ``target``, pixel for pixel, marked as a result.

    Written under a temporary name and renamed, so a half-written copy is never
    taken for a result; lossless compression only, so every value is kept.
    """
    from osgeo import gdal

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.stem}-{uuid.uuid4().hex[:8]}.partial{EXTENSION}")
    try:
        options = gdal.TranslateOptions(
            format="GTiff", creationOptions=_CREATION, metadataOptions=[f"{MARK_KEY}={MARK}"]
        )
        try:
            with _quiet():
                dataset = gdal.Translate(str(partial), str(source), options=options)
        except RuntimeError as exc:  # GDAL with exceptions on
            raise OSError(f"could not copy {source} to {target}: {exc}") from None
        if dataset is None:
            raise OSError(f"could not copy {source} to {target}: {gdal.GetLastErrorMsg()}")
        dataset = None  # closes the copy: its pixels are on disk
        os.replace(partial, target)
        aux = Path(f"{partial}.aux.xml")
        if aux.is_file():
            os.replace(aux, Path(f"{target}.aux.xml"))
    finally:
        remove_file(partial)


def result_files_in(folder: Path) -> set[Path]:
    """The rasters of ``folder`` that the store wrote."""
    if not folder.is_dir():
        return set()
    return {path for path in folder.glob(f"*{EXTENSION}") if not path.name.startswith(".") and is_result(path)}


def drop_unused(folder: Path, used: Iterable[Path]) -> list[str]:
    """Delete the store's rasters in ``folder`` that are not in ``used``; the folder too once it is empty."""
    dropped = result_files.delete_unused(result_files_in(folder), used, remove_file)
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty: a user's own files keep it
    return dropped


def remove_file(path: Path) -> None:
    """Delete a raster and its GDAL side file; a file held open elsewhere is left for later."""
    for name in (str(path), f"{path}.aux.xml"):
        with contextlib.suppress(OSError):
            Path(name).unlink()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    from osgeo import gdal

    gdal.PushErrorHandler("CPLQuietErrorHandler")
    try:
        yield
    finally:
        gdal.PopErrorHandler()
