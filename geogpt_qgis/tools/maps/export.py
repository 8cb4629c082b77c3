"""Export the map: a print layout (title, legend, scale bar, north arrow, attribution) written to PDF or PNG.

The layout stays in the project's Layout Manager for the user to refine
(``layout.py``); ``page="canvas"`` writes a plain image of the map view
instead (``canvas_image.py``).  Writing a file is gated like every write: the
approval card names the file (and says when it replaces one), the page, the
resolution and the layout it adds or replaces; every check on the arguments
runs before the card, so a bad call is answered at once and writes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from geogpt_qgis.core import targets
from geogpt_qgis.core.approval import ApprovalRequest, approval_granted, approved_targets, gated
from geogpt_qgis.core.artifacts import LayerRef, ToolArtifact, ToolResult
from geogpt_qgis.core.effects import CallEffects, Effect, Found
from geogpt_qgis.tools.base import ToolContext, ToolError, ToolFunction
from geogpt_qgis.tools.maps.export_target import Page, Target, check_dpi, check_pixels, parse_page, resolve_target
from geogpt_qgis.tools.maps.map_view import MapView, current_view
from geogpt_qgis.tools.safety.targets import file_target, require_approved_file

NEEDS_APPROVAL = "writing a file needs the user's approval"
DEFAULT_PAGE = "A4 landscape"
DEFAULT_DPI = 150


@dataclass
class ExportPlan:
    """One checked export: what is written where, from which view, into which layout."""

    target: Target
    page: Page
    dpi: int
    view: MapView
    layout: str = ""  # the Layout Manager name ("" for a plain canvas image)
    replaces_layout: bool = False

    def effects(self) -> CallEffects:
        found = [
            Found(Effect.WRITE_FILE, f"file {self.target.path}", "exists: it is replaced" if self.target.exists else "")
        ]
        if self.layout:
            verb = "replaces GeoGPT's print layout" if self.replaces_layout else "adds the print layout"
            found.append(Found(Effect.CHANGE_PROJECT, f"{verb} {self.layout!r} in the Layout Manager"))
        return CallEffects.of(found)

    def what(self) -> str:
        if self.page.canvas:
            width, height = self.view.image_pixels(self.dpi)
            return f"a PNG image of the map view, {width:,} × {height:,} pixels at {self.dpi} dpi"
        return (
            f"a {self.target.format} of a print layout, {self.page.name} "
            f"({self.page.width_mm:g} × {self.page.height_mm:g} mm) at {self.dpi} dpi"
        )

    def request(self) -> ApprovalRequest:
        effects = self.effects()
        verb = "Replace" if self.target.exists else "Write"
        return ApprovalRequest(
            action=f"{verb} {self.target.path} with the exported map",
            details=(
                f"{'Replaces' if self.target.exists else 'Writes'} {self.target.path}: {self.what()}.\n"
                f"It shows {self.view.source} with {len(self.view.layers)} visible layers."
                + (
                    f"\nThe print layout {self.layout!r} "
                    + ("replaces the one GeoGPT made earlier in" if self.replaces_layout else "is added to")
                    + " the project's Layout Manager, where you can refine it."
                    if self.layout
                    else ""
                )
            ),
            notes=effects.lines(),
            effects=effects.kinds,
            targets=[file_target(str(self.target.path), ("write",))],
        )


class ExportPart:
    """The ``export_map`` tool of the maps family."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.timings = (0.0, 0.0)  # the last layout's build and export seconds (for tests and benchmarks)

    def tools(self) -> list[ToolFunction]:
        return [self.export_map]

    def _plan(self, path: str, title: str, page: str, dpi: int | None) -> ExportPlan:
        """Every check, on the main thread, before anything is written (also what the approval card shows).

        No page means A4 landscape, no dpi 150 (both left out of the schema's defaults: each costs tokens).
        """
        dpi = DEFAULT_DPI if dpi is None else dpi
        page = page.strip() or DEFAULT_PAGE
        from geogpt_qgis.tools.maps.layout import layout_name, page_sizes

        project = self.ctx.project
        target = resolve_target(path, project.homePath())
        chosen = parse_page(page, page_sizes())
        if chosen.canvas and target.format != "PNG":
            raise ToolError("page='canvas' writes a plain PNG image; give a .png path, or a page size for a PDF")
        check_dpi(dpi)
        view = current_view(project, self.ctx.iface)
        pixels = view.image_pixels(dpi) if chosen.canvas else chosen.pixels(dpi)
        check_pixels(chosen.name, dpi, pixels)
        if chosen.canvas:
            return ExportPlan(target, chosen, dpi, view)
        name, replaces = layout_name(project, title)
        return ExportPlan(target, chosen, dpi, view, name, replaces)

    def preview_export_map(self, path: str, title: str = "", page: str = "", dpi: int | None = None) -> ApprovalRequest:
        return self.ctx.on_main(self._plan, path, title, page, dpi).request()

    @gated(preview_export_map)
    def export_map(self, path: str, title: str = "", page: str = "", dpi: int | None = None) -> ToolResult:
        """Export the map as a print layout to .pdf/.png; page e.g. A3 portrait or canvas."""
        plan = self.ctx.on_main(self._plan, path, title, page, dpi)
        if not approval_granted():
            raise ToolError(NEEDS_APPROVAL)
        artifact = ToolArtifact(
            layers=tuple(LayerRef.of(layer) for layer in plan.view.layers), files=(str(plan.target.path),)
        )
        approved = approved_targets(targets.FILE)  # read here: the approval lives in this call's context
        if plan.page.canvas:
            return ToolResult(self._canvas(plan, approved), artifact)
        return ToolResult(self.ctx.on_main(self._layout, plan, title, approved), artifact)

    def _canvas(self, plan: ExportPlan, approved: list[targets.Target]) -> str:
        from geogpt_qgis.tools.maps.canvas_image import render_png

        require_approved_file(approved, str(plan.target.path), ("write",), "export_map")
        failed = render_png(self.ctx, plan.view, plan.dpi, plan.target.path)
        text = f"Saved {plan.what()} to {plan.target.path} (showing {plan.view.source})."
        if failed:
            names = self.ctx.on_main(_layer_names, self.ctx.project, failed)
            text += f" These layers failed to draw: {', '.join(names)}."
        return text

    def _layout(self, plan: ExportPlan, title: str, approved: list[targets.Target]) -> str:
        """Make the layout and export it (main thread: QGIS layouts are not thread-safe)."""
        from geogpt_qgis.tools.maps.layout import build_layout, export_layout, keep_layout

        started = time.monotonic()
        made = build_layout(self.ctx.project, plan.view, plan.page, title)
        built = time.monotonic()
        require_approved_file(approved, str(plan.target.path), ("write",), "export_map")  # still where approved
        export_layout(made.layout, plan.target.path, plan.target.format, plan.dpi)
        keep_layout(self.ctx.project, made)
        self.timings = (built - started, time.monotonic() - built)
        legend = ", ".join(made.legend_layers) or "no layers"
        return (
            f"Exported {plan.what()} to {plan.target.path}. The layout {made.name!r} "
            f"{'replaced the earlier one' if made.replaced else 'is'} in the project's Layout Manager: "
            f"map of {plan.view.source}, legend ({legend}), scale bar in {made.scale_units}, north arrow, attribution"
            + (", title." if made.has_title else ".")
        )


def _layer_names(project: Any, ids: list[str]) -> list[str]:
    return [layer.name() if (layer := project.mapLayer(i)) is not None else i for i in dict.fromkeys(ids)]
