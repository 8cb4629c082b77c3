"""Class breaks for a graduated style, computed from the values on the worker thread.

Quantile, equal interval and pretty breaks come from QGIS's own
classification methods (the same the Layer Styling panel offers), fed with
the values read off the main thread.  Jenks is computed here: QGIS's Jenks
(3.22 to 3.44) leaves an empty first class on small layers (nine districts
split 6,400-6,400, 6,400-8,800, ...), so the optimal Fisher-Jenks breaks are
found with numpy (within-class squared deviations minimised by dynamic
programming, O(k·n²) over at most ``JENKS_MAX_VALUES`` values; larger layers
are summarised by that many evenly spaced quantiles first, as QGIS samples).
A few thousand values take well under a second.  No Qt, no layer access.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgis.core import (
    QgsClassificationEqualInterval,
    QgsClassificationJenks,
    QgsClassificationMethod,
    QgsClassificationPrettyBreaks,
    QgsClassificationQuantile,
)

from geogpt_qgis.core.numbers import plain_number

JENKS_MAX_VALUES = 3000
MAX_CLASSES = 20

GRADUATED = {
    "quantile": QgsClassificationQuantile,
    "equal": QgsClassificationEqualInterval,
    "jenks": QgsClassificationJenks,
    "pretty": QgsClassificationPrettyBreaks,
}
METHOD_WORDS = {"quantile": "quantile", "equal": "equal-interval", "jenks": "Jenks", "pretty": "pretty"}


@dataclass(frozen=True)
class ClassRange:
    lower: float
    upper: float

    @property
    def label(self) -> str:
        return f"{plain_number(self.lower)} - {plain_number(self.upper)}"


def method_object(method: str) -> QgsClassificationMethod:
    """A new QGIS classification method for ``method`` (the renderer keeps it, so the panel shows the mode)."""
    return GRADUATED[method]()


def class_ranges(method: str, values: list[float], classes: int) -> list[ClassRange]:
    """The class ranges of ``values`` (at least one value) by ``method``, lowest first."""
    if method == "jenks":
        uppers = jenks_breaks(values, classes)
        lowers = [min(values), *uppers[:-1]]
        return [ClassRange(low, high) for low, high in zip(lowers, uppers, strict=True)]
    return [ClassRange(r.lowerBound(), r.upperBound()) for r in method_object(method).classes(values, classes)]


def jenks_breaks(values: list[float], classes: int) -> list[float]:
    """The upper bound of each Jenks natural-breaks class (the last is the maximum)."""
    import numpy as np

    data = np.sort(np.asarray(values, dtype=float))
    if data.size > JENKS_MAX_VALUES:
        data = np.quantile(data, np.linspace(0.0, 1.0, JENKS_MAX_VALUES))
    distinct = np.unique(data)
    classes = max(1, min(classes, distinct.size))
    if classes == distinct.size:
        return [float(v) for v in distinct]
    n = data.size
    s1 = np.concatenate(([0.0], np.cumsum(data)))
    s2 = np.concatenate(([0.0], np.cumsum(data * data)))

    def ssd(starts: np.ndarray, end: int) -> np.ndarray:
        """Squared deviations of data[start..end] (inclusive) for each start."""
        count = end - starts + 1
        total = s1[end + 1] - s1[starts]
        deviations: np.ndarray = (s2[end + 1] - s2[starts]) - total * total / count
        return deviations

    ends = np.arange(n)
    cost = s2[1:] - s1[1:] * s1[1:] / (ends + 1)  # one class: data[0..end]
    back = np.zeros((classes, n), dtype=int)
    for k in range(1, classes):
        new = np.full(n, np.inf)
        for end in range(k, n):
            starts = np.arange(k, end + 1)
            total = cost[starts - 1] + ssd(starts, end)
            best = int(np.argmin(total))
            new[end] = total[best]
            back[k, end] = starts[best]
        cost = new
    uppers = []
    end = n - 1
    for k in range(classes - 1, 0, -1):
        uppers.append(float(data[end]))
        end = back[k, end] - 1
    uppers.append(float(data[end]))
    return sorted(uppers)


def describe_ranges(ranges: list[ClassRange]) -> str:
    """``6,400–8,160, 8,160–10,140, ...`` for the tool's reply."""
    return ", ".join(f"{plain_number(r.lower)}–{plain_number(r.upper)}" for r in ranges)
