"""find_places in real QGIS: the demo town's names with typos and missing accents, several per call,
ambiguity, misses, PostGIS tables (with and without pg_trgm), and place layers used as areas of interest."""

from __future__ import annotations

from pathlib import Path

import pytest
from shapely.geometry import Point

from geogpt_qgis.core.artifacts import Selection
from geogpt_qgis.tools.insights.family import InsightTools
from geogpt_qgis.tools.insights.places import postgis_tables
from geogpt_qgis.tools.insights.places.project_layers import PLACE_PROPERTY
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.family import ProjectTools
from tests.support.gpkg import read_layer
from tests.support.postgis import saved_connection
from tests.support.runs import call_in_thread


@pytest.fixture
def places(tool_ctx) -> InsightTools:
    return InsightTools(tool_ctx)


def gpkg_of(project) -> Path:
    return Path(project.fileName()).with_name("elvbury.gpkg")


def place_layer(project, name: str):
    found = project.mapLayersByName(name)
    assert len(found) == 1, [layer.name() for layer in project.mapLayers().values()]
    return found[0]


def test_typos_and_missing_accents_find_the_demo_places(places, demo_project):
    text = call_in_thread(places.find_places, ["Nordby schol", "Ostervang Akademy", "Molleby"])
    assert text.text.startswith("Found 3 of 3 places:"), text.text
    assert "'Nordby School' (layer schools, type primary;" in text.text
    assert "in districts 'Nordby'" in text.text
    assert "'Østervang Academy' (layer schools" in text.text and "in districts 'Østervang'" in text.text
    assert "'Mølleby' (layer districts; polygon" in text.text
    # Where each place was found, and the layers made: the artifact, for the Sources list.
    assert text.artifact.layer_names == ("schools", "districts")
    assert text.artifact.added_names == ["place_nordby_school", "place_ostervang_academy", "place_molleby"]
    # Each place is a layer holding exactly its features, at the same spot as in the GeoPackage.
    schools = {attrs["name"]: geometry for _, attrs, geometry in read_layer(gpkg_of(demo_project), "schools")}
    layer = place_layer(demo_project, "place_nordby_school")
    assert layer.customProperty(PLACE_PROPERTY) and layer.featureCount() == 1
    feature = next(layer.getFeatures())
    assert feature["name"] == "Nordby School" and feature["source"] == "layer schools"
    point = feature.geometry().asPoint()
    assert Point(point.x(), point.y()).distance(schools["Nordby School"]) < 0.01
    district = place_layer(demo_project, "place_molleby")
    assert district.geometryType() == 2 and district.featureCount() == 1  # a polygon
    assert "place_ostervang_academy" in [lyr.name() for lyr in demo_project.mapLayers().values()]


def test_several_places_in_one_call_become_layers_with_their_features(places, demo_project):
    text = call_in_thread(places.find_places, ["the Centre district", "Harbour Avenue", "Elva"]).text
    assert text.startswith("Found 3 of 3 places:")
    roads = [attrs for _, attrs, _ in read_layer(gpkg_of(demo_project), "roads") if attrs["name"] == "Harbour Avenue"]
    assert place_layer(demo_project, "place_harbour_avenue").featureCount() == len(roads) > 1
    assert place_layer(demo_project, "place_elva").featureCount() == 1
    # Inside a polygon place: what other layers hold there, for sub-areas ("schools in Centre").
    centre = next(g for _, a, g in read_layer(gpkg_of(demo_project), "districts") if a["name"] == "Centre")
    inside = sum(centre.contains(g) for _, _, g in read_layer(gpkg_of(demo_project), "schools"))
    assert f"inside: schools {inside}" in text
    assert "select_features expression overlay_intersects('place_centre')" in text  # how to use it, once
    assert "ST_GeomFromText('Polygon ((" in text  # the district's shape, ready for run_sql


