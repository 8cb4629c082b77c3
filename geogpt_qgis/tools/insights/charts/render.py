"""Draw a ``ChartData`` to a PNG with matplotlib's Agg canvas (worker thread; Qt-free).

``Figure`` with ``FigureCanvasAgg`` is used directly, never ``pyplot``: no
global state, no GUI backend, nothing that could touch a widget, so it is
safe off the main thread.  matplotlib is the one QGIS ships; it is imported
on first use only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from geogpt_qgis.core.numbers import plain_number
from geogpt_qgis.tools.insights.charts.data import ChartData

WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.8, 110
# Longest text drawn, by place: labels come from the data, and matplotlib lays out (and rasterises) every
# character, so an unbounded value could take minutes or overflow the raster.
TITLE_CHARS, AXIS_CHARS, TICK_CHARS = 120, 80, 40
COLORS = ["#1f78b4", "#33a02c", "#e31a1c", "#ff7f00", "#6a3d9a", "#b15928", "#a6cee3", "#b2df8a", "#fb9a99"]


def render_png(data: ChartData, path: Path) -> Path:
    """Write the chart to ``path`` (and its numbers to ``path`` with ``.json``); returns ``path``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    {"bar": _bar, "line": _line, "pie": _pie, "histogram": _histogram, "scatter": _scatter}[data.kind](axes, data)
    axes.set_title(_clip(data.title, TITLE_CHARS))
    if data.kind != "pie":
        axes.set_xlabel(_clip(data.x_label, AXIS_CHARS))
        axes.set_ylabel(_clip(data.y_label, AXIS_CHARS))
        axes.grid(True, axis="y", alpha=0.3)
        axes.set_axisbelow(True)
        if data.y_label == "count" and data.kind != "scatter":
            from matplotlib.ticker import MaxNLocator

            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(str(path), format="png")
    path.with_suffix(".json").write_text(json.dumps(data.to_dict(), ensure_ascii=False, default=str), "utf-8")
    return path


def _rotate(axes: Any, labels: list[str]) -> None:
    if len(labels) > 6 or max((len(t) for t in labels), default=0) > 10:
        for tick in axes.get_xticklabels():
            tick.set_rotation(35)
            tick.set_horizontalalignment("right")


def _bar(axes: Any, data: ChartData) -> None:
    names = list(data.series)
    positions = list(range(len(data.categories)))
    width = 0.8 / max(len(names), 1)
    for index, name in enumerate(names):
        offset = (index - (len(names) - 1) / 2) * width
        values = [0.0 if math.isnan(v) else v for v in data.series[name]]
        bars = axes.bar(
            [p + offset for p in positions],
            values,
            width,
            label=_clip(name, TICK_CHARS) or None,
            color=COLORS[index % len(COLORS)],
        )
        if len(names) == 1 and len(positions) <= 15:
            axes.bar_label(bars, labels=[_short(v) for v in values], fontsize=8, padding=2)
    axes.set_xticks(positions)
    axes.set_xticklabels(_ticks(data.categories))
    _rotate(axes, data.categories)
    if len(names) > 1:
        axes.legend(fontsize=8)


def _line(axes: Any, data: ChartData) -> None:
    positions = list(range(len(data.categories)))
    for index, (name, values) in enumerate(data.series.items()):
        axes.plot(
            positions,
            values,
            marker="o" if len(positions) <= 40 else None,
            label=_clip(name, TICK_CHARS) or None,
            color=COLORS[index % len(COLORS)],
        )
    step = max(1, len(positions) // 20)
    axes.set_xticks(positions[::step])
    axes.set_xticklabels(_ticks(data.categories[::step]))
    _rotate(axes, data.categories[::step])
    if len(data.series) > 1:
        axes.legend(fontsize=8)


def _pie(axes: Any, data: ChartData) -> None:
    values = [0.0 if math.isnan(v) else v for v in data.series[""]]
    axes.pie(
        values,
        labels=_ticks(data.categories),
        autopct="%1.0f%%",
        startangle=90,
        counterclock=False,
        colors=COLORS[: len(values)],
        textprops={"fontsize": 8},
    )
    axes.axis("equal")


def _histogram(axes: Any, data: ChartData) -> None:
    widths = [hi - lo for lo, hi in zip(data.edges, data.edges[1:], strict=False)]
    axes.bar(data.edges[:-1], data.counts, widths, align="edge", color=COLORS[0], edgecolor="white")


def _scatter(axes: Any, data: ChartData) -> None:
    if data.grid:
        import numpy

        counts = numpy.array(data.grid, dtype=float).T
        counts[counts == 0] = numpy.nan
        mesh = axes.pcolormesh(data.edges, data.y_edges, counts, cmap="viridis")
        axes.figure.colorbar(mesh, ax=axes, label="points per cell")
        return
    xs = [p[0] for p in data.points]
    ys = [p[1] for p in data.points]
    axes.scatter(xs, ys, s=12 if len(xs) > 500 else 24, alpha=0.7, color=COLORS[0])


def _clip(value: Any, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ticks(labels: list[str]) -> list[str]:
    return [_clip(label, TICK_CHARS) for label in labels]


def _short(value: float) -> str:
    """A bar's label: 17,900 or 0.0000123, never 1.79e+04."""
    return plain_number(value, significant=3)
