"""Layers QGIS cannot open, and what ``tools.layer_errors`` reads from them: run as a process.

    python -m tests.support.layer_error_probe BASE_URL

Its own process because the bug it checks kills the process: QGIS 3.22's ``QgsError::summary()``
on an empty error is a segfault (issue 37; ``python -c "from qgis.core import QgsError;
QgsError().summary()"`` ends with signal 11).  ``BASE_URL`` is a file server whose ``/noqgis/`` answers
QGIS's network manager with an empty 503 (``tests.support.file_server``).  Prints one JSON line, per
case: whether QGIS opened the layer, whether its and its provider's errors are empty, and what
``why_not_opened`` and ``not_opened_message`` said.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path


def _cases(base: str, folder: Path) -> dict[str, tuple[str, str, str]]:
    """name: (uri, provider, kind) of layers QGIS cannot open, each failing in its own way."""
    garbage = folder / "not_a_geopackage.gpkg"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)  # the magic, then nonsense
    return {
        "oapif_refused": (f"url='{base}/noqgis/oapi' typename='wells'", "OAPIF", "vector"),
        "oapif_no_server": ("url='http://127.0.0.1:9/oapi' typename='wells'", "OAPIF", "vector"),
        "wfs_refused": (f"url='{base}/noqgis/wfs' typename='wells' version='2.0.0'", "WFS", "vector"),
        "wms_refused": (f"url={base}/noqgis/wms&layers=roads&styles=&format=image/png&crs=EPSG:4326", "wms", "raster"),
        "ogr_garbage": (f"{garbage}|layername=result", "ogr", "vector"),
        "gdal_garbage": (str(garbage), "gdal", "raster"),
        "unknown_provider": ("anything", "no_such_provider", "vector"),
    }


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from qgis.core import Qgis, QgsApplication, QgsRasterLayer, QgsVectorLayer

    app = QgsApplication([], False)
    app.initQgis()
    from geogpt_qgis.tools.layer_errors import not_opened_message, why_not_opened

    base = sys.argv[1]
    report: dict = {"qgis": Qgis.version()}
    with tempfile.TemporaryDirectory() as folder:
        cases = _cases(base, Path(folder))
        for name, (uri, provider, kind) in cases.items():
            layer = QgsRasterLayer(uri, name, provider) if kind == "raster" else QgsVectorLayer(uri, name, provider)
            data_provider = layer.dataProvider()
            report[name] = {
                "valid": layer.isValid(),
                "layer_error_empty": layer.error().isEmpty(),
                "has_provider": data_provider is not None,
                "provider_error_empty": data_provider.error().isEmpty() if data_provider is not None else None,
                "why": why_not_opened(layer),
                "message": not_opened_message(name, layer),
            }
            del layer
    report["none"] = why_not_opened(None)
    print(json.dumps(report), flush=True)
    app.exitQgis()


if __name__ == "__main__":
    main()
