"""export_map in real QGIS on the demo town: the PDF's pages, the PNG's pixels, the layout kept, the gate, the errors.

Most calls run headless (no ``iface``: the CLI and the MCP server), where the
map is the project's saved view or its visible layers' full extent; one runs
with the test iface's real map canvas.  Files are read back with pypdf and
QImage, never through the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader
from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsLayoutItemLabel,
    QgsLayoutItemLegend,
    QgsLayoutItemMap,
    QgsLayoutItemPicture,
    QgsLayoutItemScaleBar,
    QgsPrintLayout,
    QgsRectangle,
    QgsReferencedRectangle,
    QgsUnitTypes,
)
from qgis.PyQt.QtGui import QImage

from geogpt_qgis.core.approval import APPROVE, Decision, approval_preview, current_decision
from geogpt_qgis.tools.base import ToolContext, ToolError
from geogpt_qgis.tools.maps.export import NEEDS_APPROVAL, ExportPart
from geogpt_qgis.tools.maps.family import MapTools
from geogpt_qgis.tools.maps.layout import MADE_WITH
from geogpt_qgis.tools.maps.map_view import HEADLESS_WIDTH_PX, visible_layers
from tests.support.runs import call_in_thread

POINTS_PER_MM = 72 / 25.4
A4 = (210.0, 297.0)
A3 = (297.0, 420.0)


@pytest.fixture
def headless(demo_project, bridge) -> ExportPart:
    """The tool as the CLI and the MCP server have it: no QGIS window."""
    return ExportPart(ToolContext(project=demo_project, bridge=bridge, iface=None))


@pytest.fixture
def home(demo_project) -> Path:
    return Path(demo_project.homePath())


def approved(part: ExportPart, *args, **kwargs):
    """Call export_map on a worker thread as the agent does after the user approved it."""

    def call():
        token = current_decision.set(Decision(APPROVE))
        try:
            return part.export_map(*args, **kwargs)
        finally:
            current_decision.reset(token)

    return call_in_thread(call)


def pdf_pages_mm(path: Path) -> list[tuple[float, float]]:
    reader = PdfReader(str(path))
    return [(float(p.mediabox.width) / POINTS_PER_MM, float(p.mediabox.height) / POINTS_PER_MM) for p in reader.pages]


def layout(project, name: str) -> QgsPrintLayout:
    found = project.layoutManager().layoutByName(name)
    assert found is not None, [lay.name() for lay in project.layoutManager().layouts()]
    return found


def item(lay: QgsPrintLayout, item_id: str, kind: type):
    found = lay.itemById(item_id)
    assert isinstance(found, kind), (item_id, type(found))
    return found


@pytest.mark.parametrize(
    ("page", "size_mm"),
    [("A4 landscape", (A4[1], A4[0])), ("a3 portrait", A3), ("A4", (A4[1], A4[0]))],
)
def test_a_pdf_has_one_page_of_the_asked_size(headless, home, page, size_mm):
    result = approved(headless, "map.pdf", "", page)
    pages = pdf_pages_mm(home / "map.pdf")
    assert len(pages) == 1
    assert pages[0] == pytest.approx(size_mm, abs=0.5)
    assert result.artifact.files == (str((home / "map.pdf").resolve()),)
    assert f"{size_mm[0]:g} × {size_mm[1]:g} mm" in result.text


def test_the_layout_is_kept_with_every_item_and_a_legend_of_the_visible_layers(headless, demo_project, home):
    demo_project.layerTreeRoot().findLayer(demo_project.mapLayersByName("landuse")[0].id()).setItemVisibilityChecked(
        False
    )
    shown = [layer.name() for layer in visible_layers(demo_project)]
    assert "landuse" not in shown and len(shown) >= 5
    result = approved(headless, str(home / "town.pdf"), "Elvbury schools")
    kept = layout(demo_project, "Elvbury schools")
    map_item = item(kept, "map", QgsLayoutItemMap)
    assert [layer.name() for layer in map_item.layers()] == shown
    assert map_item.crs() == demo_project.crs()
    legend = item(kept, "legend", QgsLayoutItemLegend)
    assert [node.name() for node in legend.model().rootGroup().findLayers()] == shown
    bar = item(kept, "scale bar", QgsLayoutItemScaleBar)
    assert bar.linkedMap() is map_item
    assert QgsUnitTypes.toString(bar.units()) in ("meters", "kilometers")  # EPSG:25832 is in metres
    arrow = item(kept, "north arrow", QgsLayoutItemPicture)
    assert arrow.picturePath().endswith("arrows/NorthArrow_02.svg") and Path(arrow.picturePath()).is_file()
    assert item(kept, "title", QgsLayoutItemLabel).text() == "Elvbury schools"
    assert item(kept, "attribution", QgsLayoutItemLabel).text() == MADE_WITH  # the demo layers name no rights
    assert "Elvbury schools" in result.text and "Layout Manager" in result.text
    assert result.artifact.layer_names == tuple(shown)


def test_exporting_again_with_the_same_title_replaces_geogpts_layout_never_the_users(headless, demo_project, home):
    users = QgsPrintLayout(demo_project)
    users.initializeDefaults()
    users.setName("Town")
    assert demo_project.layoutManager().addLayout(users)
    approved(headless, "a.pdf", "Town")
    approved(headless, "b.pdf", "Town", "A3 portrait")
    names = sorted(lay.name() for lay in demo_project.layoutManager().layouts())
    assert names == ["Town", "Town (2)"]
    assert demo_project.layoutManager().layoutByName("Town") is users  # the user's own, untouched
    ours = layout(demo_project, "Town (2)")
    assert ours.pageCollection().page(0).pageSize().width() == pytest.approx(A3[0])


def test_a_png_has_the_pages_pixels_at_the_dpi(headless, home):
    approved(headless, "map.png", "Elvbury", "A4 portrait", 100)
    image = QImage(str(home / "map.png"))
    assert not image.isNull()
    assert image.width() == pytest.approx(A4[0] * 100 / 25.4, abs=1)
    assert image.height() == pytest.approx(A4[1] * 100 / 25.4, abs=1)
    assert not any(path.name.startswith(".") for path in home.iterdir())  # no partial file left


def test_headless_the_map_shows_the_projects_saved_view(headless, demo_project, home):
    saved = QgsRectangle(561000, 6201000, 563000, 6202000)
    demo_project.viewSettings().setDefaultViewExtent(QgsReferencedRectangle(saved, demo_project.crs()))
    result = approved(headless, "view.pdf", "View").text
    shown = item(layout(demo_project, "View"), "map", QgsLayoutItemMap).extent()
    assert shown.contains(saved)
    assert shown.center().x() == pytest.approx(saved.center().x()) and shown.center().y() == pytest.approx(
        saved.center().y()
    )
    assert shown.width() == pytest.approx(saved.width()) or shown.height() == pytest.approx(saved.height())
    assert "the project's saved view" in result


def test_headless_the_saved_view_in_another_crs_is_transformed(headless, demo_project):
    wgs84 = QgsCoordinateReferenceSystem("EPSG:4326")
    saved = QgsRectangle(9.95, 55.94, 9.99, 55.96)
    demo_project.viewSettings().setDefaultViewExtent(QgsReferencedRectangle(saved, wgs84))
    approved(headless, "view.pdf", "View")
    shown = item(layout(demo_project, "View"), "map", QgsLayoutItemMap).extent()
    assert 500_000 < shown.center().x() < 700_000 and 6_000_000 < shown.center().y() < 6_300_000  # metres


def test_a_canvas_png_headless_is_the_views_shape_at_the_dpi(headless, demo_project, home):
    result = approved(headless, "plain.png", "", "canvas", 192)
    image = QImage(str(home / "plain.png"))
    assert image.width() == HEADLESS_WIDTH_PX * 2
    assert image.height() > 100
    assert demo_project.layoutManager().layouts() == []  # no layout for a plain image
    assert "pixels" in result.text and result.artifact.files == (str((home / "plain.png").resolve()),)
    # Something was drawn: not one colour.
    colours = {image.pixel(x, y) for x in range(0, image.width(), 37) for y in range(0, image.height(), 37)}
    assert len(colours) > 5


def test_with_a_window_the_canvas_is_what_is_exported(tool_ctx, demo_project, home):
    canvas = tool_ctx.iface.mapCanvas()
    canvas.setDestinationCrs(demo_project.crs())
    canvas.resize(400, 300)
    wanted = QgsRectangle(562000, 6201000, 564000, 6202500)
    canvas.setExtent(wanted)
    part = ExportPart(tool_ctx)
    approved(part, "canvas.pdf", "Canvas")
    shown = item(layout(demo_project, "Canvas"), "map", QgsLayoutItemMap).extent()
    assert shown.center().x() == pytest.approx(canvas.extent().center().x())
    assert shown.contains(canvas.extent()) or canvas.extent().contains(shown)
    settings = canvas.mapSettings()
    approved(part, "canvas.png", "", "canvas", 144)
    image = QImage(str(home / "canvas.png"))
    factor = 144 / settings.outputDpi()
    assert image.width() == pytest.approx(settings.outputSize().width() * factor, abs=1)
    assert image.height() == pytest.approx(settings.outputSize().height() * factor, abs=1)


def test_without_approval_nothing_is_written_and_the_card_says_what_would_be(headless, demo_project, home):
    with pytest.raises(ToolError, match=NEEDS_APPROVAL):
        call_in_thread(headless.export_map, "map.pdf", "Elvbury")
    assert not (home / "map.pdf").exists()
    assert demo_project.layoutManager().layouts() == []
    request = call_in_thread(headless.preview_export_map, "map.pdf", "Elvbury")
    assert request.action.startswith("Write ") and "map.pdf" in request.action
    assert set(request.effects) == {"write_file", "change_project"}
    assert "A4 landscape (297 × 210 mm) at 150 dpi" in request.details
    (home / "map.pdf").write_bytes(b"old")
    request = call_in_thread(headless.preview_export_map, "map.pdf", "Elvbury")
    assert request.action.startswith("Replace ") and "Replaces" in request.details
    assert any("exists: it is replaced" in line for line in request.notes)
    assert (home / "map.pdf").read_bytes() == b"old"
    assert MapTools(headless.ctx).tools()  # the family offers it, gated
    assert approval_preview(headless.export_map) == headless.preview_export_map  # bound to this very part


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("map.jpg",), r"must end in \.pdf or \.png"),
        (("no/such/folder/map.pdf",), "does not exist"),
        (("map.pdf", "", "A9 sideways"), r"unknown page 'A9 sideways'.*A4.*A3.*Letter.*canvas"),
        (("map.pdf", "", "canvas"), "plain PNG"),
        (("map.png", "", "A4", 5000), "dpi must be a whole number from 30 to 600"),
        (("map.png", "", "A0 portrait", 600), "too large"),
        (("",), "give the file to write"),
    ],
)
def test_bad_calls_are_answered_and_change_nothing(headless, demo_project, home, args, message):
    before = sorted(path.name for path in home.iterdir())
    with pytest.raises(ToolError, match=message):
        approved(headless, *args)
    with pytest.raises(ToolError, match=message):
        call_in_thread(headless.preview_export_map, *args)
    assert sorted(path.name for path in home.iterdir()) == before
    assert demo_project.layoutManager().layouts() == []


def test_nothing_visible_is_refused(headless, demo_project):
    for node in demo_project.layerTreeRoot().findLayers():
        node.setItemVisibilityChecked(False)
    with pytest.raises(ToolError, match="no layer is visible"):
        approved(headless, "map.pdf")


def test_the_sources_under_the_answer_link_the_exported_file(headless, home):
    from geogpt_qgis.core.sources import collect_sources
    from geogpt_qgis.gui.sources_view import sources_html

    result = approved(headless, "linked.pdf", "Linked")
    shown = sources_html(collect_sources([result.artifact]))
    assert f'href="file://{home.resolve() / "linked.pdf"}"' in shown and ">linked.pdf</a>" in shown


def test_a_geographic_map_gets_a_scale_bar_in_metres_and_the_layers_rights_as_attribution(headless, demo_project):
    demo_project.setCrs(QgsCoordinateReferenceSystem("EPSG:4326"))
    parks = demo_project.mapLayersByName("parks")[0]
    metadata = parks.metadata()
    metadata.setRights(["© Elvbury council", "CC BY 4.0"])
    parks.setMetadata(metadata)
    approved(headless, "geo.pdf", "Geo")
    kept = layout(demo_project, "Geo")
    assert item(kept, "map", QgsLayoutItemMap).crs().authid() == "EPSG:4326"
    bar = item(kept, "scale bar", QgsLayoutItemScaleBar)
    assert QgsUnitTypes.toString(bar.units()) in ("meters", "kilometers")  # never degrees
    assert item(kept, "attribution", QgsLayoutItemLabel).text() == "Sources: © Elvbury council; CC BY 4.0"


def test_without_the_north_arrow_svg_a_text_arrow_is_drawn(headless, demo_project, monkeypatch):
    from geogpt_qgis.tools.maps import layout as layout_module

    monkeypatch.setattr(layout_module, "north_arrow_svg", lambda: "")
    approved(headless, "plain-arrow.pdf", "Arrow")
    assert item(layout(demo_project, "Arrow"), "north arrow", QgsLayoutItemLabel).text() == "N\n↑"


def test_hidden_groups_leave_the_legend_and_the_map(headless, demo_project):
    root = demo_project.layerTreeRoot()
    group = root.addGroup("Services")
    for name in ("schools", "hospitals"):
        node = root.findLayer(demo_project.mapLayersByName(name)[0].id())
        group.addChildNode(node.clone())
        node.parent().removeChildNode(node)
    group.setItemVisibilityChecked(False)
    approved(headless, "no-services.pdf", "No services")
    kept = layout(demo_project, "No services")
    legend_root = item(kept, "legend", QgsLayoutItemLegend).model().rootGroup()
    assert legend_root.findGroup("Services") is None
    names = [node.name() for node in legend_root.findLayers()]
    assert "schools" not in names and "hospitals" not in names and "roads" in names
    assert "schools" not in [layer.name() for layer in item(kept, "map", QgsLayoutItemMap).layers()]


def test_a_failed_write_keeps_the_old_file_and_the_layout_manager_as_they_were(headless, demo_project, home):
    (home / "map.pdf").write_bytes(b"old")
    (home / ".map.geogpt-partial.pdf").mkdir()  # where the export writes first: now it cannot
    with pytest.raises(ToolError, match=r"could not write .*map.pdf.* \(FileError"):
        approved(headless, "map.pdf", "Broken")
    assert (home / "map.pdf").read_bytes() == b"old"
    assert demo_project.layoutManager().layouts() == []
