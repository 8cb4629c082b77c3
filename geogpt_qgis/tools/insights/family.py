"""The places-and-charts tool family: find named places to use as areas, and chart data in the chat.

Two tools only, with terse schemas: every model call pays for them.  What
the model needs beyond the schema (how to use a place layer, the numbers
behind a chart, how to disambiguate) comes back in the tool results, where it
costs tokens only when used.
"""

from __future__ import annotations

import importlib.util
from typing import Annotated

from annotated_types import MaxLen

from geogpt_qgis.core.artifacts import ToolResult
from geogpt_qgis.core.bounds import Name, Sql
from geogpt_qgis.toolbelt.preferences import PlgOptionsManager
from geogpt_qgis.tools.base import ToolContext, ToolFamily, ToolFunction
from geogpt_qgis.tools.insights.charts.maker import ChartMaker
from geogpt_qgis.tools.insights.places.finder import MAX_NAMES, PlaceFinder
from geogpt_qgis.tools.postgis.connections import allowed_connection_names


class InsightTools(ToolFamily):
    """Places by name (project layers and allowed PostGIS tables) and charts from layers or SQL."""

    name = "insights"
    title = "Places and charts"
    summary = "find places by name (fuzzy) as areas for other tools; chart a layer or SQL result in the chat"
    prompt_hint = "Named places: find_places, then use its place_* layer as the area."

    def __init__(self, ctx: ToolContext) -> None:
        super().__init__(ctx)
        self._places = PlaceFinder(ctx, self._allowed, self._sql_timeout)
        self._charts = ChartMaker(ctx, self._allowed, self._sql_timeout)

    def _allowed(self) -> list[str]:
        """Saved connections the agent may use (none when psycopg or pglast is missing)."""
        if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("pglast") is None:
            return []
        return allowed_connection_names(PlgOptionsManager.get_plg_settings().postgis_connections)

    def _sql_timeout(self) -> float:
        return PlgOptionsManager.get_plg_settings().sql_timeout

    def tools(self) -> list[ToolFunction]:
        tools: list[ToolFunction] = [self.find_places]
        if importlib.util.find_spec("matplotlib") is not None:
            tools.append(self.make_chart)
        return tools

    def find_places(self, names: Annotated[list[Name], MaxLen(MAX_NAMES)]) -> ToolResult:
        """Find places by name in layers and tables; each is added as a place_* layer.

        Args:
            names: Like Nordby school.
        """
        return self._places.find(names)

    def make_chart(self, data: Sql, kind: str, x: str, y: str = "", title: Name = "") -> ToolResult:
        """Chart data in the chat.

        Args:
            data: Layer or SELECT.
            kind: bar, line, pie, histogram, scatter.
            x: Field; a,b for grouped bars.
            y: Number field or mean(f); none: count.
        """
        return self._charts.make(data, kind, x, y, title)