def test_an_ambiguous_name_returns_candidates_and_adds_nothing(places, demo_project):
    before = len(demo_project.mapLayers())
    text = call_in_thread(places.find_places, ["Søndre Park"]).text
    assert text.startswith("Found 0 of 1 place:")
    assert "is ambiguous, nothing added" in text
    assert "(layer districts; polygon" in text and "(layer parks; polygon" in text
    assert "e.g. parks:Søndre Park" in text or "e.g. districts:Søndre Park" in text
    assert len(demo_project.mapLayers()) == before
    # The model disambiguates with layer:name.
    text = call_in_thread(places.find_places, ["parks:Sondre Park"]).text
    assert "'Søndre Park' (layer parks" in text
    assert place_layer(demo_project, "place_sondre_park").featureCount() == 1


def test_no_match_names_the_closest_and_other_places_still_work(places, demo_project):
    text = call_in_thread(places.find_places, ["Zanzibar", "Riverside"]).text
    assert text.startswith("Found 1 of 2 places:")
    assert "'Zanzibar': no match. Closest names: '" in text
    assert place_layer(demo_project, "place_riverside")


def test_asking_again_replaces_the_place_layer(places, demo_project):
    call_in_thread(places.find_places, ["Nordby school"])
    call_in_thread(places.find_places, ["Nordby school"])
    assert len(demo_project.mapLayersByName("place_nordby_school")) == 1
    assert not demo_project.mapLayersByName("place_nordby_school_2")


def test_accented_names_in_a_synthetic_layer(places, demo_project):
    from qgis.core import QgsFeature, QgsGeometry, QgsPointXY, QgsVectorLayer

    layer = QgsVectorLayer("Point?crs=EPSG:25832&field=navn:string&field=kind:string", "stations", "memory")
    features = []
    for index, name in enumerate(["Bjørnøya", "Kurtköy", "Café Müller", "Ærøskøbing"]):
        feature = QgsFeature(layer.fields())
        feature.setAttributes([name, "halt"])
        feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(563000 + 100 * index, 6203000)))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    demo_project.addMapLayer(layer)
    text = call_in_thread(places.find_places, ["Bjornoya", "kurtkoy", "cafe muler", "Aeroskobing station"]).text
    assert text.startswith("Found 4 of 4 places:"), text
    for name in ("Bjørnøya", "Kurtköy", "Café Müller", "Ærøskøbing"):
        assert f"'{name}' (layer stations, type halt" in text


def test_place_layers_work_as_areas_for_select_clip_and_distance(tool_ctx, places, demo_project):
    gpkg = gpkg_of(demo_project)
    call_in_thread(places.find_places, ["Centre", "Nordby School"])
    project_tools = ProjectTools(tool_ctx)
    centre = next(g for _, a, g in read_layer(gpkg, "districts") if a["name"] == "Centre")
    schools = read_layer(gpkg, "schools")
    in_centre = sum(centre.intersects(g) for _, _, g in schools)
    selected = call_in_thread(project_tools.select_features, "schools", "overlay_intersects('place_centre')")
    assert selected.text.startswith(f"Selected {in_centre} of 31 features")
    assert selected.artifact.selected == (Selection("schools", in_centre),)
    nordby = next(g for _, a, g in schools if a["name"] == "Nordby School")
    near = sum(nordby.distance(g) <= 2000 for _, _, g in schools)
    selected = call_in_thread(
        project_tools.select_features,
        "schools",
        "distance($geometry, aggregate('place_nordby_school','collect',$geometry)) <= 2000",
    )
    assert selected.text.startswith(f"Selected {near} of 31 features")
    # Clip and "within 2 km of" through processing, with the place layer as input.
    processing = ProcessingTools(tool_ctx)
    call_in_thread(
        processing.run_algorithm,
        "native:clip",
        {"INPUT": "schools", "OVERLAY": "place_centre"},
        "schools_in_centre",
    )
    assert demo_project.mapLayersByName("schools_in_centre")[0].featureCount() == in_centre
    call_in_thread(
        processing.run_algorithm, "native:buffer", {"INPUT": "place_nordby_school", "DISTANCE": 2000}, "nordby_2km"
    )
    call_in_thread(
        processing.run_algorithm,
        "native:extractbylocation",
        {"INPUT": "schools", "PREDICATE": [0], "INTERSECT": "nordby_2km"},
        "schools_near_nordby",
    )
    assert demo_project.mapLayersByName("schools_near_nordby")[0].featureCount() == near


