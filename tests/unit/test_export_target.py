"""Where an exported map goes and on what page: export_map's path and page rules (Qt-free); files in artifacts."""

from __future__ import annotations

import pytest

from geogpt_qgis.core.artifacts import ToolArtifact, merged
from geogpt_qgis.tools.base import ToolError
from geogpt_qgis.tools.maps.export_target import check_dpi, check_pixels, parse_page, resolve_target

SIZES = {"A4": (210.0, 297.0), "A3": (297.0, 420.0), "Letter": (215.9, 279.4), "ANSI B": (279.4, 431.8)}


@pytest.mark.parametrize(
    ("page", "name", "size"),
    [
        ("A4 landscape", "A4 landscape", (297.0, 210.0)),
        ("a3 PORTRAIT", "A3 portrait", (297.0, 420.0)),
        ("  letter ", "Letter landscape", (279.4, 215.9)),
        ("A4 portrait", "A4 portrait", (210.0, 297.0)),
        ("portrait-A3", "A3 portrait", (297.0, 420.0)),
        ("a4_landscape", "A4 landscape", (297.0, 210.0)),
        ("ansi, b", "ANSI B landscape", (431.8, 279.4)),
    ],
)
def test_a_page_is_a_size_and_an_orientation_landscape_unless_said(page, name, size):
    chosen = parse_page(page, SIZES)
    assert (chosen.name, chosen.width_mm, chosen.height_mm) == (name, *size)
    assert not chosen.canvas


def test_canvas_is_the_plain_image_and_its_pixels_follow_the_dpi():
    assert parse_page(" Canvas ", SIZES).canvas
    assert parse_page("A4 portrait", SIZES).pixels(100) == (827, 1169)


@pytest.mark.parametrize("page", ["A9", "A4 sideways", "", "landscape"])
def test_an_unknown_page_lists_the_sizes_and_canvas(page):
    with pytest.raises(ToolError, match=r"unknown page .*sizes: A4, A3, Letter.*'canvas'"):
        parse_page(page, SIZES)


def test_a_relative_path_is_in_the_project_folder_and_the_format_comes_from_the_extension(tmp_path):
    target = resolve_target("Map.PDF", str(tmp_path))
    assert (target.path, target.format, target.exists) == (tmp_path.resolve() / "Map.PDF", "PDF", False)
    (tmp_path / "out.png").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    again = resolve_target(str(tmp_path / "sub" / ".." / "out.png"), "")
    assert (again.path, again.format, again.exists) == (tmp_path.resolve() / "out.png", "PNG", True)


def test_home_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_target("~/town.png", "").path == tmp_path.resolve() / "town.png"


@pytest.mark.parametrize(
    ("path", "home", "message"),
    [
        ("map.jpg", "HOME", r"'map.jpg': the file name must end in \.pdf or \.png"),
        ("map", "HOME", r"must end in \.pdf or \.png"),
        ("missing/map.pdf", "HOME", "the folder .*missing' does not exist"),
        ("map.pdf", "", "the project is not saved"),
        ("  ", "HOME", "give the file to write"),
        ("folder.pdf", "HOME", "is a folder"),
    ],
)
def test_bad_paths_say_what_to_give(tmp_path, path, home, message):
    (tmp_path / "folder.pdf").mkdir()
    with pytest.raises(ToolError, match=message):
        resolve_target(path, str(tmp_path) if home else "")


@pytest.mark.parametrize("dpi", [29, 601, True, 150.5, "150"])
def test_dpi_is_a_whole_number_in_range(dpi):
    with pytest.raises(ToolError, match="dpi must be a whole number from 30 to 600"):
        check_dpi(dpi)
    check_dpi(300)


def test_an_image_too_large_for_memory_is_refused():
    check_pixels("A4 landscape", 300, (3508, 2480))
    with pytest.raises(ToolError, match="A0 portrait at 600 dpi is 19,866 × 28,087 pixels, too large"):
        check_pixels("A0 portrait", 600, (19866, 28087))


def test_files_written_travel_in_the_artifact():
    made = ToolArtifact(layers=("rivers",), files=("/maps/town.pdf",))
    assert made.to_dict() == {"layers": [{"name": "rivers", "layer_id": ""}], "files": ["/maps/town.pdf"]}
    assert ToolArtifact.from_dict(made.to_dict()) == made
    assert ToolArtifact.from_dict({"files": [3, "/a.png"]}).files == ("/a.png",)
    assert merged([made, ToolArtifact(files=("/a.png", "/maps/town.pdf"))]).files == ("/maps/town.pdf", "/a.png")
    assert not made.empty and ToolArtifact(files=()).empty


def test_the_files_a_turn_wrote_are_listed_in_its_sources():
    from geogpt_qgis.core.sources import Sources, collect_sources

    sources = collect_sources(
        [ToolArtifact(layers=("rivers",), files=("/maps/town.pdf",)), ToolArtifact(files=("/maps/town.pdf",))]
    )
    assert sources.files == ["/maps/town.pdf"] and sources.layer_names == ["rivers"]
    assert ("Files", ["/maps/town.pdf"]) in sources.sections()
    assert "- Files: `/maps/town.pdf`" in sources.to_markdown()
    assert Sources.from_dict({"layers": ["rivers"]}).files == []  # stored before files were listed
