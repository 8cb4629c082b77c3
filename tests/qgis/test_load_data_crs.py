"""A layer load_data opens on a worker keeps a CRS that transforms correctly on the main thread.

QGIS 3.22 ties a CRS's PROJ object to the thread that first built it; when
that thread ends, transforms from the CRS leave coordinates unchanged, and the
next event loop crashes.  load_data made file layers on the tool call's own
short-lived thread: a GeoPackage in EPSG:3857 then reprojected to the
project's EPSG:25832 as (1110000, 7540000) -> (1110000, 7540000), and QGIS
died on the next processEvents.  Checked here against pyproj.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from osgeo import gdal
from pyproj import Transformer
from qgis.core import QgsCoordinateReferenceSystem, QgsCoordinateTransform, QgsPointXY
from qgis.PyQt.QtWidgets import QApplication

from geogpt_qgis.tools.maps.loading import DataLoading
from tests.support.runs import call_in_thread


@pytest.mark.parametrize("epsg", [3857, 3035])
def test_a_file_in_another_crs_transforms_like_pyproj_after_loading(tool_ctx, demo_project, tmp_path, epsg):
    source = Path(demo_project.fileName()).with_name("elvbury.gpkg")
    copy = tmp_path / f"schools_{epsg}.gpkg"
    written = gdal.VectorTranslate(str(copy), str(source), layers=["schools"], dstSRS=f"EPSG:{epsg}")
    del written  # closed: on disk
    loader = DataLoading(tool_ctx)
    loader.notice_user_text(f"my copy is in {tmp_path}/")
    text = call_in_thread(loader.load_data, str(copy), "", "", f"schools_{epsg}").text
    assert f"EPSG:{epsg}" in str(text)
    (layer,) = demo_project.mapLayersByName(f"schools_{epsg}")
    for _ in range(5):
        QApplication.processEvents()  # where QGIS 3.22 crashed
    to_project = QgsCoordinateTransform(layer.crs(), QgsCoordinateReferenceSystem("EPSG:25832"), demo_project)
    assert to_project.isValid()
    reference = Transformer.from_crs(f"EPSG:{epsg}", "EPSG:25832", always_xy=True)
    for feature in list(layer.getFeatures())[:5]:
        point = feature.geometry().asPoint()
        moved = to_project.transform(QgsPointXY(point))
        x, y = reference.transform(point.x(), point.y())
        assert (moved.x(), moved.y()) == pytest.approx((x, y), abs=0.01), (point, moved)
