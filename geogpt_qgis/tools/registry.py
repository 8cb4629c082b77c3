"""The tool families GeoGPT offers, in one list.

Each later tool family (processing, PostGIS, OGC API, code) registers here;
the agent sends only the families that are available in the current context.
"""

from __future__ import annotations

from geogpt_qgis.tools.base import ToolContext, ToolFamily
from geogpt_qgis.tools.code.family import CodeTools
from geogpt_qgis.tools.examples.family import ExampleTools
from geogpt_qgis.tools.help.family import CapabilityTools
from geogpt_qgis.tools.insights.family import InsightTools
from geogpt_qgis.tools.maps.family import MapTools
from geogpt_qgis.tools.ogc.family import OgcTools
from geogpt_qgis.tools.postgis.family import PostgisTools
from geogpt_qgis.tools.processing.family import ProcessingTools
from geogpt_qgis.tools.project.edits import EditTools
from geogpt_qgis.tools.project.family import ProjectTools

FAMILY_TYPES: tuple[type[ToolFamily], ...] = (
    ProjectTools,
    EditTools,
    MapTools,
    ProcessingTools,
    PostgisTools,
    OgcTools,
    CodeTools,
    InsightTools,
    ExampleTools,
)


def build_families(ctx: ToolContext) -> list[ToolFamily]:
    """Instantiate every family for ``ctx``, plus the capability tool that describes them."""
    families: list[ToolFamily] = [family_type(ctx) for family_type in FAMILY_TYPES]
    return [*families, CapabilityTools(ctx, families)]


def active_families(families: list[ToolFamily]) -> list[ToolFamily]:
    """The families that can be used in this context (a configured connection, a loaded provider...)."""
    return [family for family in families if family.unavailable_reason() is None]
