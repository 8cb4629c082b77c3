"""Raster outputs survive saving (issue 18's promise, for issue 24's rasters): a slope of the demo DEM is copied
into ``<project>_results/`` beside the project (at once for a saved project, on the first save otherwise, again
on Save As and by the CLI's --save), the layer keeps its style, and a fresh process reads the same pixels after
the temporary output is gone; unused copies are dropped on save, a user's own file in the folder is not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal
from qgis.core import QgsProject, QgsRasterLayer, QgsSingleBandPseudoColorRenderer

from geogpt_qgis.core import result_rasters
from geogpt_qgis.tools.base import ToolContext
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.result_store import ResultStore, result_store, set_result_store
from geogpt_qgis.tools.safety.algorithms import is_temporary_destination
from tests.support.demo import DEM, copy_demo, ensure_demo
from tests.support.model_server import ToolCall, Turn
from tests.support.runs import ask, call_in_thread
from tests.support.saving import save

SLOPE = {"INPUT": "elevation", "OUTPUT": "TEMPORARY_OUTPUT"}

# Reads a saved project in a fresh QGIS and prints every raster layer's provider, file, validity and renderer.
REOPEN = """
import json, sys
from qgis.core import QgsApplication, QgsProject, QgsProviderRegistry, QgsRasterLayer
app = QgsApplication([], False)
app.initQgis()
project = QgsProject.instance()
assert project.read(sys.argv[1]), project.error()
out = {}
for layer in project.mapLayers().values():
    if isinstance(layer, QgsRasterLayer):
        renderer = layer.renderer()
        out[layer.name()] = {
            "provider": layer.providerType(),
            "valid": layer.isValid(),
            "path": QgsProviderRegistry.instance().decodeUri("gdal", layer.source()).get("path", ""),
            "renderer": renderer.type() if renderer is not None else "",
            "range": [renderer.classificationMin(), renderer.classificationMax()]
            if hasattr(renderer, "classificationMin") else [],
        }
print(json.dumps(out))
project.clear()
app.exitQgis()
"""


def reopen(project_file: Path) -> dict:
    """The raster layers of ``project_file`` as a fresh process sees them."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", REOPEN, str(project_file)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def pixels(path: str | Path) -> np.ndarray:
    dataset = gdal.Open(str(path))
    assert dataset is not None, path
    return dataset.GetRasterBand(1).ReadAsArray()


def slope_layer(project: QgsProject) -> QgsRasterLayer:
    found = [layer for layer in project.mapLayers().values() if layer.name().startswith("elevation_slope")]
    assert len(found) == 1, [layer.name() for layer in project.mapLayers().values()]
    return found[0]


def run_slope(ctx: ToolContext) -> QgsRasterLayer:
    text = call_in_thread(ProcessingTools(ctx).run_algorithm, "native:slope", SLOPE).text
    assert "native:slope finished." in text, text
    return slope_layer(ctx.project)


def _style(layer: QgsRasterLayer) -> tuple[str, float, float]:
    renderer = layer.renderer()
    assert isinstance(renderer, QgsSingleBandPseudoColorRenderer), renderer.type()
    return renderer.type(), renderer.classificationMin(), renderer.classificationMax()


def test_a_slope_of_a_saved_project_goes_beside_it_at_once(tool_ctx, demo_project):
    layer = run_slope(tool_ctx)
    folder = Path(demo_project.fileName()).with_name("elvbury_results")
    path = Path(layer.source())
    assert path.parent == folder and path.suffix == ".tif", path
    assert result_rasters.is_result(path) and layer.isValid()
    _style(layer)  # the runner's pseudocolour style is on the copy
    # Ctrl+S (no new file name): kept, nothing dropped.
    save(demo_project, result_store(demo_project))
    assert result_rasters.result_files_in(folder) == {path}


