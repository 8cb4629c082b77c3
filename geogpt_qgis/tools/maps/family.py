"""The maps family: what an analyst asks for after the analysis, done as real QGIS styles and layouts.

Each part (loading, styling, labels, export) is its own small object with its
tools and their approval previews; the family only gathers them, so the agent
sees one family and the parts stay independent modules.
"""

from __future__ import annotations

from typing import Any, Protocol

from geogpt_qgis.tools.base import ToolFamily, ToolFunction


class MapPart(Protocol):
    """One part of the family: built with the tool context, offers its tool methods."""

    def __init__(self, ctx: Any) -> None: ...

    def tools(self) -> list[ToolFunction]: ...


def _part_types() -> list[type[MapPart]]:
    """The parts, imported here so that the family module stays light to import."""
    from geogpt_qgis.tools.maps.export import ExportPart
    from geogpt_qgis.tools.maps.labels import LabelPart
    from geogpt_qgis.tools.maps.loading import DataLoading
    from geogpt_qgis.tools.maps.styling import StylePart

    return [DataLoading, LabelPart, StylePart, ExportPart]


class MapTools(ToolFamily):
    """Data loading, styling, labels, layer order and map export."""

    name = "maps"
    title = "Maps"
    summary = "load files, URLs and tables; style, label and order layers; export a map to PDF or PNG"
    prompt_hint = ""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._parts = [part(ctx) for part in _part_types()]

    def tools(self) -> list[ToolFunction]:
        return [tool for part in self._parts for tool in part.tools()]

    def notice_user_text(self, text: str) -> None:
        """Pass the user's message to the parts that trust what the user typed (URLs to load)."""
        for part in self._parts:
            notice = getattr(part, "notice_user_text", None)
            if notice is not None:
                notice(text)
