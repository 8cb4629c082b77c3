"""What differs between QGIS versions is read by name: enum members and renamed algorithm ids.

These pass on 3.22 and on 3.40+ (where ``Qgis.DistanceUnit`` replaced
``QgsUnitTypes.DistanceUnit`` with other integers, and Python algorithms
became ``native:`` ones).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from qgis.core import (
    Qgis,
    QgsApplication,
    QgsProcessingParameterDistance,
    QgsProcessingParameterNumber,
    QgsVectorLayer,
)

from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.processing.compat import DISTANCE_METERS, DISTANCE_UNKNOWN, enum_member
from geogpt_qgis.tools.processing.describe import find_algorithm, parameter_type_label
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.processing.renames import RENAMES, counterpart
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.runs import call_in_thread

PACKAGE = Path(__file__).resolve().parents[2] / "geogpt_qgis"
ALGORITHM_ID = re.compile(r"[\"']((?:native|qgis|gdal):\w+)[\"']")


def _registered(algorithm_id: str) -> bool:
    return QgsApplication.processingRegistry().algorithmById(algorithm_id) is not None


def _present(pair: tuple[str, str]) -> str:
    """The id this QGIS has for a renamed pair (3.40+ also answers the old id, as an alias of the new one)."""
    registry = QgsApplication.processingRegistry()
    return next(found.id() for found in map(registry.algorithmById, pair) if found is not None)


def test_describe_layer_reports_meters_for_the_demo_layers_and_degrees_for_wgs84(tool_ctx, demo_project):
    tools = ProjectTools(tool_ctx)
    assert "units: meters, projected" in tools.describe_layer("schools").text
    demo_project.addMapLayer(QgsVectorLayer("Point?crs=EPSG:4326", "gps_fixes", "memory"))
    assert "units: degrees, geographic" in tools.describe_layer("gps_fixes").text


def test_a_distance_parameter_shows_its_default_unit_only_when_it_has_one(processing_algorithms):
    algorithm = find_algorithm("native:buffer")
    plain = QgsProcessingParameterDistance("D", "Distance", 1, "INPUT")
    assert plain.defaultUnit() == DISTANCE_UNKNOWN
    assert parameter_type_label(plain, algorithm) == "distance in the units of INPUT's CRS"
    metric = QgsProcessingParameterDistance("D", "Distance", 1, "INPUT")
    metric.setDefaultUnit(DISTANCE_METERS)
    assert parameter_type_label(metric, algorithm) == "distance in the units of INPUT's CRS (default unit: meters)"


def test_integer_and_decimal_number_parameters_are_told_apart(processing_algorithms):
    algorithm = find_algorithm("native:buffer")
    # Qgis.ProcessingNumberParameterType (3.36+, the only one in QGIS 4) / QgsProcessingParameterNumber.Type (3.22).
    integer, double = (
        enum_member((Qgis, "ProcessingNumberParameterType", name), (QgsProcessingParameterNumber, "Type", name))
        for name in ("Integer", "Double")
    )
    whole = QgsProcessingParameterNumber("N", "N", integer, 1, False, 0)
    decimal = QgsProcessingParameterNumber("N", "N", double, 1.5)
    assert parameter_type_label(whole, algorithm) == "integer (>= 0)"
    assert parameter_type_label(decimal, algorithm) == "number"


def test_every_algorithm_id_the_package_names_runs_on_this_qgis(processing_algorithms):
    named = {
        algorithm_id
        for path in PACKAGE.rglob("*.py")
        for algorithm_id in ALGORITHM_ID.findall(path.read_text(encoding="utf-8"))
    }
    assert len(named) > 30
    missing = {
        algorithm_id
        for algorithm_id in named
        if not _registered(algorithm_id) and not _registered(counterpart(algorithm_id) or "")
    }
    assert not missing, f"ids named in geogpt_qgis that this QGIS does not have: {sorted(missing)}"


def test_the_rename_table_has_a_registered_side_for_each_pair(processing_algorithms):
    for old, new in RENAMES.items():
        assert _registered(old) or _registered(new), (old, new)
        assert counterpart(old) == new and counterpart(new) == old


@pytest.mark.parametrize("pair", sorted(RENAMES.items()))
def test_a_renamed_id_finds_the_algorithm_this_qgis_has(processing_algorithms, pair):
    present = _present(pair)
    for asked in pair:
        assert find_algorithm(asked).id() == present


def test_describing_and_running_a_renamed_id_tells_the_model_which_id_ran(processing_algorithms, tool_ctx):
    tools = ProcessingTools(tool_ctx)
    pair = ("qgis:voronoipolygons", "native:voronoipolygons")
    present = _present(pair)
    asked = counterpart(present)
    described = call_in_thread(tools.find_algorithm, asked).text
    assert described.startswith(f"Note: {asked} is called {present} in this QGIS")
    assert f"\n{present} — " in described
    result = call_in_thread(tools.run_algorithm, asked, {"INPUT": "schools"}, "school_areas").text
    assert result.startswith(f"{present} finished.\nNote: {asked} is called {present} in this QGIS"), result
    assert tool_ctx.project.mapLayersByName("school_areas")
    with pytest.raises(ToolError, match="no algorithm 'native:voronoipolygon'"):
        call_in_thread(tools.find_algorithm, "native:voronoipolygon")


@pytest.mark.parametrize("pair", sorted(RENAMES.items()))
def test_searching_for_either_id_of_a_renamed_algorithm_finds_the_one_this_qgis_has(processing_algorithms, pair):
    from geogpt_qgis.tools.processing.catalog import current_index

    present = _present(pair)
    for asked in pair:
        assert current_index().search(asked, 1)[0].entry.id == present
