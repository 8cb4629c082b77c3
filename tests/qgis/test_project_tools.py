"""The project tools on the real demo project in real QGIS.

Expected values are read straight from the GeoPackage with sqlite3, not
through QGIS, so a tool that misreports would be caught.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path

import pytest
from qgis.core import QgsRasterLayer, QgsVectorLayer

from geogpt_qgis.core.approval import APPROVE, Decision, current_decision
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.project.family import ProjectTools, project_brief
from geogpt_qgis.tools.registry import build_families
from tests.support.big_layers import BIG_COUNT, SLOW_EXPRESSION_MATCHING_ALL, write_big_points
from tests.support.runs import PROJECT_TOOL_NAMES, stop_midway, wait_until

LAYERS_TOP_DOWN = ["schools", "hospitals", "roads", "rivers", "parks", "districts", "landuse"]
RASTERS_BELOW = ["elevation", "landcover"]  # the demo's GeoTIFFs, under the vectors and unticked


@pytest.fixture
def gpkg(demo_project) -> sqlite3.Connection:
    path = Path(demo_project.fileName()).with_name("elvbury.gpkg")
    connection = sqlite3.connect(path)
    yield connection
    connection.close()


@pytest.fixture
def tools(tool_ctx) -> ProjectTools:
    return ProjectTools(tool_ctx)


@pytest.fixture(scope="session")
def big_gpkg(tmp_path_factory) -> Path:
    return write_big_points(tmp_path_factory.mktemp("big") / "big.gpkg")


@pytest.fixture
def big_layer(demo_project, big_gpkg) -> QgsVectorLayer:
    layer = QgsVectorLayer(f"{big_gpkg}|layername=big", "big", "ogr")
    assert layer.isValid()
    demo_project.addMapLayer(layer)
    return layer


def _count(db: sqlite3.Connection, sql: str) -> int:
    return db.execute(sql).fetchone()[0]


def test_describe_layer_without_a_layer_lists_every_layer_in_tree_order(tools, gpkg, demo_project):
    text = tools.describe_layer().text
    assert tools.describe_layer("  ").text == text  # what list_layers gave (it was merged into describe_layer)
    with pytest.raises(ToolError, match="name the raster layer"):
        tools.describe_layer("", at="571000 6641000")
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| name")]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == LAYERS_TOP_DOWN + RASTERS_BELOW
    for row in rows[len(LAYERS_TOP_DOWN) :]:
        assert [c.strip() for c in row.strip("|").split("|")][2:] == ["raster", "-", "EPSG:25832", "-", "no"]
    for row, name in zip(rows, LAYERS_TOP_DOWN, strict=False):
        cells = [c.strip() for c in row.strip("|").split("|")]
        layer = demo_project.mapLayersByName(name)[0]
        assert cells[1] == layer.id()
        assert cells[4] == "EPSG:25832"
        assert cells[5] == f"{_count(gpkg, f'SELECT count(*) FROM {name}'):,}"
        assert cells[6] == "yes"
    assert "| schools |" in text and "| Point |" in text and "| Polygon |" in text
    assert text.startswith("9 layers (project CRS EPSG:25832)")


def test_describe_layer_gives_fields_shares_crs_and_extent(tools, gpkg):
    text = tools.describe_layer("schools").text
    total = _count(gpkg, "SELECT count(*) FROM schools")
    assert f"Point, {total} features" in text
    assert "CRS: EPSG:25832 (ETRS89 / UTM zone 32N), units: meters, projected" in text
    minx, miny, maxx, maxy = gpkg.execute(
        "SELECT min(minx), min(miny), max(maxx), max(maxy) FROM rtree_schools_geom"
    ).fetchone()
    extent = re.search(r"Extent: ([\d.]+), ([\d.]+) : ([\d.]+), ([\d.]+)", text)
    assert extent is not None
    assert [float(v) for v in extent.groups()] == pytest.approx(
        [minx, miny, maxx, maxy], abs=1.0
    )  # the R-tree stores float32 bounds
    shares = gpkg.execute("SELECT type, count(*) FROM schools GROUP BY type ORDER BY count(*) DESC").fetchall()
    expected = ", ".join(f"{kind} {n / total:.1%}" for kind, n in shares)
    assert f"- type (String): {expected}" in text
    low, high = gpkg.execute("SELECT min(pupils), max(pupils) FROM schools").fetchone()
    assert f"- pupils (Integer): min {low:,}, max {high:,}" in text
    assert "- fid (Integer64, primary key)" in text
    assert f"values from all {total} features" in text


def test_describe_layer_samples_big_layers(tools, big_layer):
    text = tools.describe_layer("big").text
    assert f"values from the first 5,000 of {BIG_COUNT:,} features" in text
    assert "- kind (String): " in text


def test_describe_raster_layer(tools, demo_project, tmp_path):
    from osgeo import gdal, osr

    path = tmp_path / "dem.tif"
    dataset = gdal.GetDriverByName("GTiff").Create(str(path), 40, 30, 1, gdal.GDT_Float32)
    dataset.SetGeoTransform((560000, 25, 0, 6206000, 0, -25))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(25832)
    dataset.SetProjection(srs.ExportToWkt())
    dataset.GetRasterBand(1).SetNoDataValue(-9999)
    dataset = None
    raster = QgsRasterLayer(str(path), "dem")
    demo_project.addMapLayer(raster)
    text = tools.describe_layer("dem").text
    assert ": raster, visible" in text and "Size: 40 x 30 pixels, 1 band; pixel 25 x 25 m" in text
    assert "Band 1 (Float32, nodata -9999): every pixel is nodata" in text  # GDAL fills a new GeoTIFF with 0
    with pytest.raises(ToolError, match="'dem' is a raster layer; this needs a vector layer"):
        tools.select_features("dem", "1")


def test_unknown_and_ambiguous_layers_say_what_exists(tools, demo_project):
    with pytest.raises(ToolError, match=r"no layer 'schols'; did you mean 'schools'\?"):
        tools.describe_layer("schols")
    demo_project.addMapLayer(QgsVectorLayer("Point?crs=EPSG:25832", "schools", "memory"))
    with pytest.raises(ToolError, match="several layers are named 'schools'"):
        tools.describe_layer("schools")
    school_id = demo_project.mapLayersByName("schools")[0].id()
    assert f"(id {school_id})" in tools.describe_layer(school_id).text
    assert "Layer 'rivers'" in tools.describe_layer("RIVERS").text


def test_select_features_selects_exactly_the_matching_features(tools, gpkg, demo_project):
    result = tools.select_features("schools", '"type" = \'primary\' AND "pupils" > 300').text
    expected = {row[0] for row in gpkg.execute("SELECT fid FROM schools WHERE type = 'primary' AND pupils > 300")}
    layer = demo_project.mapLayersByName("schools")[0]
    assert set(layer.selectedFeatureIds()) == expected
    assert result.startswith(f"Selected {len(expected)} of 31 features in 'schools'")
    # A geometry expression works too (needs the geometry, so no NoGeometry flag).
    tools.select_features("schools", "$x > 564000")
    assert len(layer.selectedFeatureIds()) == _count(
        gpkg, "SELECT count(*) FROM rtree_schools_geom WHERE minx > 564000"
    )
    assert tools.select_features("schools", "  ").text == "Cleared the selection of 'schools'."
    assert layer.selectedFeatureCount() == 0


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # Version branch: QGIS's parser says "syntax error" up to 3.40 and "Incomplete expression" from 3.44.
        ('"type" = ', ("invalid expression: syntax error", "invalid expression: Incomplete expression")),
        ("\"typ\" = 'primary'", ("no field in 'schools' 'typ'; did you mean 'type'?",)),
        ("\"pupils\" + 'many' > 3", ("the expression fails on 'schools': Cannot convert 'many' to double",)),
    ],
)
def test_bad_expressions_come_back_with_the_reason_and_change_nothing(tools, demo_project, expression, message):
    layer = demo_project.mapLayersByName("schools")[0]
    layer.selectByIds([1, 2])
    with pytest.raises(ToolError) as info:
        tools.select_features("schools", expression)
    assert any(text in str(info.value) for text in message), info.value
    assert sorted(layer.selectedFeatureIds()) == [1, 2]


def test_zoom_to_layer_and_to_selection(tools, demo_project, qgis_iface):
    canvas = qgis_iface.mapCanvas()
    canvas.setDestinationCrs(demo_project.crs())
    schools = demo_project.mapLayersByName("schools")[0]
    assert tools.set_layer("districts", zoom=True).text == "Zoomed the map to layer 'districts'."
    assert canvas.extent().contains(demo_project.mapLayersByName("districts")[0].extent())
    schools.selectByIds([3])
    assert "the 1 selected features of 'schools'" in tools.set_layer("schools", zoom=True).text
    point = schools.getFeature(3).geometry().asPoint()
    assert canvas.extent().contains(point)
    assert canvas.extent().width() < 2000


def test_zoom_without_a_map_window_sets_the_project_view(demo_project, bridge):
    headless = ProjectTools(ToolContext(project=demo_project, bridge=bridge, iface=None))
    message = headless.set_layer("parks", zoom=True).text
    assert "no map window in headless mode" in message
    view = demo_project.viewSettings().defaultViewExtent()
    assert view.contains(demo_project.mapLayersByName("parks")[0].extent())


def test_visibility_and_rename(tools, demo_project):
    root = demo_project.layerTreeRoot()
    parks = demo_project.mapLayersByName("parks")[0]
    assert tools.set_layer("parks", visible=False).text == "Hid layer 'parks'."
    assert not root.findLayer(parks.id()).isVisible()
    tools.set_layer("parks", visible=True)
    assert root.findLayer(parks.id()).isVisible()
    assert tools.set_layer("parks", name="green spaces").text == "Renamed 'parks' to 'green spaces'."
    assert parks.name() == "green spaces"
    assert "also named 'roads'" in tools.set_layer("green spaces", name="roads").text
    tools.set_layer(parks.id(), name="parks")
    with pytest.raises(ToolError, match="the new name is empty"):
        tools.set_layer("parks", name="  ")
    with pytest.raises(ToolError, match=r"nothing to change: .*\(style_layer styles a layer\)"):
        tools.set_layer("parks")
    with pytest.raises(ToolError, match="the new name is empty"):
        tools.set_layer("parks", visible=False, name=" ")
    assert root.findLayer(parks.id()).isVisible() and parks.name() == "parks"  # a refused call changes nothing
    both = tools.set_layer("parks", visible=False, name="green").text  # several changes in one call
    assert both == "Renamed 'parks' to 'green'. Hid layer 'green'."


def test_set_layer_removes_a_layer_only_when_approved(tools, demo_project):
    """remove=true (it was remove_layer) asks; the other changes never do, and removing goes alone."""
    parks = demo_project.mapLayersByName("parks")[0]
    assert tools.preview_set_layer("parks", visible=False) is None
    request = tools.preview_set_layer("parks", remove=True)
    assert request is not None and request.action == "Remove layer 'parks' from the project"
    assert "(Polygon, " in request.details and "Its data source is not deleted." in request.details
    assert [(t.kind, t.ident, t.ops) for t in request.targets] == [("layer", parks.id(), ("remove",))]
    assert request.notes == []  # the target says it all: never the layer again in words
    before = len(demo_project.mapLayers())
    with pytest.raises(ToolError, match="needs their approval"):
        tools.set_layer("parks", remove=True)
    with pytest.raises(ToolError, match="give it alone"):
        tools.preview_set_layer("parks", remove=True, name="green")
    with pytest.raises(ToolError, match="no layer 'prks'; did you mean 'parks'"):
        tools.set_layer("prks", remove=True)
    assert len(demo_project.mapLayers()) == before and parks.name() == "parks"
    token = current_decision.set(Decision(APPROVE))
    try:
        with pytest.raises(ToolError, match="give it alone"):
            tools.set_layer("parks", remove=True, visible=False)
        assert len(demo_project.mapLayers()) == before
        done = tools.set_layer("parks", remove=True)
    finally:
        current_decision.reset(token)
    assert str(done.text) == "Removed layer 'parks' from the project."
    assert done.artifact.layer_names == ("parks",)
    assert not demo_project.mapLayersByName("parks") and len(demo_project.mapLayers()) == before - 1


def test_tools_called_from_a_worker_thread_go_through_the_main_thread(tools, demo_project):
    results: dict[str, object] = {}

    def work() -> None:
        results["thread"] = threading.current_thread().name
        results["list"] = tools.describe_layer()
        results["rename"] = tools.set_layer("roads", name="streets")

    thread = threading.Thread(target=work, name="agent-worker")
    thread.start()
    wait_until(lambda: not thread.is_alive(), 10)
    assert results["thread"] == "agent-worker"
    assert "| roads |" in results["list"].text
    assert demo_project.mapLayersByName("streets")


def test_stop_interrupts_a_long_selection_and_selects_nothing(tools, big_layer):
    ended, seconds = stop_midway(tools.select_features, "big", SLOW_EXPRESSION_MATCHING_ALL)
    assert ended == "cancelled"
    assert seconds < 1.0
    assert big_layer.selectedFeatureCount() == 0


def test_project_brief_and_capabilities_come_from_the_live_project(tool_ctx, demo_project):
    brief = project_brief(demo_project)
    assert brief.startswith(
        "Open project: 'Elvbury demo town'; CRS EPSG:25832; 9 layers: 'schools' (Point, 31 features)"
    )
    capabilities = build_families(tool_ctx)[-1].describe_capabilities().text
    for name in PROJECT_TOOL_NAMES:
        assert f"- {name}: " in capabilities


def test_read_features_returns_a_small_table(tools, gpkg):
    text = tools.read_features("schools", ["name", "pupils"], "\"type\" = 'special'").text
    expected = gpkg.execute("SELECT name, pupils FROM schools WHERE type = 'special' ORDER BY fid").fetchall()
    assert text.startswith(f"All {len(expected)} features of 'schools' where \"type\" = 'special':")
    assert "| name | pupils |" in text
    for name, pupils in expected:
        assert f"| {name} | {pupils} |" in text
    limited = tools.read_features("roads", limit=3).text
    assert limited.startswith("First 3 features of 'roads' (more exist; filter or raise limit):")
    assert len([line for line in limited.splitlines() if line.startswith("| ")]) == 4  # header + 3 rows
    everything = tools.read_features("hospitals", ["name", "beds"]).text
    assert everything.startswith("All 4 of 4 features of 'hospitals':")
    with pytest.raises(ToolError, match="no field in 'schools' 'pupil'; did you mean 'pupils'"):
        tools.read_features("schools", ["pupil"])
    assert (
        tools.read_features("schools", ["name"], "pupils > 100000").text
        == "No features in 'schools' where pupils > 100000."
    )
    east = tools.read_features("schools", ["name"], '$x > 566000 AND "pupils" > 0').text  # a filter that needs geometry
    assert east.startswith("All ") and "| name |" in east
