"""What in geometries changes figures (core.geometry_findings), checked against shapely's own measures."""

from __future__ import annotations

import shapely
from shapely.geometry import LineString, MultiPolygon, Polygon, box

from geogpt_qgis.core.geometry_findings import inspect, notes


def _wkbs(*geometries):
    return [shapely.to_wkb(g) for g in geometries]


def test_a_clean_layer_gets_no_words():
    found = inspect(
        _wkbs(
            box(0, 0, 10, 10),
            box(10, 0, 20, 10),
            Polygon(box(30, 0, 50, 20).exterior, [box(35, 5, 40, 10).exterior.coords]),
        )
    )
    assert found.invalid == 0 and found.overlapping_pairs == 0  # sharing an edge is not overlapping
    assert notes(found, "Polygon", "m") == []


def test_a_bowtie_is_counted_with_its_area_before_and_after_making_it_valid():
    bowtie = Polygon([(0, 0), (120, 60), (120, 0), (0, 90), (0, 0)])
    found = inspect(_wkbs(bowtie, box(200, 0, 210, 10)))
    assert found.invalid == 1 and found.reasons["Self-intersection"] == 1
    assert found.area_valid == shapely.make_valid(bowtie).area
    (line,) = notes(found, "Polygon", "m")
    assert "Invalid geometries: 1 (Self-intersection 1)" in line
    assert f"{shapely.make_valid(bowtie).area:,.6g} m²" in line and f"{found.area_stored:,.6g} m²" in line


def test_a_hole_stored_as_a_second_shell_is_named():
    outer, yard = box(0, 0, 100, 100), box(30, 30, 70, 70)
    found = inspect(_wkbs(MultiPolygon([outer, yard])))
    (line,) = notes(found)
    assert "Nested shells" in line and "read as two shells" in line
    assert found.area_stored == outer.area + yard.area and found.area_valid == outer.area - yard.area


def test_overlaps_are_measured_and_mixed_types_counted():
    found = inspect(_wkbs(box(0, 0, 100, 100), box(50, 0, 150, 100), LineString([(0, 0), (5, 5)])), total=10)
    assert found.overlapping_pairs == 1 and found.overlap_area == 5000
    text = "\n".join(notes(found, "Polygon", "m"))
    assert "1 pair share 5,000 m²" in text
    assert "Mixed geometry types: 1 LineString, 2 Polygon in a layer declared Polygon" in text
    assert "checked the first 3 of 10 features" in text


def test_z_gives_the_3d_length_beside_the_2d_one():
    found = inspect(_wkbs(LineString([(0, 0, 100), (400, 0, 400)])))
    assert (found.length_2d, found.length_3d) == (400, 500)
    (line,) = notes(found, "LineStringZ", "m")
    assert "25% longer (400 m 2D, 500 m 3D" in line
    flat = inspect(_wkbs(LineString([(0, 0, 5), (400, 0, 5)])))
    assert notes(flat) == []  # Z that changes no length is not worth a word