def test_first_save_and_save_as_move_the_slope_and_a_fresh_process_reads_its_pixels(qgis_app, bridge, tmp_path):
    ensure_demo()
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy2(DEM, data / DEM.name)
    project = QgsProject.instance()
    project.clear()
    project.addMapLayer(QgsRasterLayer(str(data / DEM.name), "elevation"))
    store = ResultStore(tmp_path / "scratch")
    set_result_store(project, store)
    try:
        layer = run_slope(ToolContext(project=project, bridge=bridge))
        temporary = Path(layer.source())
        assert is_temporary_destination(str(temporary)) and temporary.is_file()  # unsaved: left where it is
        expected = pixels(temporary)
        style = _style(layer)

        told = save(project, store, tmp_path / "town.qgz")
        folder = tmp_path / "town_results"
        moved = Path(layer.source())
        assert told == [folder] and moved.parent == folder and layer.isValid()
        assert _style(layer) == style  # setDataSource kept the renderer
        temporary.unlink()  # what QGIS does to its temporary folder when it closes

        seen = reopen(tmp_path / "town.qgz")[layer.name()]
        assert seen["provider"] == "gdal" and seen["valid"] and Path(seen["path"]) == moved
        assert seen["renderer"] == style[0] and seen["range"] == list(style[1:])
        assert np.array_equal(pixels(seen["path"]), expected, equal_nan=True)

        told = save(project, store, tmp_path / "copy" / "renamed.qgz")  # Save As
        again = Path(layer.source())
        assert again.parent == tmp_path / "copy" / "renamed_results" and told == [again.parent]
        assert moved.is_file()  # the old project keeps its copy
        seen = reopen(tmp_path / "copy" / "renamed.qgz")[layer.name()]
        assert seen["valid"] and Path(seen["path"]) == again and seen["renderer"] == style[0]
        assert np.array_equal(pixels(again), expected, equal_nan=True)
    finally:
        project.clear()
        set_result_store(project, None)


def test_saving_drops_removed_raster_results_and_nothing_else(tool_ctx, demo_project):
    layer = run_slope(tool_ctx)
    path = Path(layer.source())
    mine = path.with_name("my_own.tif")
    gdal.Translate(str(mine), str(DEM))  # a user's raster in the folder: never ours to drop
    demo_project.removeMapLayer(layer.id())
    save(demo_project, result_store(demo_project))
    assert not path.exists() and mine.is_file()
    assert result_rasters.result_files_in(path.parent) == set()


def test_cli_save_keeps_the_slope_and_a_fresh_process_reads_it(model_server, tmp_path):
    project_file = copy_demo(tmp_path / "demo")
    model_server.script(
        [
            Turn(tool_calls=[ToolCall("run_algorithm", {"algorithm": "native:slope", "parameters": SLOPE})]),
            Turn(text="Computed the slope."),
        ]
    )
    out = tmp_path / "out" / "p.qgz"
    out.parent.mkdir()
    done = ask(
        "Slope of the terrain",
        "--project",
        str(project_file),
        "--base-url",
        model_server.url,
        "--model",
        "qwen3:8b",
        "--save",
        str(out),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    folder = out.with_name("p_results")
    assert f"Result layers saved in {folder}" in done.stderr
    assert not project_file.with_name("elvbury_results").exists()  # the asked project is left alone
    seen = reopen(out)
    slopes = [value for name, value in seen.items() if name.startswith("elevation_slope")]
    assert len(slopes) == 1 and slopes[0]["valid"] and Path(slopes[0]["path"]).parent == folder
    assert slopes[0]["renderer"] == "singlebandpseudocolor"
    # The same slope computed here, independently of the stored file.
    from qgis import processing

    dem = str(project_file.with_name(DEM.name))
    expected = processing.run("native:slope", {"INPUT": dem, "OUTPUT": "TEMPORARY_OUTPUT"})
    assert np.array_equal(pixels(slopes[0]["path"]), pixels(expected["OUTPUT"]), equal_nan=True)
