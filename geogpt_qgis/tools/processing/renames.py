"""Algorithm ids that changed between QGIS versions, mapped both ways.

QGIS ports Python algorithms to C++ and gives them a ``native:`` id; the old
``qgis:`` id then disappears from listings and searches (3.40 and 3.44 still
answer it in ``algorithmById``, as an alias of the new one).  A model trained
on older manuals, a saved prompt or an eval asks for the id it knows, so a
requested id missing from the running registry is looked up here and replaced
by its counterpart when that one is registered, in either direction (a new id
on an old QGIS maps to the old one).  Only renames checked against QGIS's
sources belong here: a wrong entry would run a different algorithm.
"""

from __future__ import annotations

from collections.abc import Callable

# old id -> new id, with the QGIS version that made the change.
RENAMES: dict[str, str] = {
    "qgis:voronoipolygons": "native:voronoipolygons",  # 3.34 (ported to C++ by A. Bruy, 2023)
    "qgis:delaunaytriangulation": "native:delaunaytriangulation",  # 3.34 (same port)
    "qgis:concavehull": "native:concavehull",  # 3.28 (GEOS concave hull replaced the Python one)
    "qgis:basicstatisticsforfields": "native:basicstatisticsforfields",  # by 3.40 (which keeps the old id as alias)
}

_BACKWARDS = {new: old for old, new in RENAMES.items()}


def counterpart(algorithm_id: str) -> str | None:
    """The other name of a renamed algorithm (newer for an old id, older for a new one), else ``None``."""
    return RENAMES.get(algorithm_id) or _BACKWARDS.get(algorithm_id)


def registered_id(algorithm_id: str, is_registered: Callable[[str], bool]) -> str | None:
    """The id to use for ``algorithm_id`` on this QGIS: itself, its renamed counterpart, or ``None``."""
    if is_registered(algorithm_id):
        return algorithm_id
    other = counterpart(algorithm_id)
    return other if other is not None and is_registered(other) else None
