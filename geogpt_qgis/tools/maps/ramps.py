"""Colours and colour ramps as the model names them, checked before anything changes.

A colour is a CSS name or a hex code (QColor reads both); an unknown name is
refused with an example.  A ramp is one of QGIS's default style's colour ramps
(the ones the Layer Styling panel lists), found case-insensitively; an
unknown one gets the closest names.  ``QgsStyle.defaultStyle()`` opens a
database the first time, so ``ramp`` is called on the main thread.
"""

from __future__ import annotations

from qgis.core import QgsColorRamp, QgsStyle
from qgis.PyQt.QtGui import QColor

from geogpt_qgis.core.fuzzy import closest_names
from geogpt_qgis.tools.base import ToolError

GRADUATED_RAMP = "YlOrRd"
CATEGORY_RAMP = "Spectral"
HEATMAP_RAMP = "Inferno"
RASTER_RAMP = "Viridis"


def parse_color(text: str) -> QColor:
    """``text`` as a colour: 'red', 'dark green' (CSS names, spaces ignored), '#1f78b4' or '#80ff0000' (alpha)."""
    color = QColor("".join(text.split()))
    if not text.strip() or not color.isValid():
        raise ToolError(
            f"{text!r} is not a colour; use a CSS name like 'red' or 'steelblue', or a hex code like '#1f78b4'"
        )
    return color


def parse_colors(text: str) -> tuple[QColor | None, QColor | None]:
    """``'red'`` (fill) or ``'red,black'`` (fill, outline); empty parts stay ``None``."""
    parts = [part.strip() for part in text.split(",")] if text.strip() else []
    if len(parts) > 2:
        raise ToolError(f"color takes one colour or 'fill,outline' (e.g. 'red,black'), not {text!r}")
    fill = parse_color(parts[0]) if parts and parts[0] else None
    outline = parse_color(parts[1]) if len(parts) > 1 and parts[1] else None
    return fill, outline


def ramp(name: str, default: str) -> tuple[str, QgsColorRamp]:
    """The named colour ramp of QGIS's default style, or ``default`` for an empty name (main thread)."""
    style = QgsStyle.defaultStyle()
    names = style.colorRampNames()
    wanted = name.strip() or default
    exact = {n.lower(): n for n in names}.get(wanted.lower())
    if exact is None:
        close = closest_names(wanted, names)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise ToolError(f"no colour ramp {wanted!r}; {hint}QGIS's ramps: {', '.join(names)}")
    found = style.colorRamp(exact)
    if found is None:
        raise ToolError(f"the colour ramp {exact!r} could not be read from QGIS's style")
    return exact, found
