"""Map export tasks (issue 23): a PDF for a report, a PNG at a given resolution, scored on the files written.

The files are read back here, independently of the tool: the PDF with pypdf
(its page count and page size in points), the PNG with QImage (its pixels,
expected as the page's millimetres × dpi / 25.4).  Writing a file is gated,
so these runs stand for a user who approves it (the "trust" policy).
Relative paths land in the task's copy of the demo project.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.task import Call, Expected, Task
from geogpt_qgis.core.approval import POLICY_TRUST

Check = Callable[[Any], list[str]]  # the project -> what is wrong with the exported file

POINTS_PER_MM = 72 / 25.4
A4_LANDSCAPE_MM = (297.0, 210.0)


def _file(project: Any, name: str) -> Path:
    return Path(project.homePath()) / name


def pdf_of(name: str, pages: int, size_mm: tuple[float, float]) -> Check:
    """The PDF ``name`` (in the project's folder) has ``pages`` pages, each ``size_mm`` (width, height)."""

    def check(project: Any) -> list[str]:
        from pypdf import PdfReader

        path = _file(project, name)
        if not path.is_file():
            return [f"no PDF {name!r} was written"]
        found = [(float(p.mediabox.width), float(p.mediabox.height)) for p in PdfReader(str(path)).pages]
        if len(found) != pages:
            return [f"{name!r} has {len(found)} pages, expected {pages}"]
        want = (size_mm[0] * POINTS_PER_MM, size_mm[1] * POINTS_PER_MM)
        wrong = [size for size in found if abs(size[0] - want[0]) > 1 or abs(size[1] - want[1]) > 1]
        return (
            [f"{name!r} has pages of {wrong[0][0]:.0f} × {wrong[0][1]:.0f} pt, expected {want[0]:.0f} × {want[1]:.0f}"]
            if wrong
            else []
        )

    return check


def png_of(name: str, size_mm: tuple[float, float], dpi: int) -> Check:
    """The PNG ``name`` is the page ``size_mm`` at ``dpi``: mm × dpi / 25.4 pixels each way (±1)."""

    def check(project: Any) -> list[str]:
        from qgis.PyQt.QtGui import QImage

        path = _file(project, name)
        image = QImage(str(path))
        if image.isNull():
            return [f"no PNG {name!r} was written"]
        want = (size_mm[0] * dpi / 25.4, size_mm[1] * dpi / 25.4)
        if abs(image.width() - want[0]) > 1 or abs(image.height() - want[1]) > 1:
            return [f"{name!r} is {image.width()} × {image.height()} px, expected {want[0]:.0f} × {want[1]:.0f}"]
        return []

    return check


def layout_kept(name: str) -> Check:
    """The print layout ``name`` is in the project's Layout Manager, for the user to refine."""

    def check(project: Any) -> list[str]:
        if project.layoutManager().layoutByName(name) is None:
            kept = [layout.name() for layout in project.layoutManager().layouts()]
            return [f"no layout {name!r} in the Layout Manager (there: {kept})"]
        return []

    return check


MAPS_EXPORT = [
    Task(
        "export-a4-pdf",
        "maps",
        "Export an A4 PDF of this map for the report.",
        [
            [Call("export_map", {"path": "elvbury_report.pdf", "title": "Elvbury", "page": "A4 landscape"})],
            lambda r: (
                "The map is saved as elvbury_report.pdf, one A4 landscape page, and the layout 'Elvbury' "
                "is in the Layout Manager if you want to adjust it."
            ),
        ],
        lambda o: Expected(
            words=["elvbury_report.pdf"],
            project=[pdf_of("elvbury_report.pdf", 1, A4_LANDSCAPE_MM), layout_kept("Elvbury")],
        ),
        policy=POLICY_TRUST,
    ),
    Task(
        "export-png-100dpi",
        "maps",
        "Save a PNG of the map at 100 dpi.",
        [
            [Call("export_map", {"path": "elvbury_map.png", "dpi": 100})],
            lambda r: "Saved the map as elvbury_map.png at 100 dpi.",
        ],
        lambda o: Expected(words=["elvbury_map.png"], project=[png_of("elvbury_map.png", A4_LANDSCAPE_MM, 100)]),
        policy=POLICY_TRUST,
    ),
]
