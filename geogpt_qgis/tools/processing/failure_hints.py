"""A way forward when an algorithm refuses input it cannot handle, instead of a dead end.

Keyed by what failed (the algorithm's kind and its message), each hint names a
method that answers the same question.  Qt-free.
"""

from __future__ import annotations

import re

_TOO_FEW_POINTS = re.compile(r"at least 3 points|not a polygon|extent .* (empty|not)|collinear|too few", re.IGNORECASE)

VORONOI_WAY_FORWARD = (
    "Way forward: Voronoi cells need at least three points not on one line. With two points, each cell is "
    "the half of the plane nearer one point (split by the perpendicular bisector): assign features to their "
    "nearest point with native:joinbynearest (NEIGHBORS=1), or compute the distance to each point and keep the "
    "smaller. Collinear points: the cells are strips between the bisectors, answered the same way."
)


def way_forward(algorithm_id: str, message: str) -> str:
    """A line to add to a failure's message, or "" when there is nothing better to suggest."""
    name = algorithm_id.split(":", 1)[-1].lower()
    if ("voronoi" in name or "delaunay" in name) and _TOO_FEW_POINTS.search(message):
        return "\n" + VORONOI_WAY_FORWARD
    return ""
