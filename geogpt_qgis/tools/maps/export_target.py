"""Where an exported map goes and on what page: the model's path and page words, checked before anything runs.

Qt-free and QGIS-free (the page sizes are handed in from QGIS's page size
registry), so the rules are plain to read and test: the format comes from the
file's extension and nothing else, a relative path means the project's folder,
the folder must already exist (an export never creates folders), and a file
that exists is replaced only with the user's approval, which says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from geogpt_qgis.tools.base import ToolError

FORMATS = {".pdf": "PDF", ".png": "PNG"}
CANVAS = "canvas"
ORIENTATIONS = ("landscape", "portrait")
DEFAULT_ORIENTATION = "landscape"
MIN_DPI, MAX_DPI = 30, 600
MAX_PIXELS = 100_000_000  # an image of this many pixels takes 400 MB in memory


@dataclass(frozen=True)
class Target:
    """The file to write: an absolute path, its format, and whether a file is already there."""

    path: Path
    format: str  # "PDF" or "PNG"
    exists: bool


@dataclass(frozen=True)
class Page:
    """A page by name and orientation, in millimetres (``None`` sizes: the plain canvas image)."""

    name: str  # "A4 landscape" or "canvas"
    width_mm: float = 0.0
    height_mm: float = 0.0

    @property
    def canvas(self) -> bool:
        return self.name == CANVAS

    def pixels(self, dpi: int) -> tuple[int, int]:
        """The page at ``dpi`` in whole pixels, as QGIS's layout exporter sizes it."""
        return round(self.width_mm * dpi / 25.4), round(self.height_mm * dpi / 25.4)


def resolve_target(path: str, home: str) -> Target:
    """``path`` as an absolute file in an existing folder, with a format its extension names.

    ``home`` is the project's folder (empty when the project was never saved).
    """
    text = path.strip()
    if not text:
        raise ToolError("give the file to write, e.g. ~/maps/town.pdf, or town.png for the project's folder")
    target = Path(text).expanduser()
    if not target.is_absolute():
        if not home:
            raise ToolError(
                f"{text!r} is relative but the project is not saved, so it has no folder; give an absolute path"
            )
        target = Path(home).expanduser() / target
    kind = FORMATS.get(target.suffix.lower())
    if kind is None:
        raise ToolError(
            f"{target.name!r}: the file name must end in .pdf or .png (the format comes from the extension)"
        )
    folder = target.parent
    if not folder.is_dir():
        raise ToolError(f"the folder {str(folder)!r} does not exist; give a file in an existing folder")
    target = folder.resolve() / target.name
    if target.is_dir():
        raise ToolError(f"{str(target)!r} is a folder; give a file name ending in .pdf or .png")
    return Target(target, kind, target.exists())


def parse_page(page: str, sizes: Mapping[str, tuple[float, float]]) -> Page:
    """``"A4 landscape"``, ``"a3 portrait"``, ``"Letter"`` (landscape) or ``"canvas"``, against ``sizes``.

    Case, word order and separators are forgiven (``"landscape-A4"``, ``"a4_portrait"``, ``"ANSI-B"``).

    ``sizes`` maps QGIS's page size names to (width, height) in millimetres, portrait.
    """
    words = [word for word in re.split(r"[\s,_\-]+", page.strip().lower()) if word]
    if words == [CANVAS]:
        return Page(CANVAS)
    said = [word for word in words if word in ORIENTATIONS]
    orientation = said[-1] if said else DEFAULT_ORIENTATION
    wanted = " ".join(word for word in words if word not in ORIENTATIONS)
    found = next((name for name in sizes if name.lower() == wanted), None)
    if found is None:
        names = ", ".join(sizes)
        raise ToolError(
            f"unknown page {page!r}: give a size and orientation, e.g. 'A4 landscape' or 'A3 portrait' "
            f"(sizes: {names}), or 'canvas' for a plain image of the map view"
        )
    short, long = sorted(sizes[found])
    width, height = (long, short) if orientation == "landscape" else (short, long)
    return Page(f"{found} {orientation}", width, height)


def check_dpi(dpi: int) -> None:
    """A whole number of dots per inch within reason."""
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not MIN_DPI <= dpi <= MAX_DPI:
        raise ToolError(f"dpi must be a whole number from {MIN_DPI} to {MAX_DPI} (150 suits print, 300 fine print)")


def check_pixels(what: str, dpi: int, pixels: tuple[int, int]) -> None:
    """An image that fits in memory (a PDF's map is drawn at the same resolution)."""
    width, height = pixels
    if width * height > MAX_PIXELS:
        raise ToolError(
            f"{what} at {dpi} dpi is {width:,} × {height:,} pixels, too large; lower the dpi or the page size"
        )
