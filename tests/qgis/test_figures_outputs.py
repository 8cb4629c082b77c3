"""Optional outputs that hold the answer are made, and named as the caller asked.

Trap: native:rasterlayeruniquevaluesreport makes only an HTML file by default; the class
table that answers "how much of each class" is an optional output.  Run as the description
taught (outputs left out, ``output_name='steep_report'``), the table is made and named
``steep_report`` (was: no table; asked for, ``steep_report_output_table``).  Counts and areas
are checked against numpy over the raster GDAL wrote.  Clean twin: an algorithm whose default
output is a layer keeps its optional extras off.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr
from qgis.core import QgsRasterLayer

from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

PIXEL = 10.0  # metres, EPSG:25832


def classes_raster(path: Path) -> np.ndarray:
    rng = np.random.default_rng(31)
    data = rng.integers(1, 4, size=(40, 50)).astype(np.uint8)
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), 50, 40, 1, gdal.GDT_Byte)
    dataset.SetGeoTransform((560000.0, PIXEL, 0.0, 6200000.0, 0.0, -PIXEL))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    dataset.SetProjection(srs.ExportToWkt())
    dataset.GetRasterBand(1).WriteArray(data)
    dataset.FlushCache()
    dataset = None
    return data


@pytest.mark.parametrize("asked", [{}, {"OUTPUT_TABLE": "TEMPORARY_OUTPUT"}], ids=["left_out", "asked_for"])
def test_the_class_table_is_made_and_named_as_asked(tool_ctx, demo_project, tmp_path, asked):
    data = classes_raster(tmp_path / "steep.tif")
    demo_project.addMapLayer(QgsRasterLayer(str(tmp_path / "steep.tif"), "steep_cells"))
    text = call_in_thread(
        ProcessingTools(tool_ctx).run_algorithm,
        "native:rasterlayeruniquevaluesreport",
        {"INPUT": "steep_cells", "BAND": 1, **asked},
        "steep_report",
    )
    assert [a.name for a in text.artifact.added] == ["steep_report"], text.text
    (table,) = demo_project.mapLayersByName("steep_report")
    rows = {int(f["value"]): f for f in table.getFeatures()}
    values, counts = np.unique(data, return_counts=True)
    assert sorted(rows) == values.tolist()
    for value, count in zip(values.tolist(), counts.tolist(), strict=True):
        assert rows[value]["count"] == count
    read = call_in_thread(ProjectTools(tool_ctx).read_features, "steep_report").text
    assert "All 3 of 3 features" in read, read


def test_an_algorithm_with_a_default_layer_keeps_its_optional_extras_off(tool_ctx, demo_project):
    """Clean twin: extractbyexpression makes OUTPUT; FAIL_OUTPUT stays off unless asked."""
    text = call_in_thread(
        ProcessingTools(tool_ctx).run_algorithm,
        "native:extractbyexpression",
        {"INPUT": "schools", "EXPRESSION": "true"},
        "all_schools",
    )
    assert [a.name for a in text.artifact.added] == ["all_schools"], text.text
