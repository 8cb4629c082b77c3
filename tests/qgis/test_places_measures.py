"""find_places' figures and hints in any project CRS, checked against shapely and pyproj on the demo GeoPackage.

The demo's layers are in EPSG:25832; a project in EPSG:4326 or EPSG:3857 puts the place layer in another
CRS than the layers it is used with.  The hinted distance filter must still select what shapely finds
within 2000 m, the area must be the ellipsoid's (not Web Mercator's), and roads that only touch a
district's edge must not count as inside it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyproj
import pytest
from shapely.geometry.base import BaseGeometry
from shapely.ops import transform

from geogpt_qgis.tools.insights import InsightTools
from geogpt_qgis.tools.project import ProjectTools
from tests.support.gpkg import read_layer
from tests.support.runs import call_in_thread

GEOD = pyproj.Geod(ellps="GRS80")  # EPSG:25832's ellipsoid
TO_LONLAT = pyproj.Transformer.from_crs(25832, 4326, always_xy=True)


def gpkg_of(project) -> Path:
    return Path(project.fileName()).with_name("elvbury.gpkg")


def named(project, table: str, name: str) -> list[BaseGeometry]:
    return [g for _, a, g in read_layer(gpkg_of(project), table) if a["name"] == name]


def find(tool_ctx, project, crs: str, name: str) -> str:
    from qgis.core import QgsCoordinateReferenceSystem

    project.setCrs(QgsCoordinateReferenceSystem(crs))
    text = str(call_in_thread(InsightTools(tool_ctx).find_places, [name]))
    assert text.startswith("Found 1 of 1 place:"), text
    return text


def add_copy_in_4326(project, name: str, kind: str) -> None:
    """A demo layer copied into ``<name>_lonlat``, in a geographic CRS (main thread)."""
    from qgis.core import QgsCoordinateReferenceSystem, QgsCoordinateTransform, QgsFeature, QgsVectorLayer

    source = project.mapLayersByName(name)[0]
    copy = QgsVectorLayer(f"{kind}?crs=EPSG:4326", f"{name}_lonlat", "memory")
    to_lonlat = QgsCoordinateTransform(source.crs(), QgsCoordinateReferenceSystem("EPSG:4326"), project)
    features = []
    for feature in source.getFeatures():
        geometry = feature.geometry()
        geometry.transform(to_lonlat)
        copied = QgsFeature(copy.fields())
        copied.setGeometry(geometry)
        features.append(copied)
    copy.dataProvider().addFeatures(features)
    project.addMapLayer(copy)


@pytest.mark.parametrize("crs", ["EPSG:25832", "EPSG:4326", "EPSG:3857"])
def test_the_hinted_distance_filter_selects_what_shapely_finds_within_2000_m(tool_ctx, demo_project, crs):
    (westend,) = named(demo_project, "districts", "Westend")
    distances = [g.distance(westend) for _, _, g in read_layer(gpkg_of(demo_project), "schools")]
    assert not any(1990 < d < 2010 for d in distances)  # no school so near the limit that datums could flip it
    near = sum(d <= 2000 for d in distances)
    assert 0 < near < len(distances)
    add_copy_in_4326(demo_project, "schools", "Point")
    text = find(tool_ctx, demo_project, crs, "Westend")
    hint = re.search(r"(distance\(.*?<= 2000)", text)
    assert hint, text
    expression = hint.group(1)
    tools = ProjectTools(tool_ctx)
    for layer in ("schools", "schools_lonlat"):  # a projected and a geographic layer filtered
        selected = str(call_in_thread(tools.select_features, layer, expression))
        assert selected.startswith(f"Selected {near} of {len(distances)} features"), (crs, layer, selected)


@pytest.mark.parametrize("crs", ["EPSG:25832", "EPSG:4326", "EPSG:3857"])
def test_areas_and_lengths_are_measured_on_the_ellipsoid_in_any_crs(tool_ctx, demo_project, crs):
    (westend,) = named(demo_project, "districts", "Westend")
    area = abs(GEOD.geometry_area_perimeter(transform(TO_LONLAT.transform, westend))[0]) / 1e6
    text = find(tool_ctx, demo_project, crs, "Westend")
    reported = re.search(r"polygon, ([\d.]+) km²", text)
    assert reported, text
    assert float(reported.group(1)) == pytest.approx(area, abs=0.006), (crs, area, text)
    roads = named(demo_project, "roads", "Harbour Avenue")
    length = sum(GEOD.geometry_length(transform(TO_LONLAT.transform, g)) for g in roads) / 1000
    text = find(tool_ctx, demo_project, crs, "Harbour Avenue")
    reported = re.search(rf"{len(roads)} lines, ([\d.]+) km long", text)
    assert reported, text
    assert float(reported.group(1)) == pytest.approx(length, abs=0.006), (crs, length, text)


@pytest.mark.parametrize("crs", ["EPSG:25832", "EPSG:3857", "EPSG:4326"])
def test_roads_touching_a_districts_edge_are_not_counted_inside_it(tool_ctx, demo_project, crs):
    (westend,) = named(demo_project, "districts", "Westend")
    roads = [g for _, _, g in read_layer(gpkg_of(demo_project), "roads")]
    inside = sum(g.intersects(westend) and not g.touches(westend) for g in roads)
    touching = sum(g.touches(westend) for g in roads)
    assert inside and touching  # the demo has both, so the count can tell them apart
    add_copy_in_4326(demo_project, "roads", "LineString")  # a layer in neither the place's CRS nor the project's
    text = find(tool_ctx, demo_project, crs, "Westend")
    for layer in ("roads", "roads_lonlat"):
        assert re.search(rf"\b{layer} {inside}\b", text), (crs, layer, inside, text)