def test_postgis_tables_are_searched_with_trigrams_and_without(places, demo_project, monkeypatch):
    with saved_connection("places_pg"):
        # With the project's schools present, the database twin is merged, not a rival.
        text = call_in_thread(places.find_places, ["Nordby schol"]).text
        assert "'Nordby School' (layer schools" in text and "also in 'Nordby School' (table public.schools" in text
        assert "ambiguous" not in text
        demo_project.removeMapLayer(demo_project.mapLayersByName("schools")[0].id())
        text = call_in_thread(places.find_places, ["Nordby schol", "schools:Ostervang Academy"]).text
        assert text.startswith("Found 2 of 2 places:"), text
        assert "'Nordby School' (table public.schools in places_pg, type primary" in text
        assert """(SELECT ST_Union("geom") FROM "public"."schools" WHERE "name" = 'Nordby School')""" in text
        layer = place_layer(demo_project, "place_nordby_school")
        schools = {a["name"]: g for _, a, g in read_layer(gpkg_of(demo_project), "schools")}
        point = next(layer.getFeatures()).geometry().asPoint()
        assert Point(point.x(), point.y()).distance(schools["Nordby School"]) < 0.01
        # Without pg_trgm (and unaccent) the names are matched in Python: same answer, and it says so.
        monkeypatch.setattr(postgis_tables, "extensions", lambda db: set())
        fresh = InsightTools(places.ctx)
        text = call_in_thread(fresh.find_places, ["Nordby schol", "Ostervang Academy"]).text
        assert "'Nordby School' (table public.schools" in text and "'Østervang Academy' (table public.schools" in text
        assert "has no pg_trgm extension" in text


def test_the_database_does_the_trigram_matching(demo_project, tool_ctx):
    from geogpt_qgis.core.cancel import CancelToken
    from geogpt_qgis.tools.postgis.connections import resolve_connection
    from geogpt_qgis.tools.postgis.database import Database

    with saved_connection("places_pg2"):
        saved = resolve_connection("places_pg2", ["places_pg2"])
        with Database(saved, CancelToken(), 10) as db:
            assert {"pg_trgm", "unaccent"} <= postgis_tables.extensions(db)
            tables = {t.qualified: t for t in postgis_tables.name_tables(db)}
            assert {"public.schools", "public.districts", "public.parks"} <= set(tables)
            assert tables["public.schools"].type_column == "type"
            rows, capped = postgis_tables.matching_names(
                db, tables["public.districts"], ["ostervang"], {"pg_trgm", "unaccent"}
            )
            assert not capped and rows[0][0] == "Østervang"


def test_sub_areas_the_districts_of_a_region(places, tool_ctx, demo_project):
    """The districts of a region: the region's place layer says what lies inside, and selects them."""
    from qgis.core import QgsFeature, QgsGeometry, QgsVectorLayer
    from shapely.ops import unary_union

    districts = {a["name"]: g for _, a, g in read_layer(gpkg_of(demo_project), "districts")}
    region = unary_union([districts["Nordby"], districts["Østervang"]])
    layer = QgsVectorLayer("Polygon?crs=EPSG:25832&field=name:string", "regions", "memory")
    feature = QgsFeature(layer.fields())
    feature.setAttributes(["North Elvbury"])
    feature.setGeometry(QgsGeometry.fromWkt(region.wkt))
    layer.dataProvider().addFeatures([feature])
    demo_project.addMapLayer(layer)
    text = call_in_thread(places.find_places, ["North Elvbury"]).text
    assert "'North Elvbury' (layer regions; polygon" in text and "districts 2" in text
    selected = call_in_thread(
        ProjectTools(tool_ctx).select_features, "districts", "overlay_within('place_north_elvbury')"
    ).text
    assert selected.startswith("Selected 2 of 9 features")
    assert {f["name"] for f in demo_project.mapLayersByName("districts")[0].selectedFeatures()} == {
        "Nordby",
        "Østervang",
    }
