"""Defaults for parameters that approximate circles with straight segments, accurate to 0.1% of the area.

QGIS's ``native:buffer`` draws a quarter circle with 5 segments by default: a
200 m buffer of a point then has 1.6% less area than the true circle, and
"how many hectares lie within 200 m" comes out 1.5% low.  When the model
leaves such a parameter out, the tools fill in a value whose area error is
below ``MAX_AREA_ERROR``; a value the model gives is kept, with a note when it
is coarser than that.  A circle drawn as a regular polygon with n sides
inscribed in it has ``n / (2π) · sin(2π / n)`` of the circle's area.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from geogpt_qgis.core.numbers import plain_number

MAX_AREA_ERROR = 0.001
QUARTER_SEGMENTS = 32  # per quarter circle: 128 sides, 0.04% of the area
CIRCLE_SEGMENTS = 128  # per whole circle: the same polygon
GRASS_ARC_TOLERANCE = 0.0005  # v.buffer: largest gap between arc and chord, as a fraction of the distance


@dataclass(frozen=True)
class CurveParameter:
    """A parameter that sets how finely an algorithm draws arcs."""

    accurate: float  # the value filled in when the model leaves the parameter out
    per: str  # "quarter" (segments per quarter circle), "circle" (per whole circle) or "tolerance"


CURVE_PARAMETERS: dict[tuple[str, str], CurveParameter] = {
    ("native:buffer", "SEGMENTS"): CurveParameter(QUARTER_SEGMENTS, "quarter"),
    ("qgis:variabledistancebuffer", "SEGMENTS"): CurveParameter(QUARTER_SEGMENTS, "quarter"),
    ("native:singlesidedbuffer", "SEGMENTS"): CurveParameter(QUARTER_SEGMENTS, "quarter"),
    ("native:offsetline", "SEGMENTS"): CurveParameter(QUARTER_SEGMENTS, "quarter"),
    ("native:arrayoffsetlines", "SEGMENTS"): CurveParameter(QUARTER_SEGMENTS, "quarter"),
    ("native:taperedbuffer", "SEGMENTS"): CurveParameter(QUARTER_SEGMENTS, "quarter"),
    ("native:bufferbym", "SEGMENTS"): CurveParameter(QUARTER_SEGMENTS, "quarter"),
    ("native:minimumenclosingcircle", "SEGMENTS"): CurveParameter(CIRCLE_SEGMENTS, "circle"),
    ("native:rectanglesovalsdiamonds", "SEGMENTS"): CurveParameter(CIRCLE_SEGMENTS, "circle"),
    ("qgis:rectanglesovalsdiamondsvariable", "SEGMENTS"): CurveParameter(CIRCLE_SEGMENTS, "circle"),
    ("grass7:v.buffer", "tolerance"): CurveParameter(GRASS_ARC_TOLERANCE, "tolerance"),
}


def curve_parameter(algorithm_id: str, name: str) -> CurveParameter | None:
    return CURVE_PARAMETERS.get((algorithm_id, name))


def area_error(parameter: CurveParameter, value: float) -> float:
    """The share of a circle's area that ``value`` loses (0.016 for 5 segments per quarter)."""
    if parameter.per == "tolerance":
        if value <= 0:
            return 0.0
        half_angle = math.acos(max(-1.0, 1.0 - value))  # chord whose gap to the arc is ``value`` of the radius
        sides = math.pi / half_angle
    else:
        sides = max(value, 1.0) * (4 if parameter.per == "quarter" else 1)
    if sides < 3:
        return 1.0
    return 1.0 - sides / (2 * math.pi) * math.sin(2 * math.pi / sides)


def coarse_note(algorithm_id: str, name: str, value: float) -> str | None:
    """A note for the model when the value it chose loses more area than ``MAX_AREA_ERROR``."""
    parameter = curve_parameter(algorithm_id, name)
    if parameter is None or area_error(parameter, value) <= MAX_AREA_ERROR:
        return None
    given, loss = plain_number(value, grouping=False), area_error(parameter, value)
    return (
        f"{name}={given} draws circles coarsely: areas come out about {loss:.2%} low; "
        f"leave {name} out for results within {MAX_AREA_ERROR:.1%} of the exact area."
    )


def describe_default(algorithm_id: str, name: str, qgis_default: object) -> str | None:
    """What ``find_algorithm`` says about a curve parameter's default, or ``None`` for other parameters."""
    parameter = curve_parameter(algorithm_id, name)
    if parameter is None:
        return None
    ours = plain_number(parameter.accurate, grouping=False)
    note = f"; default {ours} here (areas within {MAX_AREA_ERROR:.1%} of the exact circle"
    if isinstance(qgis_default, (int, float)) and qgis_default != parameter.accurate:
        loss = area_error(parameter, float(qgis_default))
        note += f"; QGIS's own default {plain_number(qgis_default, grouping=False)} is {loss:.2%} low"
    return note + ")"
