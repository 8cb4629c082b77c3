"""A warning when the running QGIS would ignore a nearest-neighbour distance limit.

``native:joinbynearest``'s MAX_DISTANCE and the expression function
``overlay_nearest(..., max_distance:=...)`` both ask QGIS's spatial index for
the nearest features within a distance.  With libspatialindex 2.1.0 that limit
is ignored (libspatialindex issue 276, QGIS issue 64431): every feature is
matched to its nearest however far it is, silently.  It depends on the library
QGIS was built with, not on QGIS's version (QGIS refuses to build with 2.1
since PR 63196 and ships its own 2.0.0 since PR 63437): measured, Debian
trixie's QGIS 3.40.6 is affected, QGIS 3.22.16 and 3.44.15 are not.  So the
running QGIS is asked once, with a two-point index, and the model is told
to filter by the distance instead when its call relies on the limit.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from qgis.core import Qgis, QgsPointXY, QgsRectangle, QgsSpatialIndex

JOIN_NEAREST = "native:joinbynearest"
_OVERLAY_LIMIT = re.compile(r"overlay_nearest\s*\(.*max_distance", re.IGNORECASE | re.DOTALL)


@functools.cache
def max_distance_ignored() -> bool:
    """Whether this QGIS's spatial index returns a neighbour beyond the distance asked for (measured once)."""
    index = QgsSpatialIndex()
    index.addFeature(1, QgsRectangle(0, 0, 0, 0))
    return bool(index.nearestNeighbor(QgsPointXY(0, 10), 1, 5))  # 10 away, at most 5 asked: none is right


def distance_limit_notes(algorithm_id: str, values: dict[str, Any]) -> list[str]:
    """Notes for the model when the call's distance limit will be ignored here (empty when it is honoured)."""
    limit = values.get("MAX_DISTANCE") if algorithm_id == JOIN_NEAREST else None
    overlay = any(isinstance(v, str) and _OVERLAY_LIMIT.search(v) for v in values.values())
    if (limit in (None, "") and not overlay) or not max_distance_ignored():
        return []
    version = f"This QGIS ({Qgis.QGIS_VERSION.split('-')[0]}, through its spatial index library)"
    notes = []
    if limit not in (None, ""):
        limit = f"{limit:g}" if isinstance(limit, float) else limit  # an expression's number: no separators
        notes.append(
            f"{version} ignores MAX_DISTANCE of {JOIN_NEAREST}: every feature was joined to its nearest, however "
            f'far. Keep only those within {limit} by filtering the result on its "distance" field '
            f'(e.g. select_features with "distance" <= {limit}).'
        )
    if overlay:
        notes.append(
            f"{version} ignores overlay_nearest's max_distance: it returns the nearest feature however far. "
            "Compare the distance instead, e.g. distance($geometry, overlay_nearest('layer', $geometry)[0]) <= d."
        )
    return notes
