"""Meaningful names for result layers: ``rivers_buffer_500m``, not ``Buffered``.

The model can pass its own name (``schools_within_500m_of_rivers``); otherwise
a name is built from the algorithm, its input layers and the parameters that
matter.  Qt-free.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from geogpt_qgis.core.numbers import plain_number

MAX_NAME = 60

# native:extractbylocation predicates, by index.
_PREDICATES = [
    "intersecting",
    "containing",
    "disjoint_from",
    "equal_to",
    "touching",
    "overlapping",
    "within",
    "crossing",
]
# native:extractbyattribute operators, by index.
_OPERATORS = ["eq", "ne", "gt", "ge", "lt", "le", "begins", "contains", "null", "notnull", "notcontains"]


def slug(text: str) -> str:
    """Lower case, words joined by ``_``, letters (accents kept) and digits only."""
    cleaned = re.sub(r"[^\w]+", "_", str(text).lower(), flags=re.UNICODE).strip("_")
    return re.sub(r"_+", "_", cleaned)[:MAX_NAME].strip("_")


def _number(value: Any) -> str:
    try:
        return plain_number(float(value), grouping=False).replace(".", "_")  # 1500000, never 1.5e+06
    except (TypeError, ValueError):
        return slug(value)


def suggest_name(
    algorithm_id: str,
    inputs: Mapping[str, str],
    values: Mapping[str, Any],
    distance_suffix: str = "m",
) -> str:
    """A descriptive name for the main output of ``algorithm_id``."""
    short = algorithm_id.split(":", 1)[-1]
    first = next(iter(inputs.values()), "") or short

    def get(name: str) -> str:
        return slug(inputs.get(name) or values.get(name) or "")

    distance = f"{_number(values.get('DISTANCE'))}{distance_suffix}" if values.get("DISTANCE") not in (None, "") else ""
    templates: dict[str, str] = {
        "buffer": f"{slug(first)}_buffer_{distance}" if distance else f"{slug(first)}_buffer",
        "clip": f"{get('INPUT')}_clipped_to_{get('OVERLAY')}",
        "intersection": f"{get('INPUT')}_intersect_{get('OVERLAY')}",
        "difference": f"{get('INPUT')}_minus_{get('OVERLAY')}",
        "union": f"{get('INPUT')}_union_{get('OVERLAY')}" if inputs.get("OVERLAY") else f"{get('INPUT')}_union",
        "extractwithindistance": f"{get('INPUT')}_within_{distance}_of_{get('REFERENCE')}",
        "joinattributesbylocation": f"{get('INPUT')}_joined_{get('JOIN')}",
        "joinbynearest": f"{get('INPUT')}_nearest_{get('INPUT_2')}",
        "countpointsinpolygon": f"{get('POLYGONS')}_with_{get('POINTS')}_count",
        "centroids": f"{slug(first)}_centroids",
        "fieldcalculator": f"{get('INPUT')}_with_{slug(values.get('FIELD_NAME', 'field'))}",
        "extractbyexpression": f"{get('INPUT')}_filtered",
    }
    if short == "extractbylocation":
        predicates = values.get("PREDICATE", [0])
        index = (predicates[0] if isinstance(predicates, list) and predicates else predicates) or 0
        word = _PREDICATES[index] if isinstance(index, int) and 0 <= index < len(_PREDICATES) else "located"
        return _clip(f"{get('INPUT')}_{word}_{get('INTERSECT')}")
    if short == "extractbyattribute":
        operator = values.get("OPERATOR", 0)
        op = _OPERATORS[operator] if isinstance(operator, int) and 0 <= operator < len(_OPERATORS) else "match"
        return _clip(f"{get('INPUT')}_where_{slug(values.get('FIELD', ''))}_{op}_{slug(values.get('VALUE', ''))}")
    if short == "dissolve":
        fields = values.get("FIELD") or []
        by = "_by_" + "_".join(slug(f) for f in fields) if fields else ""
        return _clip(f"{slug(first)}_dissolved{by}")
    if short == "reprojectlayer":
        return _clip(f"{slug(first)}_{slug(values.get('TARGET_CRS', 'reprojected'))}")
    return _clip(templates.get(short) or f"{slug(first)}_{slug(short)}")


def _clip(name: str) -> str:
    name = re.sub(r"_+", "_", name).strip("_")
    return name[:MAX_NAME].rstrip("_") or "result"


def unique_name(name: str, taken: Collection[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... if a layer already has it."""
    if name not in taken:
        return name
    counter = 2
    while f"{name}_{counter}" in taken:
        counter += 1
    return f"{name}_{counter}"
