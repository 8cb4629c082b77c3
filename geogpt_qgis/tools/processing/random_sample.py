"""Random extracts that are really random samples, on every QGIS the plugin runs on.

Before QGIS 3.30, ``native:randomextract`` drew its feature ids *with*
replacement from 0..count (QGIS issue 52114, fixed by PR 52135 in 3.30): ids
repeat, id 0 does not exist in a GeoPackage, and ids of deleted features are
drawn.  Measured on QGIS 3.22.16 with 5 of the demo's 31 schools, 300 runs: 16%
gave 4 features and 27% held a duplicate (3.40.6 and 3.44.15: always 5
distinct).  There, the call runs as ``native:extractbyexpression`` over ids
sampled without replacement by Python's ``random.sample`` from the source as
the algorithm would read it (a selection or a feature limit included).
"""

from __future__ import annotations

import random
from typing import Any

from qgis.core import (
    Qgis,
    QgsFeatureRequest,
    QgsProcessingContext,
    QgsProcessingFeatureSource,
    QgsProcessingParameters,
)

from geogpt_qgis.core.cancel import CancelToken
from geogpt_qgis.tools.base import ToolError

RANDOM_EXTRACT = "native:randomextract"
EXTRACT_BY_EXPRESSION = "native:extractbyexpression"
FIXED_IN = 33000  # Qgis.QGIS_VERSION_INT of the first release with PR 52135


def needs_own_sample(algorithm_id: str, version: int = Qgis.QGIS_VERSION_INT) -> bool:
    return algorithm_id == RANDOM_EXTRACT and version < FIXED_IN


def source_of(algorithm: Any, values: dict[str, Any], context: QgsProcessingContext) -> QgsProcessingFeatureSource:
    """The INPUT as the algorithm would read it (main thread: it may resolve a project layer)."""
    definition = algorithm.parameterDefinition("INPUT")
    source = QgsProcessingParameters.parameterAsSource(definition, values, context)
    if source is None:
        raise ToolError("INPUT of native:randomextract is not a vector layer")
    return source


def sampled_call(source: QgsProcessingFeatureSource, values: dict[str, Any], cancel: CancelToken) -> dict[str, Any]:
    """extractbyexpression's values for the same sample randomextract promises (any thread: reads a snapshot)."""
    request = QgsFeatureRequest().setFlags(QgsFeatureRequest.Flag.NoGeometry).setNoAttributes()
    ids = []
    for feature in source.getFeatures(request):
        ids.append(feature.id())
        if len(ids) % 10_000 == 0:
            cancel.raise_if_cancelled()
    wanted = _sample_size(values, len(ids))
    # A statistical sample, not a secret: Python's random is what random.sample is for.
    chosen = sorted(random.sample(ids, wanted))  # nosec B311 # a statistical sample, not a secret
    expression = f"$id IN ({', '.join(str(i) for i in chosen)})" if chosen else "FALSE"
    return {"INPUT": values["INPUT"], "EXPRESSION": expression, "OUTPUT": values["OUTPUT"]}


def _sample_size(values: dict[str, Any], count: int) -> int:
    """How many features: NUMBER, or NUMBER percent of them; errors as QGIS's.

    A percentage is rounded down, as QGIS 3.40 and 3.44 do (their ``ceil`` is
    taken of an integer division): 10% of 31 features is 3, on every version.
    """
    try:
        number = int(values.get("NUMBER", 10))
        by_share = int(values.get("METHOD", 0)) == 1
    except (TypeError, ValueError):
        raise ToolError("NUMBER and METHOD of native:randomextract must be whole numbers") from None
    if number < 0:
        raise ToolError(f"NUMBER must be 0 or more, not {number}")
    if by_share:
        if number > 100:
            raise ToolError(f"a percentage cannot be more than 100 (NUMBER={number} with METHOD=1)")
        return number * count // 100
    if number > count:
        raise ToolError(f"NUMBER={number} is more than the {count:,} features of INPUT; give at most {count:,}")
    return number
